"""Fine-tuning models: an encoder with a task head, returning logits.

- `AlbertClassifier`: sequence classification, or regression with `num_classes=1` (GLUE).
- `AlbertSpanLabeler`: answer-span start/end logits (SQuAD v1.1), plus an answerability logit (v2.0).
- `AlbertMultipleChoice`: one score per choice (RACE).

As the original fine-tuning code: dropout 0.1 on the pooled output before the classifier, heads initialized
from a truncated normal of stddev `initializer_range`. Logits are float32 under mixed precision. Each
works with compile / fit / evaluate / predict, loads a pretrained model directory with
`from_model_dir(directory, ...)`, and keeps its `Preprocessing` (sequence length, pairing, casing) in its
config, so an export of it tokenizes as it was trained.
"""

import dataclasses
import os

import keras
import numpy as np
from keras import ops

from albert_tf import file_io, model_files
from albert_tf.features import ENCODER_INPUTS
from albert_tf.models import model_dir
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.head_model import HeadModel
from albert_tf.models.preprocessing import Preprocessing

# Added to span logits at padding: no softmax or top-k over a row picks a padded position.
PADDING_LOGIT = -10000.0
# Tokens per example when a model that does not know its length is first given raw text.
DEFAULT_SEQ_LENGTH = 128
# Examples per batch of raw text when batch_size is not given (Keras' own default).
DEFAULT_BATCH_SIZE = 32
SPM_ASSET = "spm.model"


def _strings(values):
    """Whether values is a 1-D list, tuple or NumPy array of str (or bytes)."""
    if isinstance(values, np.ndarray):
        return (
            values.ndim == 1
            and values.dtype.kind in "USO"
            and all(isinstance(v, (str, bytes)) for v in values)
        )
    return (
        isinstance(values, (list, tuple))
        and bool(values)
        and all(isinstance(v, (str, bytes)) for v in values)
    )


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
    """Task models keep their preprocessing (`self.preprocessing`, a `Preprocessing` or None), load a
    pretrained model directory, or continue from a fine-tuned one."""

    _SHAPE_ARGUMENTS = ()  # head arguments a fine-tuned model must agree with (its head's shape)
    # Whether fit, evaluate and predict take raw text (single texts or pairs, as a classifier reads them).
    _TAKES_TEXT = False

    def _keep(self, encoder, dropout_rate, preprocessing, spm_model):
        self.encoder = encoder
        self.dropout_rate = dropout_rate
        self.preprocessing = Preprocessing.from_config(preprocessing)
        if spm_model is not None and not isinstance(spm_model, bytes):
            spm_model = file_io.read_bytes(spm_model)
        self.spm_model = spm_model  # bytes; saved in .keras files as an asset, not in the config

    # The SentencePiece model travels in the .keras file (Keras calls these on save and load).
    def save_assets(self, directory):
        if self.spm_model is not None:
            with open(os.path.join(directory, SPM_ASSET), "wb") as file:
                file.write(self.spm_model)

    def load_assets(self, directory):
        path = os.path.join(directory, SPM_ASSET)
        if os.path.exists(path):
            with open(path, "rb") as file:
                self.spm_model = file.read()

    # Raw text in fit, evaluate and predict ------------------------------------------------------------------

    def _text_batches(self, x, y, batch_size, training):
        """x (and y) as batches of the encoder's inputs (and targets) when x is raw text, else None: x a list
        or 1-D NumPy array of strings, a pair (texts, texts_b) of them, or a tf.data.Dataset of string batches
        (text.batches.layout). Tokenized in tf.data with the in-graph tokenizer the export uses, at the
        model's preprocessing, which records the pairing (and length) of the first text it is given."""
        if hasattr(x, "element_spec"):
            from albert_tf.text import batches  # TensorFlow only where raw text is given

            found = batches.layout(x)
            if found is None:
                return None
            self._check_takes_text()
            return batches.encode_batches(x, self._tokenizer(found[0]), self.preprocessing.max_seq_length)
        if _strings(x):
            texts, texts_b = x, None
        elif isinstance(x, (tuple, list)) and len(x) == 2 and all(_strings(part) for part in x):
            texts, texts_b = x
        else:
            return None
        self._check_takes_text()
        from albert_tf.text import batches

        tokenizer = self._tokenizer(texts_b is not None)
        return batches.text_dataset(
            texts, texts_b, self._targets(y), tokenizer, self.preprocessing.max_seq_length,
            batch_size or DEFAULT_BATCH_SIZE, is_training=training, drop_remainder=False, seed=None,
        )  # fmt: skip

    def _check_length(self):
        """ValueError unless the preprocessing's length fits the position embeddings."""
        length = getattr(self.preprocessing, "max_seq_length", None)
        positions = self.encoder.config.max_position_embeddings
        if length is not None and length > positions:
            raise ValueError(
                f"max_seq_length={length} exceeds the model's max_position_embeddings={positions}"
            )

    def _check_takes_text(self):
        if not self._TAKES_TEXT:
            raise ValueError(
                f"an {type(self).__name__} takes the encoder's token ids, not raw text: run_squad prepares "
                "them (raw text in fit and predict: AlbertClassifier, AlbertMultipleChoice)"
            )

    def _tokenizer(self, pair):
        """The in-graph tokenizer, once the preprocessing agrees with pair (and records it)."""
        from albert_tf.text.tf_tokenizer import InGraphTokenizer

        name = type(self).__name__
        if self.spm_model is None:
            raise ValueError(
                f"this {name} has no SentencePiece model to tokenize text with: build it with "
                f"{name}.from_model_dir, or pass spm_model=(the model's file)"
            )
        kept = (self.preprocessing or Preprocessing()).agreeing(f"this {name}", text_pair=pair)
        if kept.max_seq_length is None:
            kept = dataclasses.replace(kept, max_seq_length=DEFAULT_SEQ_LENGTH)
        self.preprocessing = kept
        self._check_length()
        return InGraphTokenizer(self.spm_model, kept.do_lower_case, keep_accents=kept.keep_accents)

    def _targets(self, y):
        return y

    def _text_outputs(self, outputs):
        """What predict on raw text returns, from the model's outputs."""
        return outputs

    def fit(self, x=None, y=None, batch_size=None, **kwargs):
        """Keras' fit; x may also be raw text (see `_text_batches`), y its labels."""
        validation = kwargs.get("validation_data")
        if validation is not None:
            pair = isinstance(validation, tuple) and len(validation) == 2
            size = kwargs.get("validation_batch_size") or batch_size
            converted = self._text_batches(
                *(validation if pair else (validation, None)), size, training=False
            )
            kwargs["validation_data"] = validation if converted is None else converted
        text = self._text_batches(x, y, batch_size, training=kwargs.get("shuffle", True))
        if text is not None:  # shuffled in the pipeline, when asked (Keras shuffles only arrays)
            x, y, batch_size, kwargs["shuffle"] = text, None, None, False
        return super().fit(x, y, batch_size=batch_size, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """Keras' evaluate; x may also be raw text, y its labels."""
        text = self._text_batches(x, y, batch_size, training=False)
        if text is not None:
            x, y, batch_size = text, None, None
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Keras' predict; on raw text, what `_text_outputs` gives (a classifier: probabilities)."""
        text = self._text_batches(x, None, batch_size, training=False)
        if text is None:
            return super().predict(x, batch_size=batch_size, **kwargs)
        return self._text_outputs(super().predict(text, **kwargs))

    @classmethod
    def from_model_dir(cls, directory, dtype=None, max_seq_length=None, text_pair=None, **head_arguments):
        """This task model from a model directory (or a fine-tuning sweep's folder: its chosen run's,
        which it says; model_files.resolve).

        A directory with a fine-tuned task model (task_model.keras, what fine-tuning writes) gives that
        model, as it was saved (its dtype policy and preprocessing included), to predict with or fine-tune
        further: it must be of this class and agree with the head arguments that shape it (e.g.
        num_classes) and with text_pair; a dropout_rate or max_seq_length given replaces the saved one (the
        head's Dropout layer takes the rate, and a save records both). Otherwise the directory's pretrained
        encoder gets freshly initialized heads, and preprocessing of max_seq_length tokens and text_pair
        (None: not known yet) and the directory's casing.
        """
        directory = model_files.resolve(directory)  # a fine-tuning sweep's folder: its chosen run
        if not model_files.has_task_model(directory):
            preprocessing = Preprocessing(
                max_seq_length=max_seq_length,
                text_pair=text_pair,
                do_lower_case=model_files.do_lower_case(directory),
                keep_accents=model_files.keep_accents(directory),
            )
            encoder = model_dir.load_encoder(directory, dtype=dtype)
            spm = model_files.spm_model_file(directory)
            model = cls(encoder, preprocessing=preprocessing, spm_model=spm, **head_arguments)
            model._check_length()
            return model
        model = model_dir.load_task_model(directory)
        if not isinstance(model, cls):
            raise ValueError(f"{directory} holds a fine-tuned {type(model).__name__}, not an {cls.__name__}")
        for name in cls._SHAPE_ARGUMENTS:
            if name in head_arguments and getattr(model, name) != head_arguments[name]:
                raise ValueError(
                    f"{directory} holds an {cls.__name__} with {name}={getattr(model, name)}, "
                    f"not {head_arguments[name]}"
                )
        if model.spm_model is None and model_files.spm_model_file(directory):  # saved without one
            model.spm_model = file_io.read_bytes(model_files.spm_model_file(directory))
        known = model.preprocessing or Preprocessing(
            do_lower_case=model_files.do_lower_case(directory),
            keep_accents=model_files.keep_accents(directory),
        )
        model.preprocessing = known.agreeing(
            directory, changeable=("max_seq_length",), max_seq_length=max_seq_length, text_pair=text_pair
        )
        model._check_length()
        if "dropout_rate" in head_arguments:
            model.dropout_rate = head_arguments["dropout_rate"]
            for layer in model.layers:
                if isinstance(layer, keras.layers.Dropout):
                    layer.rate = model.dropout_rate
        return model

    def _head_config(self):
        preprocessing = None if self.preprocessing is None else self.preprocessing.to_config()
        return {"dropout_rate": self.dropout_rate, "preprocessing": preprocessing}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(_TaskModel):
    """Logits float32 [batch, num_classes] from the pooled output (num_classes=1: a regression score).

    Args:
      encoder: a built AlbertEncoder.
      num_classes: int; 1 for regression.
      labels: optional class names, one per class (what the data calls them, e.g. GLUE's "entailment"):
        kept with the model, so exports answer with them.
      dropout_rate: float, 0.1; on the pooled output.
      preprocessing: a `Preprocessing` (or its config dict), how raw text becomes the inputs; every task
        model takes it. None: unknown (its export must then be told the length and pairing).
      spm_model: its SentencePiece model (a path, or the file's bytes), for raw text; every task model takes
        it, and keeps it in its .keras file.

    Inputs: the encoder's three int32 [batch, seq] inputs, as a dict. `fit`, `evaluate` and `predict` also
    take raw text: a list or 1-D NumPy array of strings, a pair (texts, texts_b) of them, or a
    tf.data.Dataset of string batches (text.batches.layout); labels as class indices or label names.
    `predict` on text gives probabilities float32 [batch, num_classes] (regression: scores [batch]).
    """

    _SHAPE_ARGUMENTS = ("num_classes",)
    _TAKES_TEXT = True

    def __init__(
        self,
        encoder: AlbertEncoder,
        num_classes,
        labels=None,
        dropout_rate=0.1,
        preprocessing=None,
        spm_model=None,
        **kwargs,
    ):
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
        self._keep(encoder, dropout_rate, preprocessing, spm_model)
        self.num_classes = num_classes
        self.labels = labels

    @classmethod
    def from_model_dir(cls, directory, dtype=None, labels=None, **head_arguments):
        """As `_TaskModel.from_model_dir`; a fine-tuned classifier keeps its labels, and must have these
        labels when it has any (a model fine-tuned before it kept them adopts these)."""
        directory = model_files.resolve(directory)  # a fine-tuning sweep's folder: its chosen run
        if not model_files.has_task_model(directory):
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

    def _targets(self, y):
        """Labels as class indices (names of self.labels are looked up), or float scores for regression."""
        if y is None or self.num_classes == 1:
            return None if y is None else np.asarray(y, np.float32)
        if _strings(y):
            if self.labels is None:
                raise ValueError("labels given as names, but this classifier has no label names")
            unknown = sorted({str(label) for label in y} - set(self.labels))
            if unknown:
                raise ValueError(f"labels {unknown[:5]} are not among this classifier's {list(self.labels)}")
            return np.array([self.labels.index(str(label)) for label in y], np.int32)
        return np.asarray(y, np.int32)

    def _text_outputs(self, outputs):
        """float32 [batch, num_classes] probabilities; regression: [batch] scores."""
        return outputs[:, 0] if self.num_classes == 1 else keras.ops.convert_to_numpy(ops.softmax(outputs))

    def _head_config(self):
        labels = None if self.labels is None else list(self.labels)
        return {**super()._head_config(), "num_classes": self.num_classes, "labels": labels}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(_TaskModel):
    """Answer spans: start_logits and end_logits float32 [batch, seq] (PADDING_LOGIT added at padding), and
    with `answerability` (SQuAD v2.0) answerable_logits float32 [batch].

    The answerability head is the original v2.0 model's answer classifier (from XLNet): the sequence output
    averaged under the start probabilities (the state of the likely answer start) next to the [CLS] state,
    through a tanh layer of the hidden size, dropout, and one unit. Reading the likely start lets it learn
    from token features, which a fresh head on the pooled [CLS] output alone can take long to.

    `predict` also takes raw (questions, contexts) and answers with text, as the span export does; `fit`
    and `evaluate` take windows with answer positions (run_squad builds them from SQuAD JSON).
    `span_settings`: how contexts are windowed and answers picked (dict of text.span_settings.SpanSettings'
    fields but max_seq_length); run_squad records its own, so exports and `predict` answer as it did.
    """

    _SHAPE_ARGUMENTS = ("answerability",)

    def __init__(
        self,
        encoder: AlbertEncoder,
        answerability=False,
        dropout_rate=0.1,
        preprocessing=None,
        spm_model=None,
        span_settings=None,
        **kwargs,
    ):
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
        self._keep(encoder, dropout_rate, preprocessing, spm_model)
        self.answerability = answerability
        # Plain values in a tuple: Keras wraps a dict attribute in a tracking type of its own.
        self._span_settings = tuple(sorted((span_settings or {}).items()))

    @property
    def span_settings(self):
        """How contexts are windowed and answers chosen (text.span_settings.SpanSettings' fields but the
        length, which is the preprocessing's); what is not here takes run_squad's defaults."""
        return dict(self._span_settings)

    @span_settings.setter
    def span_settings(self, settings):
        self._span_settings = tuple(sorted(settings.items()))

    @classmethod
    def from_model_dir(cls, directory, dtype=None, span_settings=None, **arguments):
        """`_TaskModel.from_model_dir`; span settings given replace those of a fine-tuned model one by one."""
        model = super().from_model_dir(directory, dtype=dtype, **arguments)
        if span_settings:
            model.span_settings = {**model.span_settings, **span_settings}
        return model

    def _head_config(self):
        return {
            **super()._head_config(),
            "answerability": self.answerability,
            "span_settings": self.span_settings,
        }

    def _check_takes_text(self):
        raise ValueError(
            "an AlbertSpanLabeler's fit and evaluate take the encoder's token ids (run_squad prepares them "
            "from SQuAD JSON); its predict also takes (questions, contexts)"
        )

    def predict(self, x, batch_size=None, **kwargs):
        """Keras' predict on the encoder's inputs; on raw text, a pair (questions, contexts) of lists or 1-D
        arrays of strings, each question's answer in its context as run_squad (and the span export) picks
        it, from windows of `span_settings` at the preprocessing's length, `batch_size` questions at a time
        and the model on at most `batch_size` windows per call.

        Returns, on raw text: a dict of NumPy arrays [batch]: answer_text (str, "" without an answer),
        answer_start and answer_end (int32, the answer's [start, end) characters in its context, -1
        without one), answer_score (float32, start + end logit) and, with answerability,
        answerable_logits and no_answer_probability (float32).
        """
        if not (isinstance(x, (tuple, list)) and len(x) == 2 and all(_strings(part) for part in x)):
            return super().predict(x, batch_size=batch_size, **kwargs)
        questions, contexts = (list(part) for part in x)
        if len(questions) != len(contexts):
            raise ValueError(
                f"{len(questions)} questions and {len(contexts)} contexts: give one context per question"
            )
        from albert_tf.text import span_answers, span_settings  # TensorFlow only where raw text is given

        tokenizer = self._tokenizer(True)
        settings = span_settings.SpanSettings.of(self)
        return span_answers.predict_answers(
            self, tokenizer, questions, contexts, settings, batch_size or DEFAULT_BATCH_SIZE
        )


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(_TaskModel):
    """Scores float32 [batch, num_choices]: each choice's pooled output through one shared dense unit.

    Inputs: the encoder's three inputs shaped int32 [batch, num_choices, seq]. `fit`, `evaluate` and
    `predict` also take raw text: (passages, choices), choices num_choices strings per passage (the
    question with each option); `predict` on text gives probabilities float32 [batch, num_choices].
    """

    _SHAPE_ARGUMENTS = ("num_choices",)

    def __init__(
        self,
        encoder: AlbertEncoder,
        num_choices,
        dropout_rate=0.1,
        preprocessing=None,
        spm_model=None,
        **kwargs,
    ):
        inputs = _inputs((num_choices, None))
        merge = MergeChoices(name="merge_choices")
        flat = {name: merge(value) for name, value in inputs.items()}
        pooled = keras.layers.Dropout(dropout_rate, name="dropout")(encoder(flat)["pooled_output"])
        scores = _dense(1, encoder, "choice_logits")(pooled)  # [B * C, 1]
        scores = SplitChoices(num_choices, dtype="float32", name="split_choices")(scores)  # float32 scores
        super().__init__(inputs=inputs, outputs=scores, **kwargs)
        self._keep(encoder, dropout_rate, preprocessing, spm_model)
        self.num_choices = num_choices

    def _text_batches(self, x, y, batch_size, training):
        """x as batches of choices when it is raw text, else None: a pair (passages, choices), passages a
        list or 1-D array of strings and choices one row of num_choices strings per passage (each the
        question with one option, as run_race combines them: finetuning.race.combine); y the right
        choices' indices."""
        if not (isinstance(x, (tuple, list)) and len(x) == 2 and _strings(x[0])):
            return None
        rows = [list(row) for row in x[1]]
        if len(rows) != len(x[0]) or not all(len(row) == self.num_choices and _strings(row) for row in rows):
            raise ValueError(
                f"choices must give {self.num_choices} strings for each of the {len(x[0])} passages"
            )
        from albert_tf.text import batches  # TensorFlow only where raw text is given

        tokenizer = self._tokenizer(True)
        return batches.choice_dataset(
            x[0], rows, None if y is None else np.asarray(y, np.int32), tokenizer,
            self.preprocessing.max_seq_length, batch_size or DEFAULT_BATCH_SIZE, is_training=training,
            drop_remainder=False, seed=None,
        )  # fmt: skip

    def _text_outputs(self, outputs):
        """float32 [batch, num_choices] probabilities."""
        return keras.ops.convert_to_numpy(ops.softmax(outputs))

    def _head_config(self):
        return {**super()._head_config(), "num_choices": self.num_choices}
