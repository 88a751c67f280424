"""Keras layers of ALBERT (keras and keras.ops only).

May import: config, nothing else of ours.
"""

from albert_tf.layers.attention_block import AttentionBlock
from albert_tf.layers.embeddings import AlbertEmbedding
from albert_tf.layers.feed_forward_block import FeedForwardBlock
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.layers.sentence_order_head import SentenceOrderHead
from albert_tf.layers.transformer_block import TransformerBlock

__all__ = [
    "AlbertEmbedding",
    "AttentionBlock",
    "FeedForwardBlock",
    "MaskedLMHead",
    "SentenceOrderHead",
    "TransformerBlock",
]
