"""Pretraining: building MLM + SOP records (data/) and the run that trains on them.

data/: corpus → instances → shuffled TFRecord shards and a manifest (pure Python). The run (run.py: what
`run_pretraining` does) reads records with dataset.py (tf.data) through input.py (which records, where a
resumed run starts), takes its flags from settings.py, and is trained by the training engine
(albert_tf/training/engine.py) as task.py describes it (model, optimizer, losses), evaluated by
evaluator.py; losses.py holds the MLM + SOP losses and metrics.

May import: text, training, models, layers, checkpoints (run.py, for --init_checkpoint) and the top-level
modules.
"""
