"""LiteRT (TFLite) models that take raw text, for phones, browsers and embedded boxes.

    export_litert(model, "spm.model", "classifier.tflite", task="classifier", quantize="dynamic_int8")
    classify = load("classifier.tflite")
    classify(["A fine film."])["label"]                        # array([b'positive'], dtype=object)

The file has one signature, serving_default, which takes raw strings and answers as the SavedModel's
serving_default does (albert_tf/serving/export.py):

    text [batch] [, text_b [batch]]   → classifier: logits float32 [batch, classes], probabilities float32
                                        [batch, classes], label string [batch] (the class name)
                                        (regression: logits float32 [batch, 1])
    text [batch] [, text_b [batch]]   → encoder: pooled_output float32 [batch, hidden], sequence_output
                                        float32 [batch, seq_length, hidden] (0 at padding)
    text [batch] (passage), choices [batch, num_choices] (question with each option)
                                      → multiple_choice: logits, probabilities float32 [batch, num_choices]

Text is tokenized inside the file (albert_tf/serving/litert_text.py) and packed to the model's sequence
length, its pairing and casing those the task model was fine-tuned with. Unlike the SavedModel, every row is
padded to the full sequence length: a real token's outputs do not depend on the padding, but the encoder's
sequence_output is seq_length wide whatever the texts' lengths.

Not offered: span models (an answer needs a loop over each context's windows, whose count only the text
gives, and run_squad's decoding across them: serve them with export_saved_model) and pretraining models (their
heads check pretraining; an application wants the encoder or a fine-tuned head).

The file holds only TFLite builtin ops and the tensorflow_text custom ops that tensorflow_text's TFLite
registrars implement (TF_TEXT_OPS): no Flex (TensorFlow) ops, so the runtime needs no TensorFlow. The weights
are constants inside the flatbuffer: left as variables, the converter writes READ_VARIABLE ops whose values
are not in the file, and the interpreter answers NaN (tensorflow/tensorflow#44306 reports that NaN). Every
export is loaded by the LiteRT interpreter (`ai-edge-litert`, with tensorflow_text's registrars) and run on a
few texts before the file appears; a file with a non-finite output or another op is refused.

Quantization (the converter's optimizations): "none" (float32), "float16" (weights stored in float16, computed
in float32), "dynamic_int8" (weights in int8, activations quantized on the fly in the matrix products).
"""

import re

import numpy as np
import tensorflow as tf

from albert_tf import file_io
from albert_tf.serving import export
from albert_tf.text.tf_tokenizer import CHOICE_TOKENS, pack_rows
from albert_tf.text.tokenizer import check_fits_vocabulary

TASKS = ("encoder", "classifier", "multiple_choice")
# The tasks export_saved_model serves that a LiteRT file does not, and why.
NOT_OFFERED = {
    "span": (
        "a span answer needs a loop over the context's windows (as many as the text makes) and run_squad's "
        "decoding across them; serve span models with export_saved_model"
    ),
    "pretraining": (
        "the pretraining heads (masked words, sentence order) check pretraining and answer no application's "
        "question; export the encoder, or a fine-tuned classifier"
    ),
}
QUANTIZATIONS = ("none", "float16", "dynamic_int8")
# The custom ops tensorflow_text's TFLite registrars (tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
# one registrar each) give a kernel, by the name the converter writes: the only custom ops a file may hold.
TF_TEXT_OPS = frozenset(
    {"TFText>ByteSplitWithOffsets", "TFText>ByteSplitByOffsets", "FastBertNormalize",
     "TFText>FastSentencepieceDetokenize", "TFText>FastSentencepieceTokenize",
     "TFText>FastWordpieceDetokenize", "FastWordpieceTokenizeWithOffsets", "TFText>NgramsStringJoin",
     "RaggedTensorToTensor", "TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim",
     "SentenceFragmentsV2", "TFText>Utf8Binarize", "TFText>WhitespaceTokenizeWithOffsetsV2"}
)  # fmt: skip
# Builtin ops that read weights from variables, which the flatbuffer does not hold: a file with them answers
# NaN (or garbage) in the interpreter.
VARIABLE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})
# What every export is run on before it is written: short, long, empty, non-ASCII and digit-comma text.
CHECK_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT shares parameters across layers, 1,000 times over. " * 20,
    "",
    "Ça va? ﬁne Ünïcödé ＡＢＣ 東京",
)


class LiteRTError(ValueError):
    """The converter failed, or its file holds ops a device runtime lacks or answers a non-finite value."""


class _OnDevice(tf.Module):
    """The serving_default function a LiteRT file runs: raw strings → the task's named outputs."""

    def __init__(self, model, tokenizer, task, seq_length, class_names):
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.task = task
        self.seq_length = seq_length
        self.class_names = class_names

    def _outputs(self, features):
        """The model's outputs for packed ids int32 [rows, seq_length] (multiple choice: [batch, choices,
        seq_length]), named as the SavedModel's serving_default names them."""
        # Keras' embedding lookup tests its ids for < 0; on type ids cast from a bool (the tokenizer's pair
        # packing) the converter folds that test into a ZEROS_LIKE of bools, which TFLite has no kernel for,
        # and the conversion fails. Multiplied by the mask (type ids are 0 wherever it is), they are the
        # same ids, no longer a cast.
        types = features["input_type_ids"] * features["input_mask"]
        outputs = self.model({**features, "input_type_ids": types}, training=False)
        if self.task == "encoder":
            # 0 at padding, as the SavedModel serves it (a padded position's vector means nothing).
            mask = tf.cast(features["input_mask"], outputs["sequence_output"].dtype)[:, :, None]
            return {
                "pooled_output": outputs["pooled_output"],
                "sequence_output": outputs["sequence_output"] * mask,
            }
        named = {"logits": outputs}
        if self.class_names is not None or self.task == "multiple_choice":
            named["probabilities"] = tf.nn.softmax(outputs, axis=-1)
        if self.class_names is not None:
            best = tf.argmax(outputs, axis=-1, output_type=tf.int32)
            named["label"] = tf.gather(tf.constant(self.class_names), best)
        return named

    def texts(self, text, text_b=None):
        """text (and text_b) tf.string [batch] → the task's outputs."""
        return self._outputs(self.tokenizer.pack(text, text_b, self.seq_length))

    def choices(self, text, choices):
        """text tf.string [batch] (passages), choices tf.string [batch, num_choices] → logits and
        probabilities float32 [batch, num_choices], packed as fine-tuning packs them (finetuning/race.py,
        InGraphTokenizer.pack's keep_b_tail): each choice keeps its last CHOICE_TOKENS tokens and the passage
        is cut to the room left. Each passage is tokenized once, however many choices read it."""
        count, width = self.model.num_choices, self.seq_length
        ids_a, splits_a = self.tokenizer.tokenize(text)
        ids_b, splits_b = self.tokenizer.tokenize(tf.reshape(choices, [-1]))
        passage = tf.range(tf.shape(splits_b)[0] - 1) // count  # [batch * count]: each row's passage
        starts_a = tf.gather(splits_a[:-1], passage)[:, None]
        length_a = tf.gather(splits_a[1:] - splits_a[:-1], passage)[:, None]
        starts_b, length_b = splits_b[:-1, None], splits_b[1:, None] - splits_b[:-1, None]
        budget = max(width - 3, 0)
        new_b = tf.minimum(length_b, min(CHOICE_TOKENS, budget))
        new_a = tf.minimum(length_a, budget - new_b)
        first, second = (ids_a, starts_a, new_a), (ids_b, starts_b + length_b - new_b, new_b)
        features, _ = pack_rows(self.tokenizer.cls_id, self.tokenizer.sep_id, width, first, second)
        features = {name: tf.reshape(ids, [-1, count, width]) for name, ids in features.items()}
        return self._outputs(features)


def _signature(task, pair, num_choices=None):
    text = export.string_spec("text")
    if task == "multiple_choice":
        return [text, export.string_spec("choices", (None, num_choices))]
    return [text, export.string_spec("text_b")] if pair else [text]


def _frozen(function, signature):
    """function traced for signature as a ConcreteFunction, its variables made constants, its outputs named.

    convert_variables_to_constants_v2 returns the outputs as a flat list (named output_0, output_1, ... by
    the converter); the wrapper puts the names back, so the file's signature names them."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    traced = tf.function(function, input_signature=signature, autograph=False).get_concrete_function()
    frozen = convert_variables_to_constants_v2(traced)
    structure = traced.structured_outputs

    def named(*inputs):
        return tf.nest.pack_sequence_as(structure, frozen(*inputs))

    return tf.function(named, input_signature=signature, autograph=False).get_concrete_function()


def _convert(function, owner, quantize):
    """A frozen ConcreteFunction → the flatbuffer's bytes: TFLite builtins and custom ops only (no Flex).

    owner: the tf.Module the function was traced from (without one the converter takes its deprecated path,
    which writes no signature)."""
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], owner)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True  # the tensorflow_text ops; any other custom op is refused by _check
    if quantize in ("float16", "dynamic_int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    try:
        return converter.convert()
    except Exception as error:  # the converter's ConverterError and its MLIR failures alike
        # MLIR's messages carry a location of several KB before each "error:": keep what follows it.
        reasons = re.findall(r"error: (.*)", str(error)) or [str(error)]
        raise LiteRTError(f"the LiteRT converter failed: {'; '.join(reasons)}") from None


def operators(content):
    """The ops a LiteRT flatbuffer uses (bytes) → (builtin, custom): sorted lists of str, builtin ops by their
    BuiltinOperator name (e.g. "FULLY_CONNECTED"), custom ops (Flex ops among them) by their custom code
    (e.g. "TFText>FastSentencepieceTokenize")."""
    from ai_edge_litert import schema_py_generated as schema

    names = {value: name for name, value in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
    model = schema.Model.GetRootAs(content, 0)
    builtin, custom = set(), set()
    for index in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(index)
        # Codes past 127 live in builtin_code; deprecated_builtin_code holds the smaller of the two.
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if number == schema.BuiltinOperator.CUSTOM:
            custom.add(code.CustomCode().decode("utf-8"))
        else:
            builtin.add(names[number])
    return sorted(builtin), sorted(custom)


def _interpreter(content, num_threads=None):
    """LiteRT's interpreter for a flatbuffer's bytes, with tensorflow_text's custom ops registered."""
    try:
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
    except ImportError:
        raise ImportError(
            "LiteRT models need the ai-edge-litert package: pip install 'albert_tf[litert]'"
        ) from None
    import tensorflow_text

    return InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=content,
        num_threads=num_threads,
    )


def _check(content, task, pair, num_choices=None):
    """Raises LiteRTError unless the flatbuffer holds only builtin ops (none on variables) and TF_TEXT_OPS,
    and answers finite values for CHECK_TEXTS (one text, and all) in LiteRT's interpreter (XNNPACK on, as
    users run it)."""
    builtin, custom = operators(content)
    refused = sorted((set(custom) - TF_TEXT_OPS) | (set(builtin) & VARIABLE_OPS))
    if refused:
        raise LiteRTError(
            f"the converted model holds ops {refused}, which LiteRT with tensorflow_text's registrars does "
            f"not run (allowed: TFLite builtins without variables, and {sorted(TF_TEXT_OPS)})"
        )
    model = LiteRTModel(content)
    for texts in (list(CHECK_TEXTS[:1]), list(CHECK_TEXTS)):
        if task == "multiple_choice":
            outputs = model(texts, choices=[[text] * num_choices for text in texts])
        else:
            outputs = model(texts, texts[::-1] if pair else None)
        for name, values in outputs.items():
            if values.dtype.kind == "f" and not np.isfinite(values).all():
                raise LiteRTError(
                    f"the converted model answers non-finite {name} (NaN or infinity) in LiteRT's "
                    f"interpreter for {len(texts)} text(s); no file was written"
                )


class LiteRTModel:
    """A LiteRT file exported by export_litert, run by LiteRT's interpreter with tensorflow_text's custom ops.

        model = load("classifier.tflite")
        model(["A fine film.", "A dull one."])                  # single texts
        model(["A fine film."], ["It was fine."])              # pairs (a model fine-tuned on pairs)
        model(["The passage ..."], choices=[["Q? A", "Q? B"]])  # multiple choice

    Returns dict of NumPy arrays, named as the file's serving_default names them (strings as bytes).
    Not thread-safe: one call at a time per instance (the interpreter holds the tensors).

    Args:
      content: the file's bytes.
      num_threads: the interpreter's CPU threads (None: LiteRT's default).
    """

    def __init__(self, content, num_threads=None):
        self._content = content  # the interpreter reads the buffer in place: keep it alive
        self._interpreter = _interpreter(content, num_threads)
        self._runner = self._interpreter.get_signature_runner("serving_default")
        self.inputs = tuple(self._interpreter.get_signature_list()["serving_default"]["inputs"])
        self.outputs = tuple(self._interpreter.get_signature_list()["serving_default"]["outputs"])

    def __call__(self, text, text_b=None, choices=None):
        """text: list of str (or bytes) [batch]; text_b: the same, for a pair model; choices: [batch] lists of
        num_choices str, for a multiple-choice model."""
        given = {"text": text, "text_b": text_b, "choices": choices}
        extra = sorted(name for name, value in given.items() if value is not None and name not in self.inputs)
        missing = sorted(name for name in self.inputs if given[name] is None)
        if extra or missing:
            raise ValueError(f"this model takes {list(self.inputs)}; got {sorted(set(given) - set(extra))}")
        feeds = {name: _string_array(given[name]) for name in self.inputs}
        rows = {name: len(value) for name, value in feeds.items()}
        if len(set(rows.values())) > 1:
            raise ValueError(f"inputs of different batch sizes: {rows}")
        if "choices" in feeds:
            expected = self._runner.get_input_details()["choices"]["shape_signature"]
            if feeds["choices"].ndim != 2 or feeds["choices"].shape[1] != expected[1]:
                raise ValueError(
                    f"choices must be [batch, {expected[1]}] (the model's num_choices); got shape "
                    f"{feeds['choices'].shape}"
                )
        return self._runner(**feeds)


def _string_array(values):
    """list (of lists) of str or bytes → NumPy object array of UTF-8 bytes, as LiteRT takes strings."""
    encode = np.vectorize(lambda value: value.encode("utf-8") if isinstance(value, str) else bytes(value),
                          otypes=[object])  # fmt: skip
    return encode(np.array(values, dtype=object))


def load(path, num_threads=None):
    """A `LiteRTModel` for the LiteRT file at path (any TensorFlow file system path)."""
    return LiteRTModel(file_io.read_bytes(path), num_threads=num_threads)


def export_litert(
    model, spm_model_file, output, task, max_seq_length=None, pair=None, do_lower_case=None,
    keep_accents=None, quantize="none",
):  # fmt: skip
    """Writes a LiteRT file at output that takes raw text and answers as the SavedModel's serving_default.

    A task model tokenizes as it was fine-tuned: its `preprocessing` gives the sequence length, whether it
    takes text pairs and the casing, and an argument that contradicts it is refused (as export_saved_model).

    Args:
      model: the Keras model for task: AlbertEncoder, AlbertClassifier (its labels become the label output)
        or AlbertMultipleChoice.
      spm_model_file: its SentencePiece model (inside the file).
      output: the .tflite path to write (any TensorFlow file system path); a file there is replaced.
      task: one of TASKS (NOT_OFFERED says why the others are not).
      max_seq_length: tokens per text (pair); each row is packed to this width. Encoder: default 128.
      pair: the file takes text and text_b (multiple choice: always two texts). Encoder: default False.
      do_lower_case, keep_accents: the encoder's casing and accents (the command line reads them from the
        model directory); task models keep their own.
      quantize: one of QUANTIZATIONS.

    Returns:
      output. It appears whole or not at all: written under a temporary name, loaded in LiteRT's interpreter
      and run on CHECK_TEXTS, then renamed; LiteRTError (nothing written) when it fails that check.
    """
    if task in NOT_OFFERED:
        raise ValueError(f"task {task!r} is not offered as a LiteRT model: {NOT_OFFERED[task]}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZATIONS)}; got {quantize!r}")
    from albert_tf.serving.litert_text import DeviceTokenizer

    export.check_model_and_tokenizer(model, task, spm_model_file)
    preprocessing = export.served_preprocessing(
        model, task, max_seq_length, pair, do_lower_case, keep_accents=keep_accents
    )
    seq_length, pair = preprocessing.max_seq_length, preprocessing.text_pair
    if seq_length > export.model_max_positions(model):
        raise ValueError(
            f"max_seq_length={seq_length} exceeds the model's max_position_embeddings="
            f"{export.model_max_positions(model)}"
        )
    check_fits_vocabulary(spm_model_file, getattr(model, "encoder", model).config.vocab_size,
                          "the model's albert config")  # fmt: skip
    tokenizer = DeviceTokenizer(
        spm_model_file, preprocessing.do_lower_case, keep_accents=preprocessing.keep_accents
    )
    regression = task == "classifier" and model.num_classes == 1
    class_names = export.class_names(model) if task == "classifier" and not regression else None
    on_device = _OnDevice(model, tokenizer, task, seq_length, class_names)
    num_choices = getattr(model, "num_choices", None)
    function = on_device.choices if task == "multiple_choice" else on_device.texts
    content = _convert(_frozen(function, _signature(task, pair, num_choices)), on_device, quantize)

    def write(temporary):
        with file_io.open_file(temporary, "wb") as handle:
            handle.write(content)
        _check(file_io.read_bytes(temporary), task, pair, num_choices)

    file_io.replace_with(output, write)
    return output
