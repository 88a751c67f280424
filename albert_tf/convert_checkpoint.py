"""Converts checkpoints: Google's TF1 ALBERT releases or Hugging Face ALBERT directories into a model
directory, and a model directory into a Hugging Face directory.

    python -m albert_tf.convert_checkpoint --source=tf1 --input=albert_base_v2 --output_dir=models/base
    python -m albert_tf.convert_checkpoint --source=hf --input=hf/albert-base-v2 --output_dir=models/base
    python -m albert_tf.convert_checkpoint --target=hf --input=models/base --output_dir=hf/ours

`--input` for tf1 is a release directory (albert_config.json, model.ckpt-*, 30k-clean.model) or a checkpoint
prefix (with --albert_config_file when the config is elsewhere). What was not converted is printed.
"""

import sys

from absl import app, flags

from albert_tf import file_io, tf_startup

FLAGS = flags.FLAGS
flags.DEFINE_enum("source", None, ["tf1", "hf"], "Format of --input when converting into a model directory.")
flags.DEFINE_enum("target", None, ["hf"], "Convert the model directory --input into this format instead.")
flags.DEFINE_string("input", None, "Release directory, checkpoint prefix, Hugging Face or model directory.")
flags.DEFINE_string("output_dir", None, "Directory to create; it must not exist yet.")
flags.DEFINE_string("albert_config_file", None, "tf1: the config, when it is not next to the checkpoint.")
flags.DEFINE_string("spm_model_file", None, "tf1: the SentencePiece model, when it is not next to it.")
flags.mark_flags_as_required(["input", "output_dir"])


def main(argv):
    del argv
    tf_startup.import_tensorflow_quietly()
    if (FLAGS.source is None) == (FLAGS.target is None):
        print(
            "convert_checkpoint: error: give exactly one of --source=tf1|hf and --target=hf", file=sys.stderr
        )
        return 2
    from albert_tf.checkpoints import convert

    try:
        if FLAGS.target == "hf":
            convert.to_hf(FLAGS.input, FLAGS.output_dir)
            print(f"convert_checkpoint: wrote the Hugging Face directory {FLAGS.output_dir}", file=sys.stderr)
            return 0
        if FLAGS.source == "tf1":
            conversion = convert.from_tf1(FLAGS.input, FLAGS.albert_config_file, FLAGS.spm_model_file)
        else:
            conversion = convert.from_hf(FLAGS.input)
        convert.write_model_dir(conversion, FLAGS.output_dir)
    except (convert.ConversionError, FileNotFoundError, ValueError, file_io.DiskFullError) as error:
        print(f"convert_checkpoint: error: {error}", file=sys.stderr)
        return 1
    for note in conversion.notes:
        print(f"convert_checkpoint: note: {note}", file=sys.stderr)
    heads = ", ".join(f"{name} {list(value.shape)}" for name, value in conversion.task_heads.items())
    if heads:
        print(f"convert_checkpoint: task heads kept in {convert.TASK_HEADS_FILE}: {heads}", file=sys.stderr)
    print(f"convert_checkpoint: wrote the model directory {FLAGS.output_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    app.run(main)
