"""SavedModels that stock TF Serving loads and feeds from raw text.

    export_saved_model(model, "spm.model", "models/albert/1", task="classifier", max_seq_length=128)

Signatures:
    serving_default   raw strings → named outputs:
                        text [, text_b]       → classifier: logits, probabilities, label (the class name)
                                                (regression: logits)
                        text [, text_b]       → encoder: pooled_output, sequence_output
                        text [, text_b]       → pretraining: sop_logits, sop_probabilities
                        text (question), text_b (context) → span: answer_text (the context's own
                                                characters), answer_start, answer_end (character offsets),
                                                answer_score (+ answerable_logits, no_answer_probability)
                        text [batch] (passage), choices [batch, num_choices] (question with each
                                                option) → multiple_choice: logits, probabilities
    preprocess        the same strings → input_word_ids, input_mask, input_type_ids (not for span or
                      multiple_choice)
    serve_token_ids   those three (+ masked_lm_positions for pretraining) → the model's outputs; the trailing
                      run of [CLS] in a row counts as padding (what TF Serving's batching pads with);
                      masked positions outside [0, width) are refused
    classify/regress  (classifier) serialized tf.Example [batch] with "text" [and "text_b"] bytes features,
                      for TF Serving's Classify and Regress APIs: classes (label names) + scores, or outputs.

Servable means what `tensorflow_model_server` does with it: TensorFlow's C++ loader restores the variables and
runs the signatures by tensor name (albert_tf/serving/servable.py does the same through the C API). Every
export is loaded that way and its warm-up requests replayed before the version is published.

The graph holds TensorFlow core ops and tensorflow-text ops that exist in tensorflow-text 2.12 (what the
stock model server links up to 2.19; 2.20 links 2.20), with the tokenizer pinned to the CPU. Text is
tokenized exactly as `AlbertTokenizer` does (ALBERT normalization and digit-comma rule) and truncated to
max_seq_length. A batch's rows run sorted by length in sub-batches, each padded only to its own longest row
(sub_batches.py: a batch computes about the tokens it holds; real tokens' outputs do not change; at padding,
`sequence_output` is 0 and span logits are PADDING_LOGIT). Span models window contexts longer than
max_seq_length and choose answers as `run_squad` does (albert_tf/text/span_answers.py), their
windows in bounded sub-batches (SPAN_WINDOWS_PER_CALL). A transformer block the encoder runs at several
layers (ALBERT's sharing) is one function in the graph, called by each of those layers: the export and the
served process hold its graph once, not once per layer and signature.

With jit_compile=True each distinct block is instead one XLA-compiled function, run at a few shapes: each
sub-batch padded to a bucket of rows and width (compiled_blocks.py), compiled when the model server loads the
version by warm-up requests that cover every bucket (warmup.py); the tokenizer, embeddings and heads stay
TensorFlow ops. The model server needs XLA on (`--xla_cpu_compilation_enabled=true`).
"""

import collections
import contextlib
import os

import tensorflow as tf

from albert_tf import file_io, models
from albert_tf.features import ENCODER_INPUTS
from albert_tf.models.precision import with_precision
from albert_tf.models.preprocessing import Preprocessing
from albert_tf.models.task_models import PADDING_LOGIT
from albert_tf.serving import compiled_blocks, sub_batches, warmup
from albert_tf.serving.servable import Servable
from albert_tf.text import span_answers
from albert_tf.text.span_settings import SpanSettings
from albert_tf.text.tf_tokenizer import CHOICE_TOKENS, InGraphTokenizer, assert_same_batch
from albert_tf.text.tokenizer import AlbertTokenizer, check_fits_vocabulary

TASKS = ("encoder", "pretraining", "classifier", "span", "multiple_choice")
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
CPU = "/device:CPU:0"
# Rows per sub-batch (sub_batches.py): on a CPU, sub-batches of a length-sorted request pad less than the
# whole batch and serve more texts/s, and the size matters little near 8 (bench/serving.py measures it); a
# GPU server may prefer 0 (the whole batch at once).
SUB_BATCH_SIZE = 8
# The most context windows of a span request one encoder call runs, also with sub_batch_size 0: a long
# context is many windows (a 1 MB context at 384 tokens with stride 128: about 2,000), and all at once would
# hold every window's activations together (ALBERT-base: about 14 GB of float32 attention scores).
SPAN_WINDOWS_PER_CALL = 64
# The model outputs each task serves from token ids (span v2.0 models add answerable_logits), and those with
# a value per token.
OUTPUTS = {
    "encoder": ("pooled_output", "sequence_output"),
    "pretraining": ("mlm_logits", "sop_logits"),
    "classifier": ("logits",),
    "span": ("start_logits", "end_logits"),
    "multiple_choice": ("logits",),
}
# Outputs with a value per token, and what they hold where the mask leaves a position out (a row's padding,
# and the width a sub-batch narrower than the batch never computed): span logits stay below any real token's.
PER_TOKEN = {"sequence_output": 0.0, "start_logits": PADDING_LOGIT, "end_logits": PADDING_LOGIT}
# The tensorflow-text ops the in-graph tokenizer uses: all in tensorflow-text 2.12, all CPU-only.
TOKENIZER_OPS = frozenset(
    {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceStringToIdOp", "SentencepieceDetokenizeOp",
     "NormalizeUTF8"}
)  # fmt: skip


def string_spec(name, shape=(None,)):
    """A tf.string input of a signature: [batch] by default."""
    return tf.TensorSpec(shape, tf.string, name=name)


def _ids(name, shape=(None, None)):
    return tf.TensorSpec(shape, tf.int32, name=name)


def class_names(model):
    """A classifier's class names: its labels, or "0", "1", ... when it has none."""
    return list(model.labels) if model.labels else [str(i) for i in range(model.num_classes)]


def _in_range(values, name, end, what):
    """An assertion that every value v of int [batch, ...] satisfies 0 <= v < end; the error names the input,
    the first offending row, its value and the range (InvalidArgument through TF Serving). An id outside the
    table fails a CPU's gather, and reads zeros on a GPU: an answer to another question."""
    bad = tf.where((values < 0) | (values >= end))[:1]  # [0 or 1, rank]: the first bad index
    # The message's values are computed whether or not the check fails: padded with 0 for an empty request.
    row = tf.concat([bad[:, 0], [0]], axis=0)[0]
    value = tf.concat([tf.gather_nd(values, bad), [0]], axis=0)[0]
    return tf.debugging.Assert(
        tf.shape(bad)[0] == 0,
        [f"serve_token_ids: {name} row", row, "holds", value, f"outside [0, {what})", end],
        name=f"{name}_in_range",
    )  # fmt: skip


def _same_shape(features, name, reference="input_word_ids"):
    """An assertion that features[name] has the shape of features[reference], naming both shapes."""
    return tf.debugging.Assert(
        tf.reduce_all(tf.equal(tf.shape(features[name]), tf.shape(features[reference]))),
        [f"serve_token_ids: {name} has shape", tf.shape(features[name]), f"but {reference} has",
         tf.shape(features[reference])],
        name=f"{name}_shape",
    )  # fmt: skip


class _Functions:
    """The signatures' functions over the Keras model and the in-graph tokenizer.

    A plain object, not a tf.Module: what tf.saved_model.save tracks becomes the SavedModel's object graph,
    and a tracked Keras 3 model gets a second tf.Variable per weight that the restore op fills while the
    signatures read the first (keras-team/keras#20095); the C++ loader then finds those uninitialized.
    """

    def __init__(self, model, tokenizer, task, max_seq_length, pair, span_settings, sub_batch_size):
        self.model = model
        self.sub_batch_size = sub_batch_size
        self.tokenizer = tokenizer
        self.task = task
        self.max_seq_length = max_seq_length
        self.pair = pair
        self.span_settings = span_settings
        if task == "span":
            self.surface_lengths = AlbertTokenizer(
                tokenizer.model_file, tokenizer.do_lower_case, tokenizer.keep_accents
            ).surface_lengths
        config = getattr(model, "encoder", model).config  # the encoder export is the encoder itself
        self.vocab_size, self.type_vocab_size = config.vocab_size, config.type_vocab_size
        self.regression = task == "classifier" and model.num_classes == 1
        self.class_names = class_names(model) if task == "classifier" and not self.regression else None

    def pack(self, text, text_b=None, keep_b_tail=None):
        with tf.device(CPU):
            ids_b = None if text_b is None else self.tokenizer.tokenize(text_b)
            # Padded to the batch's longest text, not to max_seq_length: a short request computes less.
            return self.tokenizer.pack(
                self.tokenizer.tokenize(text), ids_b, self.max_seq_length, pad_to_multiple=1,
                keep_b_tail=keep_b_tail,
            )  # fmt: skip

    def run(self, features, rows=None):
        """The model's outputs for packed ids, named for serving (float32).

        Rows run sorted by length in sub-batches of `rows` (default: `sub_batch_size`), each padded to its
        own longest row (sub_batches.py); outputs per token hold PER_TOKEN's value where the mask leaves a
        position out."""
        mask = features["input_mask"]
        ends = tf.reduce_max(tf.where(mask > 0, tf.range(1, tf.shape(mask)[-1] + 1), 0), axis=-1)
        if self.task == "multiple_choice":
            ends = tf.reduce_max(ends, axis=1)  # [batch, choices] → [batch]: a question's longest choice
        if "masked_lm_positions" in features:  # the positions asked for must lie inside the sub-batch
            ends = tf.maximum(ends, tf.reduce_max(features["masked_lm_positions"], axis=1) + 1)

        def model_outputs(chunk):
            outputs = self.model(chunk, training=False)
            return outputs if isinstance(outputs, dict) else {"logits": outputs}

        names = OUTPUTS[self.task]
        if getattr(self.model, "answerability", False):
            names += ("answerable_logits",)
        outputs = sub_batches.run_by_length(
            model_outputs,
            features,
            ends,
            self.sub_batch_size if rows is None else rows,
            names,
            ENCODER_INPUTS,
            PER_TOKEN,
        )
        for name in set(PER_TOKEN) & set(outputs):
            kept = mask > 0 if name != "sequence_output" else (mask > 0)[:, :, None]
            outputs[name] = tf.where(kept, outputs[name], PER_TOKEN[name])
        if self.task in ("classifier", "multiple_choice") and not self.regression:
            outputs["probabilities"] = tf.nn.softmax(outputs["logits"], axis=-1)
        return outputs

    def token_ids(self, features):
        """serve_token_ids. TF Serving's batching pads a request narrower than its batch at the end of each
        row with the tensor's first element (tensorflow_serving/batching/batching_util.cc, PadTensor):
        [CLS], mask 1, and the first masked position. So the trailing run of [CLS] after a row's last other
        token is padding and is masked out; a [CLS] followed by a real token is a token (real tokens' outputs
        do not change either way). The three inputs must have one shape, ids lie in [0, vocab_size) and type
        ids in [0, type_vocab_size), masked positions in [0, width): a wrapped negative or a position past
        the row would read another token than the Keras model does."""
        ids = features["input_word_ids"]
        width = tf.shape(ids)[-1]
        checks = [tf.debugging.assert_positive(width, message="serve_token_ids: input_word_ids has width 0; "
                                               "every row needs at least its [CLS] token")]  # fmt: skip
        checks += [_same_shape(features, "input_mask"), _same_shape(features, "input_type_ids"),
                   _in_range(ids, "input_word_ids", self.vocab_size, "vocab_size"),
                   _in_range(features["input_type_ids"], "input_type_ids", self.type_vocab_size,
                             "type_vocab_size")]  # fmt: skip
        if "masked_lm_positions" in features:
            checks.append(_in_range(features["masked_lm_positions"], "masked_lm_positions", width,
                                    "the input_word_ids width"))  # fmt: skip
        with tf.control_dependencies(checks):
            position = tf.range(width)
        last_other = tf.reduce_max(
            tf.where(ids != self.tokenizer.cls_id, position, 0), axis=-1, keepdims=True
        )  # the last position that is not [CLS] (0 when there is none)
        padding = position > last_other
        return self.run({**features, "input_mask": tf.where(padding, 0, features["input_mask"])})

    def preprocess(self, text, text_b=None):
        return self.pack(text, text_b)

    def serving_default(self, text, text_b=None):
        features = self.pack(text, text_b)
        if self.task == "pretraining":
            # The sentence-order head needs no masked positions: ask for position 0.
            features["masked_lm_positions"] = tf.zeros([tf.shape(text)[0], 1], tf.int32)
            sop_logits = self.run(features)["sop_logits"]
            return {"sop_logits": sop_logits, "sop_probabilities": tf.nn.softmax(sop_logits)}
        outputs = self.run(features)
        if self.class_names:
            best = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
            outputs["label"] = tf.gather(tf.constant(self.class_names), best)
        return outputs

    def choices(self, text, choices):
        """text [batch] (the passage), choices [batch, num_choices] (the question with each option, as
        run_race combines them: race.combine) → scores per choice. Another choice count is refused:
        regrouped, 2 questions of 1 choice would be scored as one of 2."""
        num_choices = self.model.num_choices
        count = tf.shape(choices)[1]
        check = tf.debugging.Assert(
            tf.equal(count, num_choices),
            ["multiple_choice: the request has", count, "choices per question, but this model scores",
             num_choices],
            name="choice_count",
        )  # fmt: skip
        batch = tf.shape(text)[0]
        sizes = assert_same_batch(batch, tf.shape(choices)[0], "multiple_choice: text and choices")
        with tf.control_dependencies([check, sizes]):
            repeated = tf.reshape(tf.repeat(text[:, None], count, axis=1), [-1])
        # As fine-tuning packs them (finetuning/race.py): each choice kept, the passage cut to what is left.
        features = self.pack(repeated, tf.reshape(choices, [-1]), keep_b_tail=CHOICE_TOKENS)
        features = {k: tf.reshape(v, [-1, num_choices, tf.shape(v)[-1]]) for k, v in features.items()}
        return self.run(features)

    def span(self, text, text_b):
        """Questions and contexts tf.string [batch] → the best answer of each, as run_squad decodes it."""
        sizes = assert_same_batch(
            tf.size(text), tf.size(text_b), "span: text (questions) and text_b (contexts)"
        )
        with tf.control_dependencies([sizes]):
            text_b = tf.identity(text_b)
        rows = min(self.sub_batch_size or SPAN_WINDOWS_PER_CALL, SPAN_WINDOWS_PER_CALL)
        return span_answers.answers(
            lambda features: self.run(features, rows), self.tokenizer, tf.constant(self.surface_lengths),
            text, text_b, self.span_settings,
        )  # fmt: skip

    def examples(self, inputs):
        """serialized tf.Example [batch] ("text", optionally "text_b") → classes/scores or outputs."""
        spec = {"text": tf.io.FixedLenFeature([], tf.string)}
        if self.pair:
            spec["text_b"] = tf.io.FixedLenFeature([], tf.string)
        parsed = tf.io.parse_example(inputs, spec)
        outputs = self.run(self.pack(parsed["text"], parsed.get("text_b")))
        if self.regression:
            return {"outputs": outputs["logits"][:, 0]}
        classes = tf.constant(self.class_names)
        return {
            "classes": tf.tile(classes[None], [tf.shape(inputs)[0], 1]),
            "scores": outputs["probabilities"],
        }


def _signatures(functions):
    """The concrete functions to save, by signature name, and the method name of those not Predict."""
    task, pair = functions.task, functions.pair
    token_spec = {name: _ids(name) for name in ENCODER_INPUTS}
    texts = [string_spec("text"), string_spec("text_b")] if pair else [string_spec("text")]
    methods = {}
    if task == "multiple_choice":
        serving_default = tf.function(
            functions.choices, input_signature=[string_spec("text"), string_spec("choices", (None, None))]
        )
        token_spec = {name: _ids(name, (None, functions.model.num_choices, None)) for name in token_spec}
    elif task == "span":
        serving_default = tf.function(functions.span, input_signature=texts)
    else:
        serving_default = tf.function(functions.serving_default, input_signature=texts)
    signatures = {"serving_default": serving_default.get_concrete_function()}
    if task not in ("multiple_choice", "span"):
        signatures["preprocess"] = tf.function(
            functions.preprocess, input_signature=texts
        ).get_concrete_function()
    if task == "pretraining":
        token_spec["masked_lm_positions"] = _ids("masked_lm_positions")
    signatures["serve_token_ids"] = tf.function(functions.token_ids).get_concrete_function(token_spec)
    if task == "classifier":
        name = "regress" if functions.regression else "classify"
        examples = tf.function(functions.examples, input_signature=[string_spec("inputs")])
        signatures[name] = examples.get_concrete_function()
        methods[name] = REGRESS_METHOD if functions.regression else CLASSIFY_METHOD
    return signatures, methods


@contextlib.contextmanager
def _blocks_as_functions(encoder, buckets=None):
    """While signatures are traced, each of encoder's blocks that runs at more than one layer is called as one
    function that the graph does not inline. Inlined (TensorFlow's default, here and in the model server's
    graph optimizer), every layer and every signature holding the model would get its own copy of the
    block's graph, and the served process a copy of its kernels for each: for ALBERT-base, 12 layers in 3
    signatures, about 130 MB more memory than one copy (bench/serving_memory.py). The body is optimized
    on its own (its feed-forward product still fuses with the GELU) and runs as fast. Blocks that run
    once are left inline. With buckets ((rows, widths), compiled_blocks.py), every block is instead one
    XLA-compiled function at those shapes, and one uncompiled function for shapes past them. On leaving,
    the blocks are called as before (the Keras model is unchanged)."""
    if buckets:
        restore = compiled_blocks.compile_blocks(encoder.blocks, encoder.config.hidden_size, *buckets)
    else:
        runs = collections.Counter(encoder.schedule)
        # encoder.blocks holds one block per distinct (attention, feed-forward) pair, in schedule order.
        distinct = dict.fromkeys(encoder.schedule)
        shared = [block for block, key in zip(encoder.blocks, distinct, strict=True) if runs[key] > 1]
        for block in shared:
            block.call = tf.function(block.call, autograph=False, experimental_attributes={"_noinline": True})

        def restore():
            for block in shared:
                del block.call  # the instance attribute set above: the class's call again

    try:
        yield
    finally:
        restore()


def _captured_variables(signatures):
    """The variables the signatures read, each once (Keras weights are tf.Variables underneath)."""
    found = {}
    for function in signatures.values():
        for variable in function.variables:
            found.setdefault(variable.ref(), variable)
    return list(found.values())


def _finish_proto(export_dir, methods):
    """Edits saved_model.pb where tf.saved_model.save cannot be told:

    - method names: TF2 saves every signature as a Predict one; TF Serving's Classify and Regress APIs
      need their own;
    - the CPU pin of the SentencePiece model resource: tensorflow-text creates it without a device, so a
      model server with a GPU would try to place it there (no GPU kernel). Every tensorflow-text node and
      the resource object (the export's only resource) get /device:CPU:0.

    Then fingerprint.pb is written again, for the edited saved_model.pb.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    path = file_io.join(export_dir, "saved_model.pb")
    proto = saved_model_pb2.SavedModel.FromString(file_io.read_bytes(path))
    graph = proto.meta_graphs[0]
    for name, method in methods.items():
        graph.signature_def[name].method_name = method
    functions = [graph.graph_def.node] + [function.node_def for function in graph.graph_def.library.function]
    for nodes in functions:
        for node in nodes:
            if node.op in TOKENIZER_OPS and not node.device:
                node.device = CPU
    for saved_object in graph.object_graph_def.nodes:
        if saved_object.WhichOneof("kind") == "resource" and not saved_object.resource.device:
            saved_object.resource.device = CPU
    file_io.write_atomically(path, proto.SerializeToString())
    # tf.saved_model.save fingerprinted the proto before these edits: fingerprint the edited one (its
    # checksum, graph and signature hashes; the loader and TF Serving read it to identify the model).
    from tensorflow.python.saved_model.pywrap_saved_model import fingerprinting

    fingerprint = fingerprinting.CreateFingerprintDef(export_dir)
    file_io.write_atomically(file_io.join(export_dir, "fingerprint.pb"), fingerprint)


def export_saved_model(
    model, spm_model_file, export_dir, task, max_seq_length=None, pair=None, do_lower_case=None,
    keep_accents=None, warmup_texts=None, span_settings=None, sub_batch_size=SUB_BATCH_SIZE,
    precision="float32", jit_compile=False,
):  # fmt: skip
    """Writes a SavedModel for TF Serving at export_dir (the version folder, e.g. models/albert/1).

    A task model tokenizes as it was trained: its `preprocessing` gives the sequence length, whether it
    takes text pairs and the casing; an argument that contradicts it is refused (ValueError naming both
    values), and a task model without one must be given max_seq_length and, for a classifier, pair.

    Args:
      model: the Keras model for `task`: AlbertEncoder, AlbertPretrainer, AlbertClassifier (its `labels`
        become Classify's classes and serving_default's label), AlbertSpanLabeler or AlbertMultipleChoice.
      spm_model_file: its SentencePiece model (embedded in the graph as a constant).
      task: one of TASKS.
      max_seq_length: texts are tokenized, packed and truncated to this many tokens (span: windows of this
        many). Encoder and pretraining: default 128.
      pair: serving_default takes text and text_b (always for span and multiple_choice). Encoder and
        pretraining: default False.
      do_lower_case: lowercase text before SentencePiece (False for a cased model; the command line takes it
        from the model directory: model_files.do_lower_case). Default True.
      keep_accents: keep combining marks (no NFKD, no mark removal; the command line takes it from the model
        directory: model_files.keep_accents). Default False, the original's normalization.
      warmup_texts: texts for assets.extra/tf_serving_warmup_requests (default: a few samples).
      span_settings: text.span_settings.SpanSettings (windows and answer choice; default: the span model's
        own, the model's sequence length).
      sub_batch_size: rows per sub-batch of a request sorted by length; 0 runs the whole batch at once
        (a GPU usually gains more from large products than from less padding). A span request's context
        windows run in sub-batches of at most SPAN_WINDOWS_PER_CALL either way, so a request's activations
        stay those of that many windows however long its contexts.
      precision: "float32", or "bfloat16": matrix products and attention in bfloat16 with LayerNorm
        statistics, the softmax and every logit in float32, weights stored in bfloat16 (the logit heads' in
        float32); outputs stay float32 (albert_tf/models/precision.py). For CPUs with native bfloat16
        (avx512_bf16 or amx_bf16 in /proc/cpuinfo) and GPUs; elsewhere it is slower than float32
        (bench/README.md has the measurements).
      jit_compile: run the encoder's transformer blocks as XLA-compiled functions, each sub-batch padded
        to a bucket of rows and width (compiled_blocks.py); the warm-up requests compile every bucket, so
        the model server compiles them when it loads the version. Needs sub_batch_size >= 1 (the buckets'
        most rows) and a model server with XLA:CPU on (`tensorflow_model_server
        --xla_cpu_compilation_enabled=true`, TF Serving 2.5 or later; without it the warm-up fails and the
        version does not load). Answers are the plain export's within float32 rounding. float32 only.

    Returns:
      export_dir. The directory appears whole or not at all (written under a temporary name, loaded by the
      C++ loader with its warm-up requests replayed, then renamed); readable by other users (a model server
      often runs as one) as the umask allows.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    check_model_and_tokenizer(model, task, spm_model_file)
    if not isinstance(sub_batch_size, int) or sub_batch_size < 0:
        raise ValueError(
            f"sub_batch_size must be an integer >= 0 (0: the whole batch at once); got {sub_batch_size!r}"
        )
    if jit_compile and not sub_batch_size:
        raise ValueError(
            "jit_compile pads each sub-batch to a bucket of at most sub_batch_size rows; sub_batch_size=0 "
            "(the whole batch at once) would compile a shape for each batch size: give sub_batch_size >= 1, "
            "or export without jit_compile"
        )
    if jit_compile and precision != "float32":
        raise ValueError(
            f"jit_compile is float32 only: XLA rounds a {precision} export's products and sums at other "
            "places than TensorFlow's kernels, and its labels and span answers moved away from the plain "
            f"{precision} export's; export {precision} without jit_compile"
        )
    preprocessing = served_preprocessing(
        model, task, max_seq_length, pair, do_lower_case, span_settings, keep_accents=keep_accents
    )
    max_seq_length, pair = preprocessing.max_seq_length, preprocessing.text_pair
    if task == "span":
        span_settings = span_settings or SpanSettings.of(model, max_seq_length)
    if max_seq_length > model_max_positions(model):
        raise ValueError(
            f"max_seq_length={max_seq_length} exceeds the model's max_position_embeddings="
            f"{model_max_positions(model)}"
        )
    config = getattr(model, "encoder", model).config
    check_fits_vocabulary(spm_model_file, config.vocab_size, "the model's albert config")
    export_dir = os.fspath(export_dir) if file_io.is_remote(export_dir) else os.path.abspath(export_dir)
    if file_io.exists(export_dir):
        raise ValueError(
            f"{export_dir} already exists; TF Serving versions are never overwritten: use a new one"
        )
    model = with_precision(model, precision)
    tokenizer = InGraphTokenizer(
        spm_model_file, preprocessing.do_lower_case, keep_accents=preprocessing.keep_accents
    )
    functions = _Functions(model, tokenizer, task, max_seq_length, pair, span_settings, sub_batch_size)
    num_choices = getattr(model, "num_choices", None)
    buckets, token_requests = None, ()
    if jit_compile:
        rows = compiled_blocks.row_buckets(sub_batch_size)
        widths = compiled_blocks.width_buckets(max_seq_length)
        buckets = ([count * (num_choices or 1) for count in rows], widths)  # the model's rows per bucket
        token_requests = warmup.bucket_requests(
            task, [(count, width) for count in rows for width in widths], tokenizer.cls_id, tokenizer.sep_id,
            num_choices,
        )  # fmt: skip
    with _blocks_as_functions(getattr(model, "encoder", model), buckets):
        signatures, methods = _signatures(functions)
    root = tf.Module()
    root.tokenizer = tokenizer  # the SentencePiece model resource, created by the init op
    root.weights = _captured_variables(signatures)

    def write(folder):
        options = tf.saved_model.SaveOptions(experimental_custom_gradients=False)
        tf.saved_model.save(root, folder, signatures=signatures, options=options)
        _finish_proto(folder, methods)
        warmup.write_warmup_requests(folder, task, pair, warmup_texts, num_choices, token_requests)
        with Servable(folder) as servable:  # what the model server does when it loads a version
            servable.replay_warmup()

    # On object stores the version's files appear one by one: saved_model.pb, which the server waits for,
    # comes last.
    return file_io.publish_directory(export_dir, write, last=("saved_model.pb",))


def check_model_and_tokenizer(model, task, spm_model_file):
    """Raises ValueError unless `model` is what `task` exports and, for a task model that keeps its
    SentencePiece model, spm_model_file is that model (by content): another one's ids mean other pieces."""
    expected = {
        "encoder": models.AlbertEncoder, "pretraining": models.AlbertPretrainer,
        "classifier": models.AlbertClassifier, "span": models.AlbertSpanLabeler,
        "multiple_choice": models.AlbertMultipleChoice,
    }[task]  # fmt: skip
    if not isinstance(model, expected):
        raise ValueError(f"task {task!r} exports an {expected.__name__}, not an {type(model).__name__}")
    kept = getattr(model, "spm_model", None)
    if kept is not None and file_io.read_bytes(spm_model_file) != kept:
        raise ValueError(
            f"{spm_model_file} is not the SentencePiece model the {type(model).__name__} was trained with "
            "(it keeps its own): its ids would mean other pieces"
        )


def served_preprocessing(
    model, task, max_seq_length=None, pair=None, do_lower_case=None, span_settings=None, keep_accents=None
):  # fmt: skip
    """The `Preprocessing` an export of model for task tokenizes by: a task model's own, which the given
    values (None: not given) must agree with; the given ones, or defaults, for the encoder and pretraining."""
    if task in ("encoder", "pretraining"):
        return Preprocessing(
            max_seq_length=max_seq_length or 128,
            text_pair=bool(pair),
            do_lower_case=True if do_lower_case is None else do_lower_case,
            keep_accents=bool(keep_accents),
        )
    what = f"the {type(model).__name__}"
    if task in ("span", "multiple_choice"):  # two segments, always: question and context; article and choice
        if pair is False:
            raise ValueError(f"a {task} model takes two texts per example; pair=False contradicts it")
        pair = True
    if task == "span" and span_settings is not None:
        if max_seq_length is not None and max_seq_length != span_settings.max_seq_length:
            raise ValueError(
                f"max_seq_length={max_seq_length} contradicts the span settings' "
                f"max_seq_length={span_settings.max_seq_length}"
            )
        max_seq_length = span_settings.max_seq_length
    # A model built in code without one: everything must be given.
    kept = getattr(model, "preprocessing", None) or Preprocessing()
    kept = kept.agreeing(
        what,
        max_seq_length=max_seq_length,
        text_pair=pair,
        do_lower_case=do_lower_case,
        keep_accents=keep_accents,
    )
    missing = [name for name, value in (("max_seq_length", kept.max_seq_length), ("pair", kept.text_pair))
               if value is None]  # fmt: skip
    if missing:
        raise ValueError(f"{what} does not record its {' or '.join(missing)}: give it")
    return kept


def model_max_positions(model):
    return getattr(model, "encoder", model).config.max_position_embeddings
