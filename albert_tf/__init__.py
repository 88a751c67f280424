"""albert_tf: ALBERT for TensorFlow 2 / Keras 3: pretraining, fine-tuning and serving."""

__version__ = "0.1.0"
