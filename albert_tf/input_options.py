"""The tf.data options of the toolkit's input pipelines: pretraining records, fine-tuning batches.

Autotuning is off. Its thread sleeps between tunings, the sleep doubling with the iterator's age up to a
minute, and deleting an iterator (the training input when training ends, an evaluation's input when it is
done) cancels that thread and waits for it. In TensorFlow 2.21 the wake-up can be missed when other processes
keep the cores busy, and the deletion then waits out the rest of the sleep (`bench/iterator_teardown.py`).
Without autotuning each `AUTOTUNE` map and interleave runs tf.data's starting parallelism (16 calls, at most
one per core) and a prefetch buffer still grows while the model waits for it; the quick start's examples per
second are the same (bench/README.md, "Iterator teardown"). Under MirroredStrategy the per-device pipelines
TensorFlow adds stay autotuned whatever these options say (measured there).
"""

import tensorflow as tf


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """dataset, its elements unchanged, without tf.data's autotuning thread (see the module docstring)."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
