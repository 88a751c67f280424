"""Training, the same for pretraining and fine-tuning (TensorFlow-specific): the engine (engine.py: steps,
accumulation, checkpoints and resume, evaluation and its history, the best evaluation kept, cluster roles),
the collapse guard and the run's checkpointed state (collapse_guard.py, run_state.py), what a run tells its
user (run_log.py), optimizers (LAMB, AdamW as the original computes them), schedules, distribution
strategies, precision and the checks a cluster's tasks share, replicated updates, float16 loss scaling and
the run's peak memory.

May import: the top-level modules only.
"""
