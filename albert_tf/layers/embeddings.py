"""`AlbertEmbedding`: ALBERT's factorized embedding parameterization."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbedding(keras.layers.Layer):
    """Word + position + segment embeddings of width E, normalized, then projected to H.

    The factorization (Lan et al. 2020, section 3.1) keeps the vocabulary table at [V, E] with E much
    smaller than H; a dense E→H projection (`embedding_hidden_mapping_in` in the original checkpoints)
    lifts the result to the transformer width. With `use_projection=False` (BERT, where E = H) the
    projection is absent.

    Args:
        vocab_size: int. V.
        embedding_size: int. E.
        hidden_size: int. H, the output width when `use_projection` is True.
        max_position_embeddings: int. Rows of the position table; the longest accepted sequence.
        type_vocab_size: int. Rows of the segment table.
        use_projection: bool. Whether to project E→H; must be True when E ≠ H.
        hidden_dropout_prob: float, default 0.0. Dropout after the LayerNorm.
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.

    Call args:
        input_word_ids: int32 [batch, seq].
        input_type_ids: int32 [batch, seq].

    Returns:
        float [batch, seq, H] (or [batch, seq, E] without the projection).

    Example:
        >>> layer = AlbertEmbedding(97, 5, 14, 16, 2, use_projection=True)
        >>> layer(ops.ones((2, 7), "int32"), ops.zeros((2, 7), "int32")).shape
        (2, 7, 14)
    """

    def __init__(
        self,
        vocab_size,
        embedding_size,
        hidden_size,
        max_position_embeddings,
        type_vocab_size,
        use_projection,
        hidden_dropout_prob=0.0,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not use_projection and embedding_size != hidden_size:
            raise ValueError(
                f"use_projection=False needs embedding_size == hidden_size, "
                f"got embedding_size={embedding_size}, hidden_size={hidden_size}"
            )
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.use_projection = use_projection
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range

        # A new initializer object per weight, as everywhere in the model: an unseeded Keras initializer
        # called twice draws the same values (a shared one started the token-type table and the projection
        # as copies of the word table).
        self.word_embeddings = keras.layers.Embedding(
            vocab_size,
            embedding_size,
            embeddings_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="word_embeddings",
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size,
            embedding_size,
            embeddings_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="token_type_embeddings",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(hidden_dropout_prob, dtype=self.dtype_policy, name="dropout")
        self.projection = (
            keras.layers.Dense(
                hidden_size,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                dtype=self.dtype_policy,
                name="embedding_hidden_mapping_in",
            )
            if use_projection
            else None
        )

    def build(self, input_word_ids_shape, input_type_ids_shape=None):
        self.word_embeddings.build(input_word_ids_shape)
        self.token_type_embeddings.build(input_word_ids_shape)
        # A bare weight, not an Embedding layer: positions are a slice, never a gather.
        self.position_embeddings = self.add_weight(
            shape=(self.max_position_embeddings, self.embedding_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            name="position_embeddings",
        )
        self.layer_norm.build((*input_word_ids_shape, self.embedding_size))
        if self.projection is not None:
            self.projection.build((*input_word_ids_shape, self.embedding_size))

    def call(self, input_word_ids, input_type_ids, training=None):
        static_length = input_word_ids.shape[1]
        if static_length is not None and static_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {static_length} is longer than "
                f"max_position_embeddings={self.max_position_embeddings}"
            )
        length = ops.shape(input_word_ids)[1]
        positions = ops.cast(self.position_embeddings[:length], self.compute_dtype)  # (T, E)
        x = self.word_embeddings(input_word_ids) + self.token_type_embeddings(input_type_ids)
        x = self.layer_norm(x + positions[None])
        x = self.dropout(x, training=training)
        if self.projection is not None:
            x = self.projection(x)
        return x

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        width = self.hidden_size if self.use_projection else self.embedding_size
        return (*input_word_ids_shape, width)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_size=self.embedding_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            use_projection=self.use_projection,
            hidden_dropout_prob=self.hidden_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
