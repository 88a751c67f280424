"""TF Serving warm-up requests: `assets.extra/tf_serving_warmup_requests`, PredictionLog records the model
server replays when it loads a version, so the first real request does not pay for graph initialization,
nor, in a compiled export, for compiling a shape: one `serve_token_ids` request per bucket comes first."""

import os

import numpy as np
import tensorflow as tf

from albert_tf import file_io
from albert_tf.features import ENCODER_INPUTS

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
DEFAULT_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT shares parameters across layers, 1,000 times over.",
    "",
)


def bucket_requests(task, shapes, cls_id, sep_id, num_choices=None):
    """serve_token_ids inputs that run the encoder's blocks at each (rows, width) of shapes, in order.

    Each row is [CLS] then [SEP] to its end, every position a real token (none is a trailing [CLS], which
    serve_token_ids takes for padding), so a request of rows <= the export's rows per sub-batch is one
    sub-batch of exactly that shape. Returns a list of dicts name → int32 array [rows, width] ([rows,
    num_choices, width] for multiple choice; pretraining adds masked_lm_positions [rows, 1])."""
    requests = []
    for rows, width in shapes:
        shape = [rows, num_choices, width] if task == "multiple_choice" else [rows, width]
        word_ids = np.full(shape, sep_id, np.int32)
        word_ids[..., 0] = cls_id
        values = (word_ids, np.ones(shape, np.int32), np.zeros(shape, np.int32))
        inputs = dict(zip(ENCODER_INPUTS, values, strict=True))
        if task == "pretraining":
            inputs["masked_lm_positions"] = np.zeros([rows, 1], np.int32)
        requests.append(inputs)
    return requests


def write_warmup_requests(export_dir, task, pair, texts=None, num_choices=None, token_requests=()):
    """Writes token_requests (bucket_requests: a compiled export's every bucket) on serve_token_ids, then one
    Predict request on serving_default per batch size 1 and len(texts)."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    texts = list(texts or DEFAULT_TEXTS)
    requests = [("serve_token_ids", inputs) for inputs in token_requests]
    for batch in (texts[:1], texts):
        inputs = {"text": batch}
        if task == "multiple_choice":
            inputs["choices"] = [[text] * num_choices for text in batch]
        elif pair:
            inputs["text_b"] = batch[::-1]
        requests.append(("serving_default", inputs))
    path = os.path.join(export_dir, WARMUP_FILE)
    file_io.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(signature_name=signature_name)
            )
            for name, value in inputs.items():
                dtype = tf.int32 if isinstance(value, np.ndarray) else tf.string  # ids, or lists of texts
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
