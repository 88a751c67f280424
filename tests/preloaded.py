"""What the fork server of tests/commands.py imports before it forks commands: TensorFlow, started as a
command starts it, and Keras."""

from albert_tf import tf_startup

tf_startup.import_tensorflow_quietly()

import keras  # noqa: E402, F401
