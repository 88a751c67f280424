"""Pretraining: building MLM + SOP records (data/) and the run that trains on them.

data/: corpus → instances → shuffled TFRecord shards and a manifest (pure Python). The run (run.py: what
`run_pretraining` does) reads records with dataset.py (tf.data) through input.py (which records, where a
resumed run starts), takes its flags from settings.py, steps with trainer.py, drives steps, checkpoints and
evaluations with controller.py, evaluates with evaluator.py, and reports with run_log.py; losses.py holds
the MLM + SOP losses and metrics.

May import: text, training, models, layers, checkpoints (run.py, for --init_checkpoint) and the top-level
modules.
"""
