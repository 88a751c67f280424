"""What the pretraining and fine-tuning loops share (TensorFlow-specific): optimizers (LAMB, AdamW as the
original computes them), schedules, distribution strategies and precision, replicated updates and float16
loss scaling.

May import: the top-level modules only.
"""
