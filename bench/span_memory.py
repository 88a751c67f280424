r"""The memory one span request takes in a served ALBERT-base: how it grows with the context's windows, and
where the export's bound on windows per encoder call (SPAN_WINDOWS_PER_CALL, or --sub_batch_size) stops it.

    python bench/span_memory.py                      # sub-batches of 8 (the default) and of 64 windows
    python bench/span_memory.py --sub_batch_sizes=0  # 0: the export's cap, 64 windows a call

ALBERT-base shapes (random weights, the sample SentencePiece model's 8,000 pieces), windows of 384 tokens 128
apart, float32, on the CPU. Each export is loaded by TensorFlow's C++ loader (albert_tf.serving.servable) in
a fresh process per context size, answers a short request, then one question over the context; the figure is
that request's peak resident memory above what the process held before it (Linux: /proc/self/clear_refs
resets the peak, VmHWM reads it).
"""

import os
import subprocess
import sys
import tempfile

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(REPO, "albert_tf", "sample", "spm_8k.model")
flags.DEFINE_list("sub_batch_sizes", ["8", "64"], "The exports' --sub_batch_size values.")
flags.DEFINE_list("words", ["100", "3000", "12000"], "Context sizes, in words.")
FLAGS = flags.FLAGS

SERVE = """
import sys, time
from albert_tf.serving.servable import Servable
def kilobytes(name):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(name + ":"))
with Servable(sys.argv[1]) as servable:
    servable.run("serving_default", {"text": ["Who?"], "text_b": ["Tom is here."]})
    with open("/proc/self/clear_refs", "w") as file:
        file.write("5")
    before, started = kilobytes("VmRSS"), time.perf_counter()
    context = "Tom is here. " * (int(sys.argv[2]) // 3)
    servable.run("serving_default", {"text": ["Who is here?"], "text_b": [context]})
    print((kilobytes("VmHWM") - before) / 1024, time.perf_counter() - started, flush=True)
"""


def export(path, sub_batch_size):
    import dataclasses

    from albert_tf import shipped
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder
    from albert_tf.models.preprocessing import Preprocessing
    from albert_tf.models.task_models import AlbertSpanLabeler
    from albert_tf.serving.export import export_saved_model

    config = AlbertConfig.from_json_file(shipped.config_file("albert_base"))
    model = AlbertSpanLabeler(
        AlbertEncoder(dataclasses.replace(config, vocab_size=8000)),
        preprocessing=Preprocessing(max_seq_length=384, text_pair=True),
    )
    return export_saved_model(model, SPM, path, "span", sub_batch_size=sub_batch_size)


def main(argv):
    del argv
    from albert_tf.serving.export import SPAN_WINDOWS_PER_CALL
    from albert_tf.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(SPM)
    print(f"CPU: {describe()}", flush=True)
    print("sub_batch_size | words | windows | peak above before (MB) | MB per window in a call | seconds")
    with tempfile.TemporaryDirectory() as folder:
        for size in map(int, FLAGS.sub_batch_sizes):
            path = export(os.path.join(folder, str(size), "1"), size)
            for words in FLAGS.words:  # a fresh process each: freed memory stays resident for the next
                result = subprocess.run(
                    [sys.executable, "-c", SERVE, path, words], capture_output=True, text=True, check=True
                )
                grown, seconds = result.stdout.split()
                tokens = len(tokenizer.encode("Tom is here. " * (int(words) // 3)))
                windows = 1 + max(0, -(-(tokens - (384 - 3 - 4)) // 128))
                per_call = min(windows, size or SPAN_WINDOWS_PER_CALL, SPAN_WINDOWS_PER_CALL)
                print(f"{size} | {words} | {windows} | {float(grown):.0f} | "
                      f"{float(grown) / per_call:.1f} | {float(seconds):.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    app.run(main)
