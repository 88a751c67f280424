"""Exports a model directory as a LiteRT (TFLite) file that takes raw text, for phones and embedded devices.

    python -m albert_tf.export_litert --model_dir=runs/glue/sst2 --task=classifier \
        --output=sst2.tflite --quantize=dynamic_int8

Tasks: encoder (the directory's pretrained weights), classifier and multiple_choice (its fine-tuned task
model, task_model.keras, which tokenizes as it was fine-tuned: its sequence length, pairing and casing come
from the model, and a flag that contradicts them is refused). Span and pretraining models are not offered
(the error says why). The file answers as the SavedModel's serving_default does; it is loaded in LiteRT's
interpreter and run before it is written. See albert_tf/serving/litert.py and docs/serving.md, "On a device
(LiteRT)".
"""

import sys

from absl import app, flags

from albert_tf import file_io, model_files, tf_startup

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model_dir", None,
    "A model directory (albert_config.json, spm.model, weights; tokenizer.json says whether its text is "
    "lowercased: the file tokenizes as the model was trained).",
)  # fmt: skip
flags.DEFINE_enum(
    "task", "encoder", ["encoder", "classifier", "multiple_choice", "span", "pretraining"],
    "What the file serves: encoder, classifier or multiple_choice (span and pretraining are refused, saying "
    "why).",
)  # fmt: skip
flags.DEFINE_string("output", None, "The .tflite file to write (replaced if it exists).")
flags.DEFINE_enum(
    "quantize", "none", ["none", "float16", "dynamic_int8"],
    "none: float32 weights; float16: weights stored in float16 (about half the size); dynamic_int8: weights "
    "in int8 and matrix products in int8 (about a quarter of the size, faster on CPUs; answers move a "
    "little: check the labels on your dev set).",
)  # fmt: skip
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "Tokens per text (pair); longer input is truncated, every row padded to it. Task models: the length they "
    "were fine-tuned at, which this may only repeat; encoder: default 128.",
)
flags.DEFINE_bool(
    "text_pair",
    None,
    "The file takes text and text_b. Task models: as they were fine-tuned (multiple_choice always takes a "
    "passage and choices); encoder: default false.",
)
flags.mark_flags_as_required(["model_dir", "output"])


def main(argv):
    del argv
    tf_startup.import_tensorflow_quietly()
    from albert_tf.models import model_dir
    from albert_tf.serving.litert import NOT_OFFERED, export_litert

    if FLAGS.task in NOT_OFFERED:  # before the model loads
        print(f"export_litert: error: --task={FLAGS.task} is not offered: {NOT_OFFERED[FLAGS.task]}",
              file=sys.stderr)  # fmt: skip
        return 1

    try:
        FLAGS.model_dir = model_files.resolve(FLAGS.model_dir)  # a sweep's folder: its chosen run
        spm = model_files.spm_model_file(FLAGS.model_dir)
        if not spm:
            raise FileNotFoundError(f"{FLAGS.model_dir} has no spm.model, which the file tokenizes with")
        encoder = FLAGS.task == "encoder"
        load = model_dir.load_encoder if encoder else model_dir.load_task_model
        model = load(FLAGS.model_dir)
        path = export_litert(
            model,
            spm,
            FLAGS.output,
            FLAGS.task,
            max_seq_length=FLAGS.max_seq_length,
            pair=FLAGS.text_pair,
            # The directory's casing for the pretrained encoder; a task model keeps its own.
            do_lower_case=model_files.do_lower_case(FLAGS.model_dir) if encoder else None,
            keep_accents=model_files.keep_accents(FLAGS.model_dir) if encoder else None,
            quantize=FLAGS.quantize,
        )
    except (ValueError, FileNotFoundError, ImportError, file_io.DiskFullError) as error:
        print(f"export_litert: error: {error}", file=sys.stderr)
        return 1
    print(f"export_litert: wrote {path} ({file_io.size(path):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    app.run(main)
