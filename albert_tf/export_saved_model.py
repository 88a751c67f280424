"""Exports a model directory as a SavedModel that stock TF Serving loads and feeds from raw text.

    python -m albert_tf.export_saved_model --model_dir=runs/tiny --task=encoder \
        --export_dir=models/albert/1 --max_seq_length=128

`--export_dir` is the version folder TF Serving reads (models/NAME/VERSION). Tasks: encoder and pretraining
use the directory's pretrained weights; classifier, span and multiple_choice its fine-tuned task model
(task_model.keras, written by the fine-tuning commands or `model_dir.save_task_model`). See
albert_tf/serving/export.py for the signatures and export/README.md for serving it.
"""

import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A model directory (albert_config.json, spm.model, weights).")
flags.DEFINE_enum(
    "task", "encoder", ["encoder", "pretraining", "classifier", "span", "multiple_choice"], "What to serve."
)
flags.DEFINE_string("export_dir", None, "The SavedModel directory to create, e.g. models/albert/1.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text (pair); longer input is truncated.")
flags.DEFINE_bool("text_pair", False, "serving_default takes text and text_b (span always does).")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model, if the model directory has none.")
flags.mark_flags_as_required(["model_dir", "export_dir"])


def main(argv):
    del argv
    from albert_tf.models import model_dir
    from albert_tf.serving.export import export_saved_model

    try:
        if FLAGS.task == "encoder":
            model = model_dir.load_encoder(FLAGS.model_dir)
        elif FLAGS.task == "pretraining":
            model = model_dir.load_pretrainer(FLAGS.model_dir)
        else:
            model = model_dir.load_task_model(FLAGS.model_dir)
        spm = FLAGS.spm_model_file or model_dir.spm_model_file(FLAGS.model_dir)
        if not spm:
            raise FileNotFoundError(f"{FLAGS.model_dir} has no spm.model; pass --spm_model_file")
        path = export_saved_model(
            model,
            spm,
            FLAGS.export_dir,
            FLAGS.task,
            max_seq_length=FLAGS.max_seq_length,
            pair=FLAGS.text_pair,
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"export_saved_model: error: {error}", file=sys.stderr)
        return 1
    print(f"export_saved_model: wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    app.run(main)
