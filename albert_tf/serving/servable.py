"""A SavedModel loaded and run the way TF Serving does it: TensorFlow's C++ loader, through the C API.

    servable = Servable("models/albert/1")
    servable.replay_warmup()                                   # what the server does before serving
    servable.run("serving_default", {"text": np.array([b"A fine film."])})["probabilities"]

`tensorflow_model_server` loads a version with the C++ `LoadSavedModel` (the MetaGraphDef, the restore op, the
init op) and answers a request with `Session::Run` on the tensor names its SignatureDef gives. It never runs
the Python object graph that `tf.saved_model.load` rebuilds, so a model that `tf.saved_model.load` serves can
still fail in the server (Keras 3 variables saved twice, for one). `Servable` calls that same C++ loader
through TensorFlow's C API (`TF_LoadSessionFromSavedModel`, `TF_SessionRun`, exported by the
`libtensorflow_cc.so.2` of the installed wheel) with ctypes, checks requests as the server's Predict API does,
and replays `assets.extra/tf_serving_warmup_requests` as the server does when it loads a version.
"""

import ctypes
import glob
import importlib.util
import os

import numpy as np

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
# SignatureDef method names TF Serving's Predict API accepts (tensorflow_serving/servables/tensorflow/
# predict_util.cc, VerifySignature).
SERVING_METHODS = (
    "tensorflow/serving/predict",
    "tensorflow/serving/classify",
    "tensorflow/serving/regress",
)
_STRING = 7  # TF_STRING; numeric TF_DataType values below are those of numpy's dtypes
_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 10: np.bool_, 19: np.float16}
_TSTRING_SIZE = 24  # sizeof(TF_TString)


class ServingError(RuntimeError):
    """The C++ loader or a session run failed; the message is TensorFlow's, with what was being done."""


class _Output(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("length", ctypes.c_size_t), ("deallocator", ctypes.c_void_p)]


def _package_dir(name):
    return list(importlib.util.find_spec(name).submodule_search_locations)[0]


def _c_api():
    """libtensorflow_cc.so.2 of the installed tensorflow wheel, with the argument types we call it with."""
    lib = ctypes.CDLL(os.path.join(_package_dir("tensorflow"), "libtensorflow_cc.so.2"))
    signatures = {
        "TF_NewStatus": ([], ctypes.c_void_p),
        "TF_DeleteStatus": ([ctypes.c_void_p], None),
        "TF_GetCode": ([ctypes.c_void_p], ctypes.c_int),
        "TF_Message": ([ctypes.c_void_p], ctypes.c_char_p),
        "TF_LoadLibrary": ([ctypes.c_char_p, ctypes.c_void_p], ctypes.c_void_p),
        "TF_NewSessionOptions": ([], ctypes.c_void_p),
        "TF_DeleteSessionOptions": ([ctypes.c_void_p], None),
        "TF_NewGraph": ([], ctypes.c_void_p),
        "TF_DeleteGraph": ([ctypes.c_void_p], None),
        "TF_NewBuffer": ([], ctypes.POINTER(_Buffer)),
        "TF_DeleteBuffer": ([ctypes.POINTER(_Buffer)], None),
        "TF_LoadSessionFromSavedModel": (
            [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.POINTER(_Buffer),
                ctypes.c_void_p,
            ],
            ctypes.c_void_p,
        ),  # fmt: skip
        "TF_CloseSession": ([ctypes.c_void_p, ctypes.c_void_p], None),
        "TF_DeleteSession": ([ctypes.c_void_p, ctypes.c_void_p], None),
        "TF_GraphOperationByName": ([ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p),
        "TF_SessionRun": (
            [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.POINTER(_Output),
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_int,
                ctypes.POINTER(_Output),
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.c_void_p,
            ],
            None,
        ),  # fmt: skip
        "TF_AllocateTensor": (
            [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_size_t],
            ctypes.c_void_p,
        ),
        "TF_DeleteTensor": ([ctypes.c_void_p], None),
        "TF_TensorData": ([ctypes.c_void_p], ctypes.c_void_p),
        "TF_TensorByteSize": ([ctypes.c_void_p], ctypes.c_size_t),
        "TF_TensorType": ([ctypes.c_void_p], ctypes.c_int),
        "TF_NumDims": ([ctypes.c_void_p], ctypes.c_int),
        "TF_Dim": ([ctypes.c_void_p, ctypes.c_int], ctypes.c_int64),
        "TF_StringInit": ([ctypes.c_void_p], None),
        "TF_StringCopy": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t], None),
        "TF_StringGetDataPointer": ([ctypes.c_void_p], ctypes.c_void_p),
        "TF_StringGetSize": ([ctypes.c_void_p], ctypes.c_size_t),
    }
    for name, (arguments, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = arguments, result
    return lib


_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        _LIB = _c_api()
        _load_tensorflow_text_ops(_LIB)
    return _LIB


def _load_tensorflow_text_ops(lib):
    """Registers tensorflow-text's op libraries, which the model server links (TF_LoadLibrary of each)."""
    for path in sorted(glob.glob(os.path.join(_package_dir("tensorflow_text"), "python", "ops", "_*.so"))):
        with _Status(lib) as status:
            lib.TF_LoadLibrary(path.encode(), status.pointer)
            status.check(f"loading {path}")


class _Status:
    def __init__(self, lib):
        self.lib, self.pointer = lib, lib.TF_NewStatus()

    def check(self, doing):
        if self.lib.TF_GetCode(self.pointer):
            raise ServingError(f"{doing}: {self.lib.TF_Message(self.pointer).decode(errors='replace')}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lib.TF_DeleteStatus(self.pointer)


class Servable:
    """One SavedModel version in a C++ session, as `tensorflow_model_server` holds it.

    Args:
      export_dir: the version folder (e.g. models/albert/1).
      tags: the MetaGraphDef tags to load (the server's default: "serve").

    Attributes:
      signatures: signature name → SignatureDef proto (inputs and outputs with their tensor names).
    """

    def __init__(self, export_dir, tags=("serve",)):
        from tensorflow.core.protobuf import meta_graph_pb2

        self.export_dir = os.fspath(export_dir)
        lib = self._lib = _lib()
        tag_array = (ctypes.c_char_p * len(tags))(*[tag.encode() for tag in tags])
        options, self._graph, meta_graph = lib.TF_NewSessionOptions(), lib.TF_NewGraph(), lib.TF_NewBuffer()
        try:
            with _Status(lib) as status:
                self._session = lib.TF_LoadSessionFromSavedModel(
                    options, None, self.export_dir.encode(), tag_array, len(tags), self._graph, meta_graph,
                    status.pointer,
                )  # fmt: skip
                status.check(f"loading the SavedModel {self.export_dir}")
            proto = meta_graph_pb2.MetaGraphDef.FromString(
                ctypes.string_at(meta_graph.contents.data, meta_graph.contents.length)
            )
        finally:
            lib.TF_DeleteBuffer(meta_graph)
            lib.TF_DeleteSessionOptions(options)
        self.signatures = {name: s for name, s in proto.signature_def.items() if not name.startswith("__")}

    def run(self, signature_name, inputs):
        """The signature's outputs for inputs, as the server's Predict API computes them.

        Args:
          signature_name: a key of `signatures`.
          inputs: input name → list or numpy array (strings as bytes or str), exactly the signature's
            inputs; lists take the input's dtype, arrays must have it.

        Returns:
          output name → numpy array (strings as bytes objects).
        """
        signature = self.signatures.get(signature_name)
        if signature is None:
            raise ServingError(f'{self.export_dir}: serving signature key "{signature_name}" not found')
        if signature.method_name not in SERVING_METHODS:
            raise ServingError(
                f"{self.export_dir}: signature {signature_name} has method_name {signature.method_name!r}, "
                f"not one of {', '.join(SERVING_METHODS)}"
            )
        if set(inputs) != set(signature.inputs):
            raise ServingError(
                f"{signature_name} takes inputs {sorted(signature.inputs)}, got {sorted(inputs)}"
            )
        names = list(inputs)
        outputs = list(signature.outputs)
        in_ports = [self._port(signature.inputs[name].name) for name in names]
        out_ports = [self._port(signature.outputs[name].name) for name in outputs]
        lib = self._lib
        in_tensors = (ctypes.c_void_p * len(names))(
            *[_to_tensor(lib, inputs[name], signature.inputs[name].dtype, name) for name in names]
        )
        out_tensors = (ctypes.c_void_p * len(outputs))()
        try:
            with _Status(lib) as status:
                lib.TF_SessionRun(
                    self._session, None,
                    (_Output * len(names))(*in_ports), in_tensors, len(names),
                    (_Output * len(outputs))(*out_ports), out_tensors, len(outputs),
                    None, 0, None, status.pointer,
                )  # fmt: skip
                status.check(f"running {signature_name} of {self.export_dir}")
            return {name: _from_tensor(lib, out_tensors[i]) for i, name in enumerate(outputs)}
        finally:
            for tensor in in_tensors:
                lib.TF_DeleteTensor(tensor)
            for tensor in out_tensors:
                if tensor:
                    lib.TF_DeleteTensor(tensor)

    def warmup_requests(self):
        """(signature name, inputs) of each Predict request in the version's warm-up file, in order."""
        import tensorflow as tf
        from tensorflow_serving.apis import prediction_log_pb2

        path = os.path.join(self.export_dir, WARMUP_FILE)
        requests = []
        for record in tf.data.TFRecordDataset(path):
            log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
            if log.WhichOneof("log_type") != "predict_log":
                raise ServingError(f"{path}: a {log.WhichOneof('log_type')} record; only Predict is written")
            request = log.predict_log.request
            inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
            requests.append((request.model_spec.signature_name or "serving_default", inputs))
        return requests

    def replay_warmup(self):
        """Runs every warm-up request, as the server does before it serves a version (a failing one fails
        the load there); returns their outputs in order."""
        return [self.run(name, inputs) for name, inputs in self.warmup_requests()]

    def close(self):
        if self._session:
            with _Status(self._lib) as status:
                self._lib.TF_CloseSession(self._session, status.pointer)
                self._lib.TF_DeleteSession(self._session, status.pointer)
            self._lib.TF_DeleteGraph(self._graph)
            self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _port(self, tensor_name):
        operation, _, index = tensor_name.partition(":")
        pointer = self._lib.TF_GraphOperationByName(self._graph, operation.encode())
        if not pointer:
            raise ServingError(f"{self.export_dir}: the graph has no operation {operation!r}")
        return _Output(pointer, int(index or 0))


def _to_tensor(lib, value, dtype, name):
    """A new TF_Tensor holding value for an input of TF_DataType dtype.

    Lists take the input's dtype, as the server's REST API does with JSON; numpy arrays must have it, as
    in a gRPC request's TensorProto.
    """
    if dtype == _STRING:
        array = np.asarray(value, dtype=object)
        if isinstance(value, np.ndarray) and value.dtype.kind not in "OSU":
            raise ServingError(f"input {name} is a string tensor, got {value.dtype}")
        dims = (ctypes.c_int64 * array.ndim)(*array.shape)
        flat = [item.encode() if isinstance(item, str) else bytes(item) for item in array.reshape(-1)]
        tensor = lib.TF_AllocateTensor(_STRING, dims, array.ndim, _TSTRING_SIZE * len(flat))
        data = lib.TF_TensorData(tensor)
        for index, item in enumerate(flat):
            element = data + index * _TSTRING_SIZE
            lib.TF_StringInit(element)
            lib.TF_StringCopy(element, item, len(item))
        return tensor
    if dtype not in _DTYPES:
        raise ServingError(f"input {name} has an unsupported dtype (TF_DataType {dtype})")
    if isinstance(value, np.ndarray) and value.dtype != _DTYPES[dtype]:
        raise ServingError(f"input {name} is {np.dtype(_DTYPES[dtype])}, got {value.dtype}")
    array = np.ascontiguousarray(value, dtype=_DTYPES[dtype])
    dims = (ctypes.c_int64 * array.ndim)(*array.shape)
    tensor = lib.TF_AllocateTensor(dtype, dims, array.ndim, array.nbytes)
    if array.nbytes:
        ctypes.memmove(lib.TF_TensorData(tensor), array.ctypes.data, array.nbytes)
    return tensor


def _from_tensor(lib, tensor):
    """A numpy copy of a TF_Tensor (strings as an object array of bytes)."""
    shape = tuple(lib.TF_Dim(tensor, axis) for axis in range(lib.TF_NumDims(tensor)))
    code, data = lib.TF_TensorType(tensor), lib.TF_TensorData(tensor)
    if code == _STRING:
        count = int(np.prod(shape, dtype=np.int64))
        items = np.empty(count, dtype=object)
        for index in range(count):
            element = data + index * _TSTRING_SIZE
            items[index] = ctypes.string_at(
                lib.TF_StringGetDataPointer(element), lib.TF_StringGetSize(element)
            )
        return items.reshape(shape)
    if code not in _DTYPES:
        raise ServingError(f"unsupported output dtype code {code}")
    size = lib.TF_TensorByteSize(tensor)
    values = ctypes.string_at(data, size) if size else b""
    return np.frombuffer(values, dtype=_DTYPES[code]).reshape(shape).copy()
