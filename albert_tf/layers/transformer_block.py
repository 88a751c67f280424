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

    With `remat=True` a training call keeps only its input for the backward pass and runs the block
    again there (rematerialization, `keras.remat`): the activations inside a block (the attention
    probabilities, [B, N, T, T], are the largest) are held for one block at a time instead of one per
    layer, for about one more forward pass of compute. Each dropout's seed is drawn once, before the
    recomputed part, so the second run drops the same units and the gradients equal those without remat.

    Args:
        attention: `AttentionBlock`.
        feed_forward: `FeedForwardBlock`.
        remat: bool, default False. Recompute the block's activations in the backward pass.

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

    def __init__(self, attention: AttentionBlock, feed_forward: FeedForwardBlock, remat=False, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention
        self.feed_forward = feed_forward
        self.remat = remat

    def build(self, x_shape, attention_bias_shape=None):
        if not self.attention.built:
            self.attention.build(x_shape, attention_bias_shape)
        if not self.feed_forward.built:
            self.feed_forward.build(x_shape)

    def call(self, x, attention_bias, training=None):
        if not (training and self.remat):
            return self._run(x, attention_bias, training)
        # Drawn here, outside the recomputed function: drawn inside, the recomputation would advance the
        # generators and draw other masks. Passed as positional tensors (what tf.recompute_grad takes).
        attention_seeds = self.attention.draw_dropout_seeds()
        feed_forward_seeds = self.feed_forward.draw_dropout_seeds()
        split = len(attention_seeds)

        def run(x, attention_bias, *seeds):
            return self._run(
                x,
                attention_bias,
                training,
                dict(zip(attention_seeds, seeds[:split], strict=True)),
                dict(zip(feed_forward_seeds, seeds[split:], strict=True)),
            )

        seeds = (*attention_seeds.values(), *feed_forward_seeds.values())
        return keras.remat(run)(x, attention_bias, *seeds)

    def _run(self, x, attention_bias, training, attention_seeds=None, feed_forward_seeds=None):
        x = self.attention(x, attention_bias, training=training, dropout_seeds=attention_seeds)
        return self.feed_forward(x, training=training, dropout_seeds=feed_forward_seeds)

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        # The sub-layers themselves: Keras serializes them where the whole config is serialized, in one
        # sharing scope, so an AttentionBlock two blocks share is marked shared in both configs and reloads
        # as one layer. Configs serialized here would be copied before the second block marks the first.
        config.update(attention=self.attention, feed_forward=self.feed_forward, remat=self.remat)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["attention"] = keras.saving.deserialize_keras_object(config["attention"])
        config["feed_forward"] = keras.saving.deserialize_keras_object(config["feed_forward"])
        return cls(**config)
