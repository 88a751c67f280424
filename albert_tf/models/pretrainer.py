"""`AlbertPretrainer`: an encoder with the masked-LM and sentence-order heads."""

import keras

from albert_tf.features import ENCODER_INPUTS, PRETRAINER_INPUTS
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.layers.sentence_order_head import SentenceOrderHead
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.head_model import HeadModel


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(HeadModel):
    """ALBERT's pretraining model: masked-LM logits and sentence-order logits from a built encoder.

    The masked-LM head scores against the encoder's own word-embedding table (weight tying). The
    sentence-order head is a 2-way classifier on the pooled output; trained on random-document pairs it
    is BERT's next-sentence head. Losses live in `albert_tf.training`.

    Args:
        encoder: a built `AlbertEncoder`.

    Inputs (a dict): the encoder's three inputs, and
        masked_lm_positions: int32 [batch, predictions], positions to predict.

    Outputs (a dict):
        mlm_logits: float32 [batch, predictions, vocab_size].
        sop_logits: float32 [batch, 2].

    Example:
        >>> config = AlbertConfig.from_json_file("albert_tf/configs/albert_tiny.json")
        >>> pretrainer = AlbertPretrainer(AlbertEncoder(config))
        >>> ids = keras.ops.ones((2, 7), "int32")
        >>> features = {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}
        >>> pretrainer({**features, "masked_lm_positions": ids[:, :3]})["mlm_logits"].shape
        (2, 3, 8000)
    """

    def __init__(self, encoder: AlbertEncoder, **kwargs):
        config = encoder.config
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PRETRAINER_INPUTS}
        encoded = encoder({name: inputs[name] for name in ENCODER_INPUTS})
        masked_lm = MaskedLMHead(
            encoder.embeddings.word_embeddings,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            dtype=encoder.dtype_policy,
            name="masked_lm",
        )
        sentence_order = SentenceOrderHead(
            initializer_range=config.initializer_range, dtype=encoder.dtype_policy, name="sentence_order"
        )
        outputs = {
            "mlm_logits": masked_lm(encoded["sequence_output"], inputs["masked_lm_positions"]),
            "sop_logits": sentence_order(encoded["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self.masked_lm = masked_lm
        self.sentence_order = sentence_order
