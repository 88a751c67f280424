"""albert_tf: ALBERT for TensorFlow 2 / Keras 3: pretraining, fine-tuning and serving."""

import os
import sys

__version__ = "0.1.0"

# CPU defaults (bench/train_step.py measures them; bench/README.md). TensorFlow leaves oneDNN off on CPUs
# without AVX-512, where it speeds up training too. The switch is read when TensorFlow is
# imported, so it only applies when albert_tf comes first (as in every albert_tf command); a value the user
# set is kept.
if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
