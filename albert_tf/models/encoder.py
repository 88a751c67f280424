"""`AlbertEncoder`: the ALBERT network, with every cross-layer sharing layout."""

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.features import ENCODER_INPUTS
from albert_tf.layers.attention_block import AttentionBlock
from albert_tf.layers.embeddings import AlbertEmbedding
from albert_tf.layers.feed_forward_block import FeedForwardBlock
from albert_tf.layers.transformer_block import TransformerBlock
from albert_tf.models.sharing import block_schedule


def _attention_bias(input_mask):
    """int [B, T] mask (1 = real token) -> float32 [B, 1, 1, T] additive bias (0 or -10000)."""
    return (1.0 - ops.cast(input_mask, "float32"))[:, None, None, :] * -10000.0


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEncoder(keras.Model):
    """The ALBERT encoder: factorized embeddings, then shared transformer blocks, then a pooler.

    Lan et al. 2020, "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations".
    Which blocks share weights follows `config` (see `albert_tf.models.sharing.block_schedule`); a shared
    block is one layer object called again, so the weight count of an all-shared encoder does not grow
    with depth. Sequence length is dynamic, up to `max_position_embeddings`.

    Args:
        config: `AlbertConfig`, or a dict of its keys.
        dtype: optional dtype policy for every layer (default: the global policy, e.g. "mixed_bfloat16").
        remat: bool, default False. Recompute each layer's activations in the backward pass instead of
            keeping them (see `TransformerBlock`); the `remat` attribute changes it on a built encoder,
            before the model's training step is traced (before `fit`).

    Inputs (a dict):
        input_word_ids: int32 [batch, seq].
        input_mask: int32 [batch, seq], 1 for real tokens, 0 for padding.
        input_type_ids: int32 [batch, seq], segment ids.

    Outputs (a dict):
        sequence_output: float [batch, seq, H], the last layer.
        pooled_output: float [batch, H], tanh(Dense(first token)).
        encoder_outputs: list of `num_hidden_layers` float [batch, seq, H], each layer's output.

    Example:
        >>> encoder = AlbertEncoder(AlbertConfig.from_json_file("albert_tf/configs/albert_tiny.json"))
        >>> ids = keras.ops.ones((2, 7), "int32")
        >>> out = encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids})
        >>> out["pooled_output"].shape
        (2, 128)
    """

    def __init__(self, config, dtype=None, remat=False, **kwargs):
        if not isinstance(config, AlbertConfig):
            config = AlbertConfig.from_dict(config)
        initializer_range = config.initializer_range

        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in ENCODER_INPUTS}
        embeddings = AlbertEmbedding(
            vocab_size=config.vocab_size,
            embedding_size=config.embedding_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            use_projection=config.uses_embedding_projection,
            hidden_dropout_prob=config.hidden_dropout_prob,
            initializer_range=initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        schedule = block_schedule(config)
        attention_blocks = [
            AttentionBlock(
                config.num_attention_heads,
                hidden_dropout_prob=config.hidden_dropout_prob,
                attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"attention_{index}",
            )
            for index in range(1 + max(a for a, _ in schedule))
        ]
        feed_forward_blocks = [
            FeedForwardBlock(
                config.intermediate_size,
                hidden_act=config.hidden_act,
                hidden_dropout_prob=config.hidden_dropout_prob,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"feed_forward_{index}",
            )
            for index in range(1 + max(f for _, f in schedule))
        ]
        # One TransformerBlock per distinct (attention, feed-forward) pair, called wherever it recurs.
        blocks = {}
        for a, f in schedule:
            if (a, f) not in blocks:
                blocks[a, f] = TransformerBlock(
                    attention_blocks[a],
                    feed_forward_blocks[f],
                    remat=remat,
                    dtype=dtype,
                    name=f"block_{a}_{f}",
                )
        pooler = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=dtype,
            name="pooler",
        )

        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])  # (B, T, H)
        attention_bias = _attention_bias(inputs["input_mask"])  # (B, 1, 1, T)
        encoder_outputs = []
        for position, (a, f) in enumerate(schedule):
            x = blocks[a, f](x, attention_bias)
            if (position + 1) % config.inner_group_num == 0:
                encoder_outputs.append(x)
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler(x[:, 0, :]),
            "encoder_outputs": encoder_outputs,
        }
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        self.config = config
        self.schedule = schedule
        self.embeddings = embeddings
        self.attention_blocks = attention_blocks
        self.feed_forward_blocks = feed_forward_blocks
        self.blocks = list(blocks.values())
        self.pooler = pooler

    @property
    def remat(self):
        """Whether training calls recompute each layer's activations in the backward pass."""
        return self.blocks[0].remat

    @remat.setter
    def remat(self, value):
        for block in self.blocks:
            block.remat = bool(value)

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "config": self.config.to_dict()}
        if self.remat:
            config["remat"] = True
        if self.dtype_policy.name != keras.config.dtype_policy().name:
            config["dtype"] = self.dtype_policy.name
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
