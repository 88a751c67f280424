"""`AttentionBlock`: the self-attention half of a post-LN transformer block.

Dimension legend:
    B  batch size
    T  sequence length (queries and keys: this is self-attention)
    H  hidden size
    N  number of attention heads
    D  head size, H // N
"""

import math

import keras
from keras import ops

from albert_tf.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="albert_tf")
class AttentionBlock(keras.layers.Layer):
    """Multi-head self-attention with its output projection, dropout, residual and LayerNorm.

    Computes `LayerNorm(x + Dropout(Dense(MultiHeadAttention(x))))` as the original ALBERT
    (`attention_1` and the first `LayerNorm` of an inner group). Scores are scaled by 1/sqrt(D); padded
    keys receive the additive bias the encoder computes from `input_mask`. The scores and their softmax
    run in float32 under any dtype policy.

    Args:
        num_attention_heads: int. N; must divide the input width H.
        hidden_dropout_prob: float, default 0.0. Dropout on the projected attention output.
        attention_probs_dropout_prob: float, default 0.0. Dropout on the attention probabilities.
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.

    Call args:
        x: float [B, T, H].
        attention_bias: float32 [B, 1, 1, T]; 0 for real keys, -10000 for padding.
        dropout_seeds: optional, from `draw_dropout_seeds()`: the masks' seeds (default: drawn in the call).

    Returns:
        float [B, T, H].

    Example:
        >>> block = AttentionBlock(num_attention_heads=2)
        >>> block(ops.ones((2, 7, 14)), ops.zeros((2, 1, 1, 7))).shape
        (2, 7, 14)
    """

    def __init__(
        self,
        num_attention_heads,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_attention_heads = num_attention_heads
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range

    def build(self, x_shape, attention_bias_shape=None):
        hidden_size = x_shape[-1]
        if hidden_size % self.num_attention_heads:
            raise ValueError(
                f"input width {hidden_size} is not divisible by "
                f"num_attention_heads={self.num_attention_heads}"
            )
        self.head_size = hidden_size // self.num_attention_heads

        def dense(name):
            layer = keras.layers.Dense(
                hidden_size,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
                dtype=self.dtype_policy,
                name=name,
            )
            layer.build(x_shape)
            return layer

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.attention_dropout = Dropout(
            self.attention_probs_dropout_prob, dtype=self.dtype_policy, name="attention_dropout"
        )
        self.output_dropout = Dropout(
            self.hidden_dropout_prob, dtype=self.dtype_policy, name="output_dropout"
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(x_shape)

    def _split_heads(self, x):
        """(B, T, H) -> (B, N, T, D)."""
        batch_size, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch_size, length, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def _attention_probs(self, query, key, attention_bias):
        """Softmax over the keys of query . key + attention_bias, in float32 whatever the compute dtype.

        Args:
            query: float [B, N, T, D], already scaled by 1/sqrt(D).
            key: float [B, N, T, D].
            attention_bias: float32 [B, 1, 1, T].

        Returns:
            float32 [B, N, T, T].

        The scores are the softmax's logits, so they are multiplied in float32 too: a bfloat16 product would
        round them to 8 significant bits (a score near 300 to a multiple of 2) before the softmax sees them,
        and that rounding is what flipped most near-tied span answers of bfloat16 exports (bench/README.md,
        "bfloat16 answers"). The product is under 2% of a layer's arithmetic at 128 tokens.
        """
        scores = ops.matmul(ops.cast(query, "float32"), ops.transpose(ops.cast(key, "float32"), (0, 1, 3, 2)))
        return ops.softmax(scores + ops.cast(attention_bias, "float32"), axis=-1)

    def draw_dropout_seeds(self):
        """{dropout layer name: int [2]} for the dropouts that drop (rate > 0): the seeds the next training
        call would draw, drawn now, for a call that must draw the same masks twice (remat)."""
        return {d.name: d.next_seed() for d in (self.attention_dropout, self.output_dropout) if d.rate > 0}

    def call(self, x, attention_bias, training=None, dropout_seeds=None):
        seeds = dropout_seeds or {}
        batch_size, length = ops.shape(x)[0], ops.shape(x)[1]
        # Scaling the queries costs B*T*H multiplies instead of B*N*T*T on the scores.
        query = self._split_heads(self.query(x) * (1.0 / math.sqrt(self.head_size)))  # (B, N, T, D)
        key = self._split_heads(self.key(x))  # (B, N, T, D)
        value = self._split_heads(self.value(x))  # (B, N, T, D)

        probs = ops.cast(self._attention_probs(query, key, attention_bias), self.compute_dtype)
        probs = self.attention_dropout(probs, training=training, seed=seeds.get("attention_dropout"))

        context = ops.matmul(probs, value)  # (B, N, T, D)
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (batch_size, length, -1))  # (B, T, H)
        attended = self.output_dense(context)
        attended = self.output_dropout(attended, training=training, seed=seeds.get("output_dropout"))
        return self.layer_norm(x + attended)

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_attention_heads=self.num_attention_heads,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
