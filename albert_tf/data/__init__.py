"""Text, ids, tf.Example and tf.data: tokenizers, the pretraining-data builder and reader.

Modules are imported one by one (`from albert_tf.data import tokenizer`): the builder's worker processes
import the pure-Python modules only, so they start without TensorFlow.
"""
