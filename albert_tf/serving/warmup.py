"""TF Serving warm-up requests: `assets.extra/tf_serving_warmup_requests`, PredictionLog records the model
server replays when it loads a version, so the first real request does not pay for graph initialization."""

import os

import tensorflow as tf

from albert_tf import file_io

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
DEFAULT_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT shares parameters across layers, 1,000 times over.",
    "",
)


def write_warmup_requests(export_dir, task, pair, texts=None, num_choices=None):
    """Writes one Predict request on serving_default per batch size 1 and len(texts)."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    texts = list(texts or DEFAULT_TEXTS)
    path = os.path.join(export_dir, WARMUP_FILE)
    file_io.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for batch in (texts[:1], texts):
            inputs = {"text": batch}
            if task == "multiple_choice":
                inputs["choices"] = [[text] * num_choices for text in batch]
            elif pair:
                inputs["text_b"] = batch[::-1]
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(signature_name="serving_default")
            )
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value, dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
