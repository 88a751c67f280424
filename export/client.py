r"""Client for an ALBERT SavedModel under TF Serving: raw text in, the model's outputs out.

    python export/client.py --text="A fine film." --text_b="I liked it."               # REST, port 8501
    python export/client.py --grpc --text="A fine film." --text_b="I liked it."        # gRPC, port 8500
    python export/client.py --signature=classify --text="A fine film." --text_b="..."  # Classify API (gRPC)

REST needs nothing beyond the standard library; gRPC needs `pip install tensorflow-serving-api`.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request


def rest_body(texts, texts_b=None, signature="serving_default"):
    """The JSON body of a REST predict request (columnar "inputs" format)."""
    inputs = {"text": list(texts)}
    if texts_b is not None:
        inputs["text_b"] = list(texts_b)
    return {"signature_name": signature, "inputs": inputs}


class ServerError(RuntimeError):
    """The model server answered with an error (REST: its HTTP status and the message of its {"error": ...}
    body; gRPC: its status code and message), or no server answered."""


def predict_rest(url, texts, texts_b=None):
    """POSTs to e.g. http://localhost:8501/v1/models/albert:predict; returns the "outputs" dict.

    An error response (a missing input, an unknown signature, ...) raises ServerError with the server's own
    message, which TF Serving sends as the JSON body {"error": "..."}.
    """
    body = json.dumps(rest_body(texts, texts_b)).encode("utf-8")
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["outputs"]
    except urllib.error.HTTPError as error:
        raise ServerError(f"HTTP {error.code}: {server_message(error.read())}") from None
    except urllib.error.URLError as error:  # nothing listening, an unknown host, ...
        raise ServerError(f"no answer from {url}: {error.reason}") from None


def server_message(body):
    """The "error" of a TF Serving REST error body, or the body itself when it is not that JSON."""
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return text


def predict_request(model, texts, texts_b=None, signature="serving_default"):
    """A tensorflow_serving PredictRequest for raw texts."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(list(texts), dtype=tf.string))
    if texts_b is not None:
        request.inputs["text_b"].CopyFrom(tf.make_tensor_proto(list(texts_b), dtype=tf.string))
    return request


def classification_request(model, texts, texts_b=None):
    """A ClassificationRequest: one tf.Example per text, with "text" (and "text_b") bytes features."""
    from tensorflow_serving.apis import classification_pb2

    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = "classify"
    for index, text in enumerate(texts):
        example = request.input.example_list.examples.add()
        example.features.feature["text"].bytes_list.value.append(text.encode("utf-8"))
        if texts_b is not None:
            example.features.feature["text_b"].bytes_list.value.append(texts_b[index].encode("utf-8"))
    return request


def call_grpc(target, request):
    """Sends a Predict or Classify request to host:port; returns the response proto.

    An error status (INVALID_ARGUMENT for a missing input, UNAVAILABLE when no server listens, ...) raises
    ServerError with its code and the server's message.
    """
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        method = stub.Classify if request.DESCRIPTOR.name == "ClassificationRequest" else stub.Predict
        try:
            return method(request, timeout=30)
        except grpc.RpcError as error:
            raise ServerError(f"gRPC {error.code().name}: {error.details()}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", action="append", required=True, help="Repeat for a batch.")
    parser.add_argument("--text_b", action="append", help="Second texts of pairs, as many as --text.")
    parser.add_argument("--model", default="albert")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--grpc", action="store_true", help="Use gRPC (port 8500) instead of REST (8501).")
    parser.add_argument("--port", type=int, help="The server's port, when not the default 8500 / 8501.")
    parser.add_argument("--signature", default="serving_default", choices=["serving_default", "classify"])
    args = parser.parse_args(argv)
    if args.text_b is not None and len(args.text_b) != len(args.text):
        parser.error(f"{len(args.text)} --text but {len(args.text_b)} --text_b")
    grpc = args.grpc or args.signature == "classify"  # the Classify API is gRPC's
    port = args.port or (8500 if grpc else 8501)
    parts = (args.model, args.text, args.text_b)  # of the request
    try:
        if args.signature == "classify":
            print(call_grpc(f"{args.host}:{port}", classification_request(*parts)))
        elif grpc:
            print(call_grpc(f"{args.host}:{port}", predict_request(*parts)))
        else:
            url = f"http://{args.host}:{port}/v1/models/{args.model}:predict"
            print(json.dumps(predict_rest(url, args.text, args.text_b), indent=2))
    except ServerError as error:
        print(f"client.py: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
