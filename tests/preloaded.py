"""What the fork server of tests/commands.py imports before it forks commands: TensorFlow, started as a
command starts it, and Keras."""

from absl import flags

from albert_tf import tf_startup

tf_startup.import_tensorflow_quietly()
# Back to how a fresh command finds absl's logging (app.run turns INFO on), so that a forked command holds
# TensorFlow's INFO lines back only if it calls tf_startup itself.
flags.FLAGS["verbosity"].unparse()

import keras  # noqa: E402, F401
