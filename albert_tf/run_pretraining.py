"""Pretrains ALBERT (masked LM + sentence order) on TFRecords from `create_pretraining_data`.

    python -m albert_tf.run_pretraining --flagfile=tiny

The same flagfile runs on one CPU, the GPUs of a host (--strategy=mirrored), several hosts
(--strategy=multi_worker_mirrored with TF_CONFIG set on each) or a TPU (--strategy=tpu --tpu=NAME). A run
killed and started again with the same flags resumes from its last checkpoint in --output_dir. See
albert_tf/pretraining/run.py for what the run writes.
"""

import dataclasses
import sys

from absl import app, flags

from albert_tf import shipped, tf_startup
from albert_tf.pretraining.settings import CHOICES, HELP, REQUIRED, PretrainingSettings

FLAGS = flags.FLAGS
_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float}
for _field in dataclasses.fields(PretrainingSettings):
    _default = None if _field.default is dataclasses.MISSING else _field.default
    if _field.name in CHOICES:
        flags.DEFINE_enum(_field.name, _default, list(CHOICES[_field.name]), HELP[_field.name])
    else:
        _DEFINE.get(type(_default), flags.DEFINE_string)(_field.name, _default, HELP[_field.name])
flags.mark_flags_as_required(list(REQUIRED))
# The fine-tuning commands' names (the original's) for the steps. As any absl flag given twice, the last of
# either spelling wins, so a recipe's steps can be overridden under either name.
flags.DEFINE_alias("train_step", "num_train_steps")
flags.DEFINE_alias("warmup_step", "num_warmup_steps")


def main(argv):
    del argv
    fields = [field.name for field in dataclasses.fields(PretrainingSettings)]
    try:  # before TensorFlow starts: a flag that cannot work is named at once
        settings = PretrainingSettings(**{name: shipped.resolve(name, FLAGS[name].value) for name in fields})
        settings.check()
    except ValueError as error:
        if FLAGS.strategy == "multi_worker_mirrored":  # the cluster's other tasks are told first
            tf_startup.import_tensorflow_quietly()
            from albert_tf.training import distribution

            distribution.tell_the_cluster(FLAGS.strategy, FLAGS.tpu, error)
        print(f"run_pretraining: error: {error}", file=sys.stderr)
        return 1
    tf_startup.import_tensorflow_quietly()  # before anything imports TensorFlow
    from albert_tf import file_io
    from albert_tf.pretraining.run import TrainingError, run

    try:
        run(settings)
    except (ValueError, FileNotFoundError, TrainingError, file_io.DiskFullError) as error:
        print(f"run_pretraining: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    app.run(main, argv=shipped.expand_recipe_names(sys.argv, "run_pretraining"))
