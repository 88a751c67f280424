r"""ALBERT on a device: LiteRT file sizes, single-thread latency and memory against the SavedModel and
BERT-base, and how often a quantized file's labels agree with the float32 SavedModel's.

    python bench/on_device.py                                           # sizes, latency, memory
    python bench/on_device.py --model_dir=runs/doc_topics --dev_file=data/doc_topics/dev.csv --parts=agreement

Sizes, latency and memory: ALBERT-base and BERT-base classifiers (the shipped configs `albert_base` and
`bert_base`, two classes, random weights: size and speed do not depend on them), tokenizing with the sample
SentencePiece model, exported by `export_litert` as float32, float16 and dynamic-range int8 files (tokenizer
inside), and ALBERT-base's float32 SavedModel by `export_saved_model`. Each model is timed in its own fresh
process at batch 1 on a text of 128 tokens or more (every model computes 128), on one thread (LiteRT's
`num_threads=1`; TensorFlow with one intra-op and one inter-op thread, `TF_NUM_INTRAOP_THREADS`/
`TF_NUM_INTEROP_THREADS`, loaded by TensorFlow's C++ loader as TF Serving loads it): a few calls to warm up,
then --calls timed, their median; the rounds alternate the models, and the process's peak resident memory
(VmHWM) is printed beside. Goals: ALBERT-base int8 with its tokenizer at most 15 MB and at most 1/7 of
BERT-base's int8 file; int8 at least 2x the SavedModel at batch 1.

Agreement: a fine-tuned classifier's model directory exported by the commands (`export_saved_model`, and
`export_litert` at each quantization), every dev text answered by each; labels that agree with the float32
SavedModel's, accuracy against the dev labels, and the float32 file's largest probability difference. Goal:
99% of labels, accuracy within 1 point, float probabilities within 1e-4.
"""

import csv
import os
import statistics
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
QUANTIZATIONS = ("none", "float16", "dynamic_int8")
flags.DEFINE_list("parts", ["size", "latency"], "size, latency, agreement.")
flags.DEFINE_list("models", ["albert_base", "bert_base"], "Configs (albert_tf/configs/NAME.json).")
flags.DEFINE_integer("calls", 20, "Timed calls per process (after 3 to warm up).")
flags.DEFINE_integer("rounds", 2, "Rounds; each runs every model once, in turn.")
flags.DEFINE_string("model_dir", None, "agreement: a fine-tuned classifier's model directory.")
flags.DEFINE_string("dev_file", None, "agreement: its dev CSV (text, label).")
flags.DEFINE_string("work_dir", None, "Where the exports go (default: a temporary folder).")
FLAGS = flags.FLAGS

# One process per measurement: load, answer 3 calls, time --calls, print the median seconds and the peak
# resident MB. argv: kind (litert or savedmodel), path, calls, the text.
TIME = """
import statistics, sys, time
kind, path, calls, text = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if kind == "litert":
    from albert_tf.serving.litert import load
    model = load(path, num_threads=1)
    call = lambda: model([text])
else:
    from albert_tf.serving.servable import Servable
    model = Servable(path)
    call = lambda: model.run("serving_default", {"text": [text]})
for _ in range(3):
    call()
times = []
for _ in range(calls):
    started = time.perf_counter()
    call()
    times.append(time.perf_counter() - started)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(statistics.median(times), peak / 1024)
"""


def cpu_int8_flags():
    """The CPU's int8 dot-product flags (VNNI speeds up int8 matrix products)."""
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        flags_line = next((line for line in info if line.startswith("flags")), "")
    found = [flag for flag in ("avx512_vnni", "avx_vnni", "amx_int8") if flag in flags_line.split()]
    return " ".join(found) or "none of avx512_vnni/avx_vnni/amx_int8"


def long_text():
    """Sample-corpus lines joined until the text holds more than SEQ pieces."""
    from albert_tf.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(SPM)
    text = ""
    with open(CORPUS, encoding="utf-8") as file:
        for line in file:
            text = f"{text} {line.strip()}".strip()
            if len(tokenizer.encode(text)) > SEQ:
                return text
    raise SystemExit("litert: the sample corpus is shorter than one text of 128 pieces")


def exports(name, folder):
    """{kind: path} for config name: the float32 SavedModel and a LiteRT file per quantization."""
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.serving.export import export_saved_model
    from albert_tf.serving.litert import export_litert

    keras.utils.set_random_seed(1)
    config = AlbertConfig.from_json_file(shipped.config_file(name))
    model = AlbertClassifier(AlbertEncoder(config), num_classes=2)
    paths = {"savedmodel": os.path.join(folder, name, "savedmodel", "1")}
    export_saved_model(model, SPM, paths["savedmodel"], "classifier", SEQ, pair=False)
    for quantize in QUANTIZATIONS:
        paths[quantize] = os.path.join(folder, name, f"{quantize}.tflite")
        export_litert(model, SPM, paths[quantize], "classifier", SEQ, pair=False, quantize=quantize)
    return paths


def folder_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def timed(kind, path, text):
    """(median seconds a call, peak resident MB) of a fresh single-thread process."""
    environment = {**os.environ, "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
    arguments = [sys.executable, "-c", TIME, "litert" if kind != "savedmodel" else kind, path,
                 str(FLAGS.calls), text]  # fmt: skip
    done = subprocess.run(arguments, capture_output=True, text=True, check=False, env=environment)
    if done.returncode:
        raise SystemExit(f"litert: timing {path} failed:\n{done.stderr[-3000:]}")
    seconds, peak = done.stdout.split()[-2:]
    return float(seconds), float(peak)


def sizes_and_latency(folder):
    paths = {name: exports(name, folder) for name in FLAGS.models}
    sizes = {}
    if "size" in FLAGS.parts:
        print("model | SavedModel MB | LiteRT float32 MB | float16 MB | dynamic int8 MB")
        for name, kinds in paths.items():
            sizes[name] = {kind: folder_bytes(path) / 1e6 for kind, path in kinds.items()}
            row = " | ".join(f"{sizes[name][kind]:.1f}" for kind in ("savedmodel", *QUANTIZATIONS))
            print(f"{name} | {row}", flush=True)
        if {"albert_base", "bert_base"} <= set(sizes):
            albert, bert = sizes["albert_base"]["dynamic_int8"], sizes["bert_base"]["dynamic_int8"]
            print(f"ALBERT-base int8 {albert:.1f} MB (goal 15), {albert / bert:.3f} of BERT-base's int8 "
                  f"{bert:.1f} MB (goal 1/7 = 0.143)")  # fmt: skip
    if "latency" in FLAGS.parts:
        text = long_text()
        kinds = ("savedmodel", *QUANTIZATIONS)
        results = {(name, kind): [] for name in paths for kind in kinds}
        for round_ in range(FLAGS.rounds):
            for name in paths:
                for kind in kinds:
                    results[name, kind].append(timed(kind, paths[name][kind], text))
                    seconds, peak = results[name, kind][-1]
                    print(f"round {round_ + 1}: {name} {kind}: {seconds * 1e3:.1f} ms, peak {peak:.0f} MB",
                          flush=True)  # fmt: skip
        print("model | kind | ms a call (median of rounds) | peak MB | SavedModel / this")
        for name in paths:
            base = statistics.median(s for s, _ in results[name, "savedmodel"])
            for kind in kinds:
                seconds = statistics.median(s for s, _ in results[name, kind])
                peak = max(p for _, p in results[name, kind])
                print(f"{name} | {kind} | {seconds * 1e3:.1f} | {peak:.0f} | {base / seconds:.2f}x")


def run_command(module, arguments):
    done = subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"litert: {module} failed:\n{done.stderr[-3000:]}")


def agreement(folder):
    """Each LiteRT file's labels against the float32 SavedModel's on --dev_file, exported by the commands."""
    import numpy as np

    from albert_tf.serving.litert import load
    from albert_tf.serving.servable import Servable

    if not (FLAGS.model_dir and FLAGS.dev_file):
        raise app.UsageError("--parts=agreement needs --model_dir and --dev_file")
    with open(FLAGS.dev_file, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    texts, gold = [row["text"] for row in rows], [row["label"] for row in rows]
    saved = os.path.join(folder, "agreement", "savedmodel", "1")
    run_command("albert_tf.export_saved_model",
                [f"--model_dir={FLAGS.model_dir}", "--task=classifier", f"--export_dir={saved}"])  # fmt: skip
    answers = {}
    with Servable(saved) as model:
        served = [model.run("serving_default", {"text": texts[i : i + 32]}) for i in range(0, len(texts), 32)]
    answers["savedmodel"] = (
        [label.decode() for part in served for label in part["label"]],
        np.concatenate([part["probabilities"] for part in served]),
    )
    for quantize in QUANTIZATIONS:
        path = os.path.join(folder, "agreement", f"{quantize}.tflite")
        run_command("albert_tf.export_litert", [f"--model_dir={FLAGS.model_dir}", "--task=classifier",
                                                f"--output={path}", f"--quantize={quantize}"])  # fmt: skip
        model = load(path)
        results = [model(texts[i : i + 32]) for i in range(0, len(texts), 32)]
        answers[quantize] = (
            [label.decode() for part in results for label in part["label"]],
            np.concatenate([part["probabilities"] for part in results]),
        )
    labels, probabilities = answers["savedmodel"]
    accuracy = np.mean([a == b for a, b in zip(labels, gold, strict=True)])
    print(f"{len(texts)} dev texts of {FLAGS.dev_file}; SavedModel float32 accuracy {accuracy:.4f}")
    print("file | labels as the SavedModel's | accuracy | points from the SavedModel's | max |prob diff|")
    for quantize in QUANTIZATIONS:
        other, other_probabilities = answers[quantize]
        agree = np.mean([a == b for a, b in zip(other, labels, strict=True)])
        other_accuracy = np.mean([a == b for a, b in zip(other, gold, strict=True)])
        difference = float(np.max(np.abs(other_probabilities - probabilities)))
        print(f"{quantize} | {agree:.2%} | {other_accuracy:.4f} | {100 * (other_accuracy - accuracy):+.2f} | "
              f"{difference:.2e}")  # fmt: skip


def main(argv):
    del argv
    print(f"CPU: {describe()}; int8 flags: {cpu_int8_flags()}", flush=True)
    from importlib.metadata import version

    print(f"TensorFlow {version('tensorflow')}, ai-edge-litert {version('ai-edge-litert')}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = FLAGS.work_dir or temporary
        if {"size", "latency"} & set(FLAGS.parts):
            sizes_and_latency(folder)
        if "agreement" in FLAGS.parts:
            agreement(folder)


if __name__ == "__main__":
    app.run(main)
