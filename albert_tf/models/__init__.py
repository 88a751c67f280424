"""ALBERT models: the encoder and the models that put heads on it."""

from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.parameter_counts import parameter_counts
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.sharing import block_schedule

__all__ = ["AlbertEncoder", "AlbertPretrainer", "block_schedule", "parameter_counts"]
