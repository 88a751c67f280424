"""Text: normalization, the SentencePiece tokenizer in Python (tokenizer) and as TensorFlow ops
(tf_tokenizer), raw text as batches of model inputs in tf.data (batches), questions and contexts as span
windows and span logits as answers (span_windows, span_decoding, span_answers), vocabulary training
(spm_training) and corpus reading (corpus).

May import: the top-level modules (file_io, file_systems), nothing else of ours. Modules are imported one by
one: normalization, tokenizer and corpus are pure Python, so the pretraining-data builder's worker processes
use them without TensorFlow; tf_tokenizer, batches and the span modules import TensorFlow.
"""
