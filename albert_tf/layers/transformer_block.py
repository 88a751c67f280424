"""`TransformerBlock`: a post-LN transformer block built from an attention and a feed-forward sub-layer."""

import keras

from albert_tf.layers.attention_block import AttentionBlock
from albert_tf.layers.feed_forward_block import FeedForwardBlock


@keras.saving.register_keras_serializable(package="albert_tf")
class TransformerBlock(keras.layers.Layer):
    """Runs `attention` then `feed_forward`: one ALBERT inner group (post-LN, as in BERT).

    The block takes its two sub-layers as built objects rather than hyperparameters so that blocks can
    share one of them: the paper's shared-attention model gives every layer its own `TransformerBlock`
    holding the same `AttentionBlock` object. Sharing is always object reuse, never copying.

    Args:
        attention: `AttentionBlock`.
        feed_forward: `FeedForwardBlock`.

    Call args:
        x: float [batch, seq, H].
        attention_bias: float32 [batch, 1, 1, seq]; 0 for real keys, -10000 for padding.

    Returns:
        float [batch, seq, H].

    Example:
        >>> block = TransformerBlock(AttentionBlock(2), FeedForwardBlock(19))
        >>> block(keras.ops.ones((2, 7, 14)), keras.ops.zeros((2, 1, 1, 7))).shape
        (2, 7, 14)
    """

    def __init__(self, attention: AttentionBlock, feed_forward: FeedForwardBlock, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention
        self.feed_forward = feed_forward

    def build(self, x_shape, attention_bias_shape=None):
        if not self.attention.built:
            self.attention.build(x_shape, attention_bias_shape)
        if not self.feed_forward.built:
            self.feed_forward.build(x_shape)

    def call(self, x, attention_bias, training=None):
        x = self.attention(x, attention_bias, training=training)
        return self.feed_forward(x, training=training)

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        # The sub-layers themselves: Keras serializes them where the whole config is serialized, in one
        # sharing scope, so an AttentionBlock two blocks share is marked shared in both configs and reloads
        # as one layer. Configs serialized here would be copied before the second block marks the first.
        config.update(attention=self.attention, feed_forward=self.feed_forward)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["attention"] = keras.saving.deserialize_keras_object(config["attention"])
        config["feed_forward"] = keras.saving.deserialize_keras_object(config["feed_forward"])
        return cls(**config)
