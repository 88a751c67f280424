"""Fine-tuning models: an encoder with a task head, returning logits.

- `AlbertClassifier`: sequence classification, or regression with `num_classes=1` (GLUE).
- `AlbertSpanLabeler`: answer-span start/end logits (SQuAD v1.1), plus an answerability logit (v2.0).
- `AlbertMultipleChoice`: one score per choice (RACE).

As the original fine-tuning code: dropout 0.1 on the pooled output before the classifier, heads initialized
from a truncated normal of stddev `initializer_range`. Logits are float32 under mixed precision. Each
works with compile / fit / evaluate / predict and loads a pretrained model directory with
`from_model_dir(directory, ...)`.
"""

import keras
from keras import ops

from albert_tf.features import ENCODER_INPUTS
from albert_tf.models import model_dir
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.head_model import HeadModel

# Added to span logits at padding: no softmax or top-k over a row picks a padded position.
PADDING_LOGIT = -10000.0


def _inputs(shape=(None,)):
    return {name: keras.Input(shape=shape, dtype="int32", name=name) for name in ENCODER_INPUTS}


def _dense(units, encoder, name):
    return keras.layers.Dense(
        units,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=encoder.config.initializer_range),
        dtype="float32",  # logits in float32, also under a mixed policy
        name=name,
    )


@keras.saving.register_keras_serializable(package="albert_tf")
class MergeChoices(keras.layers.Layer):
    """int [batch, choices, seq] → [batch * choices, seq] (sequence length known only at run time)."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, shape):
        return (None, shape[-1])


@keras.saving.register_keras_serializable(package="albert_tf")
class SplitChoices(keras.layers.Layer):
    """float [batch * choices, 1] → [batch, choices]."""

    def __init__(self, num_choices, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices

    def call(self, x):
        return ops.reshape(x, (-1, self.num_choices))

    def compute_output_shape(self, shape):
        return (None, self.num_choices)

    def get_config(self):
        return {**super().get_config(), "num_choices": self.num_choices}


class _TaskModel(HeadModel):
    """Task models load a pretrained model directory, or continue from a fine-tuned one."""

    _SHAPE_ARGUMENTS = ()  # head arguments a fine-tuned model must agree with (its head's shape)

    @classmethod
    def from_model_dir(cls, directory, dtype=None, **head_arguments):
        """This task model from a model directory.

        A directory with a fine-tuned task model (task_model.keras, what fine-tuning writes) gives that
        model, as it was saved (its dtype policy included), to predict with or fine-tune further: it must
        be of this class and agree with the head arguments that shape it (e.g. num_classes); a dropout_rate
        given replaces the saved one (the head's Dropout layer takes it, and a save records it). Otherwise
        the directory's pretrained encoder gets freshly initialized heads.
        """
        if not model_dir.has_task_model(directory):
            return cls(model_dir.load_encoder(directory, dtype=dtype), **head_arguments)
        model = model_dir.load_task_model(directory)
        if not isinstance(model, cls):
            raise ValueError(f"{directory} holds a fine-tuned {type(model).__name__}, not an {cls.__name__}")
        for name in cls._SHAPE_ARGUMENTS:
            if name in head_arguments and getattr(model, name) != head_arguments[name]:
                raise ValueError(
                    f"{directory} holds an {cls.__name__} with {name}={getattr(model, name)}, "
                    f"not {head_arguments[name]}"
                )
        if "dropout_rate" in head_arguments:
            model.dropout_rate = head_arguments["dropout_rate"]
            for layer in model.layers:
                if isinstance(layer, keras.layers.Dropout):
                    layer.rate = model.dropout_rate
        return model


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(_TaskModel):
    """Logits float32 [batch, num_classes] from the pooled output (num_classes=1: a regression score).

    Args:
      encoder: a built AlbertEncoder.
      num_classes: int; 1 for regression.
      labels: optional class names, one per class (what the data calls them, e.g. GLUE's "entailment"):
        kept with the model, so exports answer with them.
      dropout_rate: float, 0.1; on the pooled output.

    Inputs: the encoder's three int32 [batch, seq] inputs, as a dict.
    """

    _SHAPE_ARGUMENTS = ("num_classes",)

    def __init__(self, encoder: AlbertEncoder, num_classes, labels=None, dropout_rate=0.1, **kwargs):
        labels = None if labels is None else tuple(str(label) for label in labels)
        if labels is not None and len(labels) != num_classes:
            raise ValueError(
                f"labels {list(labels)} name {len(labels)} classes, not num_classes={num_classes}"
            )
        inputs = _inputs()
        pooled = encoder(inputs)["pooled_output"]
        pooled = keras.layers.Dropout(dropout_rate, name="dropout")(pooled)
        logits = _dense(num_classes, encoder, "logits")(pooled)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_classes = num_classes
        self.labels = labels
        self.dropout_rate = dropout_rate

    @classmethod
    def from_model_dir(cls, directory, dtype=None, labels=None, **head_arguments):
        """As `_TaskModel.from_model_dir`; a fine-tuned classifier keeps its labels, and must have these
        labels when it has any (a model fine-tuned before it kept them adopts these)."""
        if not model_dir.has_task_model(directory):
            return super().from_model_dir(directory, dtype=dtype, labels=labels, **head_arguments)
        model = super().from_model_dir(directory, dtype=dtype, **head_arguments)
        labels = None if labels is None else tuple(str(label) for label in labels)
        if labels is not None and model.labels is None:
            model.labels = labels
        elif labels is not None and model.labels != labels:
            raise ValueError(
                f"{directory} holds a classifier of labels {list(model.labels)}, not {list(labels)}"
            )
        return model

    def _head_config(self):
        labels = None if self.labels is None else list(self.labels)
        return {"num_classes": self.num_classes, "labels": labels, "dropout_rate": self.dropout_rate}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(_TaskModel):
    """Answer spans: start_logits and end_logits float32 [batch, seq] (PADDING_LOGIT added at padding), and
    with `answerability` (SQuAD v2.0) answerable_logits float32 [batch].

    The answerability head is the original v2.0 model's answer classifier (from XLNet): the sequence output
    averaged under the start probabilities (the state of the likely answer start) next to the [CLS] state,
    through a tanh layer of the hidden size, dropout, and one unit. Reading the likely start lets it learn
    from token features, which a fresh head on the pooled [CLS] output alone can take long to.
    """

    _SHAPE_ARGUMENTS = ("answerability",)

    def __init__(self, encoder: AlbertEncoder, answerability=False, dropout_rate=0.1, **kwargs):
        inputs = _inputs()
        sequence = encoder(inputs)["sequence_output"]  # [B, S, H]
        logits = _dense(2, encoder, "span_logits")(sequence)  # [B, S, 2]
        padding = (1.0 - ops.cast(inputs["input_mask"], "float32")) * PADDING_LOGIT
        outputs = {"start_logits": logits[..., 0] + padding, "end_logits": logits[..., 1] + padding}
        if answerability:
            start_probabilities = ops.cast(ops.softmax(outputs["start_logits"], axis=-1), sequence.dtype)
            start_state = ops.einsum("bs,bsh->bh", start_probabilities, sequence)
            states = ops.concatenate([start_state, sequence[:, 0]], axis=-1)  # [B, 2H]
            hidden = keras.layers.Dense(
                encoder.config.hidden_size,
                activation="tanh",
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=encoder.config.initializer_range
                ),
                name="answer_class_dense",
            )(states)
            hidden = keras.layers.Dropout(dropout_rate, name="dropout")(hidden)
            outputs["answerable_logits"] = _dense(1, encoder, "answerable_logits")(hidden)[:, 0]
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self.answerability = answerability
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {"answerability": self.answerability, "dropout_rate": self.dropout_rate}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(_TaskModel):
    """Scores float32 [batch, num_choices]: each choice's pooled output through one shared dense unit.

    Inputs: the encoder's three inputs shaped int32 [batch, num_choices, seq].
    """

    _SHAPE_ARGUMENTS = ("num_choices",)

    def __init__(self, encoder: AlbertEncoder, num_choices, dropout_rate=0.1, **kwargs):
        inputs = _inputs((num_choices, None))
        merge = MergeChoices(name="merge_choices")
        flat = {name: merge(value) for name, value in inputs.items()}
        pooled = keras.layers.Dropout(dropout_rate, name="dropout")(encoder(flat)["pooled_output"])
        scores = _dense(1, encoder, "choice_logits")(pooled)  # [B * C, 1]
        scores = SplitChoices(num_choices, dtype="float32", name="split_choices")(scores)  # float32 scores
        super().__init__(inputs=inputs, outputs=scores, **kwargs)
        self.encoder = encoder
        self.num_choices = num_choices
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {"num_choices": self.num_choices, "dropout_rate": self.dropout_rate}
