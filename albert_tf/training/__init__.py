"""Training: optimizers, schedules, losses, distribution and the pretraining loop (TensorFlow-specific)."""
