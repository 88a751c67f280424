"""`MaskedLMHead`: predicts the tokens at masked positions with logits tied to the word embeddings."""

import keras
from keras import ops

from albert_tf.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Gathers masked positions, transforms H→E, and scores them against the word-embedding table.

    `logits = LayerNorm(act(Dense_E(gather(x, positions)))) · word_embeddingsᵀ + bias`, the original's
    `cls/predictions` head. The output-side table is the encoder's input table (weight tying), so the
    head owns only the transform and a [V] bias. Logits are float32 under any dtype policy.

    Args:
        token_embedding: `keras.layers.Embedding`, the encoder's [V, E] word embeddings. Not part of
            `get_config`: the model that owns both passes it again when it is rebuilt.
        hidden_act: str, default "gelu" (the tanh approximation).
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.

    Call args:
        sequence_output: float [batch, seq, H].
        masked_lm_positions: int32 [batch, predictions], indices into `seq`.

    Returns:
        float32 [batch, predictions, V].

    Example:
        >>> table = keras.layers.Embedding(97, 5)
        >>> table.build((None,))
        >>> head = MaskedLMHead(table)
        >>> head(ops.ones((2, 7, 14)), ops.zeros((2, 3), "int32")).shape
        (2, 3, 97)
    """

    def __init__(self, token_embedding, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.activation = get_activation(hidden_act)

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        vocab_size, embedding_size = self.token_embedding.input_dim, self.token_embedding.output_dim
        self.transform_dense = keras.layers.Dense(
            embedding_size,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_dense.build(sequence_output_shape)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build((*sequence_output_shape[:-1], embedding_size))
        # float32 and not autocast: the bias is added to float32 logits at full precision under any
        # policy (also "bfloat16", whose other weights are stored in bfloat16).
        self.output_bias = self.add_weight(
            shape=(vocab_size,), initializer="zeros", dtype="float32", autocast=False, name="output_bias"
        )

    def call(self, sequence_output, masked_lm_positions):
        positions = ops.cast(masked_lm_positions, "int32")[:, :, None]  # (B, P, 1)
        gathered = ops.take_along_axis(sequence_output, positions, axis=1)  # (B, P, H)
        x = self.layer_norm(self.activation(self.transform_dense(gathered)))  # (B, P, E)
        return self._logits(x, self.token_embedding.embeddings) + self.output_bias

    def _logits(self, x, table):
        """x [B, P, E] · table [V, E]ᵀ, multiplied in float32 whatever the compute dtype: a bfloat16
        product would round each logit to 8 significant bits (301 to 300), which reorders near-tied
        predictions. Returns float32 [B, P, V]."""
        return ops.matmul(ops.cast(x, "float32"), ops.transpose(ops.cast(table, "float32")))

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape):
        return (*masked_lm_positions_shape, self.token_embedding.input_dim)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_act=self.hidden_act, initializer_range=self.initializer_range)
        return config
