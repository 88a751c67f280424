"""`FeedForwardBlock`: the position-wise feed-forward half of a post-LN transformer block."""

import keras

from albert_tf.layers.activations import get_activation
from albert_tf.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="albert_tf")
class FeedForwardBlock(keras.layers.Layer):
    """`LayerNorm(x + Dropout(Dense_H(act(Dense_I(x)))))`, as `ffn_1` and `LayerNorm_1` of the original.

    Args:
        intermediate_size: int. I, the inner width.
        hidden_act: str, default "gelu" (the tanh approximation). See `albert_tf.config.ACTIVATIONS`.
        hidden_dropout_prob: float, default 0.0. Dropout on the output projection.
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.

    Call args:
        x: float [batch, seq, H].
        dropout_seeds: optional, from `draw_dropout_seeds()`: the mask's seed (default: drawn in the call).

    Returns:
        float [batch, seq, H].

    Example:
        >>> FeedForwardBlock(intermediate_size=19)(keras.ops.ones((2, 7, 14))).shape
        (2, 7, 14)
    """

    def __init__(
        self,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.activation = get_activation(hidden_act)

    def build(self, x_shape):
        # A new initializer object per weight: an unseeded Keras initializer called twice repeats its values.
        # The activation inside the Dense layer, on rows (see call): TensorFlow's CPU graph optimizer then
        # fuses MatMul, BiasAdd and the tanh GELU into one oneDNN kernel when a SavedModel is served. Applied
        # outside, the GELU's nodes are named before the layer's, and Grappler's arithmetic optimizer, which
        # visits nodes in name order, reorders the GELU's products before the fusion can match them.
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_size,
            activation=self.activation,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype=self.dtype_policy,
            name="intermediate_dense",
        )
        self.intermediate_dense.build(x_shape)
        self.output_dense = keras.layers.Dense(
            x_shape[-1],
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype=self.dtype_policy,
            name="output_dense",
        )
        self.output_dense.build((*x_shape[:-1], self.intermediate_size))
        self.output_dropout = Dropout(
            self.hidden_dropout_prob, dtype=self.dtype_policy, name="output_dropout"
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(x_shape)

    def draw_dropout_seeds(self):
        """{dropout layer name: int [2]} for the dropouts that drop (rate > 0): the seeds the next training
        call would draw, drawn now, for a call that must draw the same masks twice (remat)."""
        return {d.name: d.next_seed() for d in (self.output_dropout,) if d.rate > 0}

    def call(self, x, training=None, dropout_seeds=None):
        # On (B*T, H) rows: Keras' Dense multiplies a rank-3 input through tensordot, whose Reshape between
        # MatMul and BiasAdd keeps the fusion above from matching.
        rows = keras.ops.reshape(x, (-1, keras.ops.shape(x)[-1]))
        hidden = self.intermediate_dense(rows)  # (B*T, I), activated
        output = keras.ops.reshape(self.output_dense(hidden), keras.ops.shape(x))
        seed = (dropout_seeds or {}).get("output_dropout")
        return self.layer_norm(x + self.output_dropout(output, training=training, seed=seed))

    def compute_output_shape(self, x_shape):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
