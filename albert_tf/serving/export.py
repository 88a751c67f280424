"""SavedModels that stock TF Serving loads and feeds from raw text.

    export_saved_model(model, "spm.model", "models/albert/1", task="classifier", max_seq_length=128)

Signatures (see DESIGN.md, "Serving contract"):
    serving_default   raw strings → named outputs:
                        text [, text_b]       → classifier: logits, probabilities
                        text [, text_b]       → encoder: pooled_output, sequence_output
                        text [, text_b]       → pretraining: sop_logits, sop_probabilities
                        text (question), text_b (context) → span: start_logits, end_logits, answer_start,
                                                answer_end (token positions), answer_score, answer_text
                        text [batch], choices [batch, num_choices] → multiple_choice: logits, probabilities
    preprocess        the same strings → input_word_ids, input_mask, input_type_ids
    serve_token_ids   those three (+ masked_lm_positions for pretraining) → the model's outputs
    classify/regress  (classifier) serialized tf.Example with "text" [and "text_b"] bytes features, for
                      TF Serving's Classify and Regress APIs: classes + scores, or outputs.

The graph holds TensorFlow core ops and tensorflow-text ops that exist in tensorflow-text 2.12 (what the
stock model server links), with the tokenizer pinned to the CPU. Text is tokenized exactly as
`AlbertTokenizer` does (ALBERT normalization and digit-comma rule), truncated to max_seq_length and padded
only to the longest text of the batch (a short request computes less; real tokens' outputs do not change).
"""

import os

import tensorflow as tf

from albert_tf.atomic_file import publish_directory
from albert_tf.data.tf_tokenizer import InGraphTokenizer
from albert_tf.serving import warmup

TASKS = ("encoder", "pretraining", "classifier", "span", "multiple_choice")
MAX_ANSWER_TOKENS = 30
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
CPU = "/device:CPU:0"
# The tensorflow-text ops the in-graph tokenizer uses: all in tensorflow-text 2.12, all CPU-only.
TOKENIZER_OPS = frozenset(
    {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceStringToIdOp", "SentencepieceDetokenizeOp",
     "NormalizeUTF8"}
)  # fmt: skip


def _strings(name, shape=(None,)):
    return tf.TensorSpec(shape, tf.string, name=name)


def _ids(name, shape=(None, None)):
    return tf.TensorSpec(shape, tf.int32, name=name)


class _ServingModule(tf.Module):
    """Holds the Keras model and the in-graph tokenizer; its tf.functions are the signatures."""

    def __init__(self, model, tokenizer, task, max_seq_length, pair, num_choices=None):
        super().__init__(name="albert_serving")
        self.model = model
        self.tokenizer = tokenizer
        self.task = task
        self.max_seq_length = max_seq_length
        self.pair = pair
        self.num_choices = num_choices

    def _pack(self, text, text_b=None):
        with tf.device("/CPU:0"):
            ids_b = None if text_b is None else self.tokenizer.tokenize(text_b)
            # Padded to the batch's longest text, not to max_seq_length: a short request computes less.
            return self.tokenizer.pack(
                self.tokenizer.tokenize(text), ids_b, self.max_seq_length, pad_to_multiple=1
            )

    def _run(self, features):
        """The model's outputs for packed ids, named for serving (float32)."""
        if self.task == "encoder":
            out = self.model(features, training=False)
            return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}
        if self.task == "pretraining":
            out = self.model(features, training=False)
            return {"mlm_logits": out["mlm_logits"], "sop_logits": out["sop_logits"]}
        if self.task in ("classifier", "multiple_choice"):
            logits = self.model(features, training=False)
            if self.task == "classifier" and logits.shape[-1] == 1:
                return {"logits": logits}
            return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}
        return dict(self.model(features, training=False))  # span

    def preprocess(self, text, text_b=None):
        return self._pack(text, text_b)

    def serving_default(self, text, text_b=None):
        features = self._pack(text, text_b)
        if self.task == "pretraining":
            # The sentence-order head needs no masked positions: ask for position 0.
            features["masked_lm_positions"] = tf.zeros([tf.shape(text)[0], 1], tf.int32)
            sop_logits = self._run(features)["sop_logits"]
            return {"sop_logits": sop_logits, "sop_probabilities": tf.nn.softmax(sop_logits)}
        outputs = self._run(features)
        if self.task == "span":
            outputs.update(self._best_span(outputs, features))
        return outputs

    def serve_choices(self, text, choices):
        """text [batch] (passage and question), choices [batch, num_choices] → scores per choice."""
        count = tf.shape(choices)[1]
        repeated = tf.reshape(tf.repeat(text[:, None], count, axis=1), [-1])
        features = self._pack(repeated, tf.reshape(choices, [-1]))
        features = {k: tf.reshape(v, [-1, self.num_choices, tf.shape(v)[-1]]) for k, v in features.items()}
        return self._run(features)

    def _best_span(self, outputs, features):
        """The best answer inside the context: highest start + end score with start ≤ end < start + 30."""
        start, end = outputs["start_logits"], outputs["end_logits"]  # [B, S]
        context = (features["input_type_ids"] == 1) & (features["input_word_ids"] != self.tokenizer.sep_id)
        scores = start[:, :, None] + end[:, None, :]  # [B, S (start), S (end)]
        seq = tf.shape(start)[1]
        length = tf.range(seq)[None, :] - tf.range(seq)[:, None]  # end − start
        allowed = (length >= 0) & (length < MAX_ANSWER_TOKENS)
        allowed = allowed[None] & context[:, :, None] & context[:, None, :]
        flat = tf.reshape(tf.where(allowed, scores, -1e9), [tf.shape(start)[0], -1])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)
        answer_start, answer_end = best // seq, best % seq
        positions = tf.ragged.range(answer_start, answer_end + 1)
        answer_ids = tf.gather(features["input_word_ids"], positions, batch_dims=1)
        with tf.device("/CPU:0"):
            answer_text = self.tokenizer.detokenize(answer_ids)
        return {
            "answer_start": answer_start,
            "answer_end": answer_end,
            "answer_score": tf.reduce_max(flat, axis=-1),
            "answer_text": answer_text,
        }


def _signatures(module):
    """The concrete functions to save, by signature name."""
    task, pair = module.task, module.pair
    token_spec = {name: _ids(name) for name in ("input_word_ids", "input_mask", "input_type_ids")}
    if task == "multiple_choice":
        choices = tf.function(
            module.serve_choices, input_signature=[_strings("text"), _strings("choices", (None, None))]
        )
        shape = (None, module.num_choices, None)
        token_spec = {name: _ids(name, shape) for name in token_spec}
        return {
            "serving_default": choices.get_concrete_function(),
            "serve_token_ids": tf.function(module._run).get_concrete_function(token_spec),
        }
    texts = [_strings("text"), _strings("text_b")] if pair else [_strings("text")]
    signatures = {
        "serving_default": tf.function(module.serving_default, input_signature=texts).get_concrete_function(),
        "preprocess": tf.function(module.preprocess, input_signature=texts).get_concrete_function(),
    }
    if task == "pretraining":
        token_spec["masked_lm_positions"] = _ids("masked_lm_positions")
    signatures["serve_token_ids"] = tf.function(module._run).get_concrete_function(token_spec)
    if task == "classifier":
        signatures[_example_signature_name(module)] = _example_function(module)
    return signatures


def _example_signature_name(module):
    return "regress" if module.model.output_shape[-1] == 1 else "classify"


def _example_function(module):
    """serialized tf.Example [batch] ("text", optionally "text_b") → classes/scores or outputs."""
    spec = {"text": tf.io.FixedLenFeature([], tf.string)}
    if module.pair:
        spec["text_b"] = tf.io.FixedLenFeature([], tf.string)

    @tf.function(input_signature=[_strings("inputs")])
    def from_examples(inputs):
        parsed = tf.io.parse_example(inputs, spec)
        outputs = module._run(module._pack(parsed["text"], parsed.get("text_b")))
        if "probabilities" not in outputs:
            return {"outputs": outputs["logits"][:, 0]}
        count = tf.shape(outputs["probabilities"])[1]
        classes = tf.strings.as_string(tf.range(count))
        return {
            "classes": tf.tile(classes[None], [tf.shape(inputs)[0], 1]),
            "scores": outputs["probabilities"],
        }

    return from_examples.get_concrete_function()


def _finish_proto(export_dir, methods):
    """Edits saved_model.pb where tf.saved_model.save cannot be told:

    - method names: TF2 saves every signature as a Predict one; TF Serving's Classify and Regress APIs
      need their own;
    - the CPU pin of the SentencePiece model resource: tensorflow-text creates it without a device, so a
      model server with a GPU would try to place it there (no GPU kernel). Every tensorflow-text node and
      the resource object (the export's only resource) get /device:CPU:0.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    path = os.path.join(export_dir, "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    with open(path, "rb") as file:
        proto.ParseFromString(file.read())
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
    with open(path, "wb") as file:
        file.write(proto.SerializeToString())


def export_saved_model(
    model, spm_model_file, export_dir, task, max_seq_length=128, pair=False, do_lower_case=True,
    warmup_texts=None,
):  # fmt: skip
    """Writes a SavedModel for TF Serving at export_dir (the version folder, e.g. models/albert/1).

    Args:
      model: the Keras model for `task`: AlbertEncoder, AlbertPretrainer, AlbertClassifier,
        AlbertSpanLabeler or AlbertMultipleChoice.
      spm_model_file: its SentencePiece model (embedded in the graph as a constant).
      task: one of TASKS.
      max_seq_length: texts are tokenized, packed and truncated to this many tokens.
      pair: serving_default takes text and text_b (always for span; ignored for multiple_choice).
      warmup_texts: texts for assets.extra/tf_serving_warmup_requests (default: a few samples).

    The directory appears whole or not at all (written under a temporary name, then renamed).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    if max_seq_length > model_max_positions(model):
        raise ValueError(
            f"max_seq_length={max_seq_length} exceeds the model's max_position_embeddings="
            f"{model_max_positions(model)}"
        )
    pair = pair or task == "span"
    num_choices = model.num_choices if task == "multiple_choice" else None
    tokenizer = InGraphTokenizer(spm_model_file, do_lower_case)
    module = _ServingModule(model, tokenizer, task, max_seq_length, pair, num_choices)
    signatures = _signatures(module)
    export_dir = os.path.abspath(export_dir)
    if os.path.exists(export_dir):
        raise ValueError(
            f"{export_dir} already exists; TF Serving versions are never overwritten: use a new one"
        )

    def write(folder):
        options = tf.saved_model.SaveOptions(experimental_custom_gradients=False)
        tf.saved_model.save(module, folder, signatures=signatures, options=options)
        methods = {"classify": CLASSIFY_METHOD, "regress": REGRESS_METHOD}
        _finish_proto(folder, {name: method for name, method in methods.items() if name in signatures})
        warmup.write_warmup_requests(folder, task, pair, warmup_texts, num_choices)

    return publish_directory(export_dir, write)


def model_max_positions(model):
    encoder = getattr(model, "encoder", model)
    return encoder.config.max_position_embeddings
