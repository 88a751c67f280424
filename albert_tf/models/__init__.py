"""ALBERT models: the encoder, the models that put heads on it, and loading and saving them in model
directories (keras and keras.ops; the directories' files: albert_tf.model_files).

May import: layers and the top-level modules (config, file_io); text only inside the task models' fit,
evaluate and predict when they are given raw strings (tokenization runs in tf.data), so the models themselves
load and run on any Keras backend.
"""

from albert_tf.models import model_dir
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.parameter_counts import parameter_counts
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.sharing import block_schedule
from albert_tf.models.task_models import AlbertClassifier, AlbertMultipleChoice, AlbertSpanLabeler

__all__ = [
    "AlbertClassifier",
    "AlbertEncoder",
    "AlbertMultipleChoice",
    "AlbertPretrainer",
    "AlbertSpanLabeler",
    "block_schedule",
    "model_dir",
    "parameter_counts",
]
