"""Text: normalization, the SentencePiece tokenizer in Python (tokenizer) and as TensorFlow ops
(tf_tokenizer), raw text as batches of model inputs in tf.data (batches), vocabulary training (spm_training)
and corpus reading (corpus).

May import: the top-level modules (file_io, file_systems), nothing else of ours. Modules are imported one by
one: normalization, tokenizer and corpus are pure Python, so the pretraining-data builder's worker processes
use them without TensorFlow; tf_tokenizer and batches import TensorFlow and tensorflow-text.
"""
