r"""What serving ALBERT costs in memory against BERT: export bytes, and the resident memory of a model server
process that loaded the export and answered a batch, for ALBERT-base and BERT-base (the shipped config
`bert_base`: BERT-base's shapes, nothing shared, no factorized embedding), float32 and bfloat16 exports,
under glibc's malloc (what the stock TF Serving binary uses) and under jemalloc and tcmalloc preloaded
(LD_PRELOAD).

    python bench/serving_memory.py              # batch 32 sentence pairs at 128 tokens
    python bench/serving_memory.py --batch=1 --allocators=glibc
    python bench/serving_memory.py --compiled=albert_base --allocators=glibc   # ALBERT's compiled export too

Both are albert_tf classifier exports (random weights: memory does not depend on them) of the configs' own
vocabulary sizes, tokenizing with the sample SentencePiece model. Each export is loaded by TensorFlow's C++
loader (albert_tf.serving.servable: what TF Serving runs) in a fresh process, which answers one batch; the
process's resident memory then (VmRSS) and its peak (VmHWM) are printed, and, as a floor, those of a process
that loaded a SavedModel holding nothing (one signature that adds 1) the same way: the loader, a session and
TensorFlow's runtime, which every served model pays. "Model" columns are a process's figure less that floor.
The export's variables are counted against the model's weights: ALBERT's shared layer is stored once.
jemalloc and tcmalloc come from Debian's libjemalloc2 and libtcmalloc-minimal4 (apt-get install).

`--compiled=albert_base` adds that model's float32 export with jit_compile=True (its blocks compiled by XLA
at every shape bucket; compiled exports are float32 only): its process replays the version's warm-up requests
before the batch, as the model server does when it loads a version, so it holds every bucket's compiled
code, the most such a server holds. Its "model" figures are compared with the second model's plain export.
"""

import ctypes.util
import os
import subprocess
import sys
import tempfile

from absl import app, flags

from albert_tf import shipped  # first: albert_tf's CPU defaults apply before TensorFlow is imported

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")
CORPUS = os.path.join(ROOT, "data", "sample", "sample_corpus.txt")
SEQ = 128
flags.DEFINE_integer("batch", 32, "Sentence pairs in the answered batch.")
flags.DEFINE_list("models", ["albert_base", "bert_base"], "Configs (albert_tf/configs/NAME.json).")
flags.DEFINE_list("precisions", ["float32", "bfloat16"], "Export precisions.")
flags.DEFINE_list("allocators", ["glibc", "jemalloc", "tcmalloc"], "Allocators of the serving processes.")
flags.DEFINE_list(
    "compiled", [], "Models (of --models) also exported with jit_compile=True, served after their warm-up."
)
FLAGS = flags.FLAGS

SERVE = """
import json, sys
import numpy as np
from albert_tf.serving.servable import Servable
def kilobytes(name):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(name + ":"))
request = json.loads(sys.argv[2])
if "x" in request:
    request["x"] = np.array(request["x"], np.float32)
with Servable(sys.argv[1]) as model:
    if sys.argv[3] == "warmup":  # as the model server loads a version (a compiled one compiles its buckets)
        model.replay_warmup()
    model.run("serving_default", request)
    print(kilobytes("VmRSS") / 1024, kilobytes("VmHWM") / 1024)
"""


def sample_pairs(count):
    with open(CORPUS, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip()][: 2 * count]
    return lines[0::2], lines[1::2]


def export(name, precision, folder, jit_compile=False):
    """(export path, parameters, weights the model has, variables the export stores)."""
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.serving.export import export_saved_model

    config = AlbertConfig.from_json_file(shipped.config_file(name))
    model = AlbertClassifier(AlbertEncoder(config), num_classes=2)
    path = export_saved_model(
        model, SPM, os.path.join(folder, name, precision, "compiled" if jit_compile else "plain", "1"),
        "classifier", SEQ, pair=True, precision=precision, jit_compile=jit_compile,
    )  # fmt: skip
    stored = [
        key for key, _ in tf.train.list_variables(os.path.join(path, "variables", "variables"))
        if not key.startswith("_CHECKPOINTABLE_OBJECT_GRAPH")
    ]  # fmt: skip
    parameters = sum(int(tf.size(weight)) for weight in model.weights)
    return path, parameters, len(model.weights), len(stored)


def minimal_export(folder):
    """A SavedModel whose one signature adds 1: what the loader and a session cost with no model."""
    import tensorflow as tf

    class AddOne(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            return {"y": x + 1.0}

    module = AddOne()
    path = os.path.join(folder, "minimal", "1")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


# The library each allocator preloads (None: glibc's malloc, linked into every process), its Debian package.
ALLOCATORS = {
    "glibc": (None, None),
    "jemalloc": ("jemalloc", "libjemalloc2"),
    "tcmalloc": ("tcmalloc_minimal", "libtcmalloc-minimal4"),
}


def preload(allocator):
    """The environment of a serving process with allocator's library preloaded."""
    if allocator not in ALLOCATORS:
        raise app.UsageError(f"--allocators: {allocator!r} is not one of {', '.join(ALLOCATORS)}")
    name, package = ALLOCATORS[allocator]
    if name is None:
        return dict(os.environ)
    library = ctypes.util.find_library(name)
    if library is None:
        raise app.UsageError(f"--allocators: lib{name} is not installed (Debian: apt-get install {package})")
    return {**os.environ, "LD_PRELOAD": library}


def serve(path, request, allocator, warmup=False):
    """(resident MB, peak MB) of a fresh process under allocator that loaded path (with warmup: and replayed
    its warm-up requests) and answered request."""
    import json

    arguments = [sys.executable, "-c", SERVE, path, json.dumps(request), "warmup" if warmup else "none"]
    result = subprocess.run(arguments, capture_output=True, text=True, check=True, env=preload(allocator))
    return [float(x) for x in result.stdout.split()]


def main(argv):
    del argv
    print(f"CPU: {describe()}", flush=True)
    texts = sample_pairs(FLAGS.batch)
    request = {"text": texts[0], "text_b": texts[1]}
    for allocator in FLAGS.allocators:
        preload(allocator)  # a missing library is named before any work
    if set(FLAGS.compiled) - set(FLAGS.models):
        raise app.UsageError(f"--compiled={','.join(FLAGS.compiled)}: give models of --models")
    rows, floors = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        minimal = minimal_export(folder)
        for allocator in FLAGS.allocators:
            floors[allocator], peak = serve(minimal, {"x": [1.0, 2.0]}, allocator)
            print(f"floor under {allocator} (the loader and a session, a model that adds 1): "
                  f"{floors[allocator]:.0f} MB resident, {peak:.0f} MB peak", flush=True)  # fmt: skip
        print("model | precision | allocator | parameters | weights / stored variables | export MB "
              "| resident MB (model) | peak MB (model)")  # fmt: skip
        for precision in FLAGS.precisions:
            compiled_names = [f"{name} compiled" for name in FLAGS.compiled] if precision == "float32" else []
            for name in FLAGS.models + compiled_names:
                compiled = name.endswith(" compiled")
                exported = export(name.removesuffix(" compiled"), precision, folder, jit_compile=compiled)
                path, parameters, weights, stored = exported
                size = folder_bytes(path) / 2**20
                for allocator in FLAGS.allocators:
                    rss, peak = serve(path, request, allocator, warmup=compiled)
                    model_rss, model_peak = rss - floors[allocator], peak - floors[allocator]
                    print(f"{name} | {precision} | {allocator} | {parameters / 1e6:.1f}M | {weights} / "
                          f"{stored} | {size:.1f} | {rss:.0f} ({model_rss:.0f}) | {peak:.0f} "
                          f"({model_peak:.0f})", flush=True)  # fmt: skip
                    rows[name, precision, allocator] = (size, model_rss, model_peak)
    if len(FLAGS.models) == 2:
        second = FLAGS.models[1]
        for first in [FLAGS.models[0]] + [f"{name} compiled" for name in FLAGS.compiled]:
            for precision in FLAGS.precisions:
                if first.endswith(" compiled") and precision != "float32":
                    continue  # compiled exports are float32 only
                for allocator in FLAGS.allocators:
                    a, b = rows[first, precision, allocator], rows[second, precision, allocator]
                    print(f"{first} / {second}, {precision}, {allocator}: export {a[0] / b[0]:.3f}x, model "
                          f"resident {a[1] / b[1]:.3f}x, model peak {a[2] / b[2]:.3f}x")  # fmt: skip


if __name__ == "__main__":
    app.run(main)
