"""Training, the same for pretraining and fine-tuning (TensorFlow-specific): the engine (engine.py: steps,
accumulation, checkpoints and resume, evaluation and its history, the best evaluation kept, cluster roles),
what a run tells its user (run_log.py), optimizers (LAMB, AdamW as the original computes them), schedules,
distribution strategies and precision, replicated updates, float16 loss scaling and the run's peak memory.

May import: the top-level modules only.
"""
