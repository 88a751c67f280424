"""What a run tells its user: progress lines on stderr and TensorBoard summaries (the chief's only)."""

import sys

import tensorflow as tf

from albert_tf import file_io


class RunLog:
    """Lines prefixed with the entry point's name, and scalars under output_dir/<kind>/ (train, eval).

    Args:
      name: the entry point (e.g. "run_pretraining").
      output_dir: where the TensorBoard event files go (any TensorFlow file system).
      enabled: False on workers other than the chief: they say and write nothing.
    """

    def __init__(self, name, output_dir, enabled):
        self.name = name
        self.output_dir = output_dir
        self.enabled = enabled
        self._writers = {}

    def line(self, text):
        if self.enabled:
            print(f"{self.name}: {text}", file=sys.stderr, flush=True)

    def scalars(self, kind, values, step):
        if not self.enabled:
            return
        folder = file_io.join(self.output_dir, kind)
        with file_io.disk_full_named(folder):
            if kind not in self._writers:
                self._writers[kind] = tf.summary.create_file_writer(folder)
            with self._writers[kind].as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(name, value)
            self._writers[kind].flush()

    def summary_folders(self):
        """The TensorBoard folders written so far."""
        return sorted(self._writers)


def duration(seconds):
    """h:mm:ss"""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
