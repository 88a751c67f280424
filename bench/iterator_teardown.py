r"""How long deleting a tf.data iterator takes after it has run a while, on idle cores and on cores kept busy
by other processes (as a training process or the test suite's other worker keeps them): a plain autotuned
pipeline, the same with tf.data's autotuning off, and one distributed by MirroredStrategy over two logical
CPU devices (as the engine's runs under --strategy=mirrored).

    python bench/iterator_teardown.py                  # 5 trials each, after 8 s of use
    python bench/iterator_teardown.py --seconds=20 --trials=3
    python bench/iterator_teardown.py --layouts=plain,plain_no_autotune --loads=busy --seconds=6 --trials=10

Each trial is a fresh process: the pipeline (parallel map, prefetch) read for the given time, then the
iterator deleted and collected; the time that takes is printed. "busy" runs one busy-looping process per
core beside each trial.

Why a deletion waits: it cancels the iterator's autotune thread (`Model::OptimizeLoop`, asleep in a timed
wait between optimizations, a period that doubles up to 60 s) and joins it. The cancellation runs the
thread's wake-up callback before it marks itself cancelled (`CancellationManager::StartCancel`), so a
thread that wakes in between sees "not cancelled" and sleeps out the rest of its period while the deletion
waits. The window is short; busy cores, which deschedule the deleting thread inside it, open it. Without
autotuning there is no such thread; a distributed dataset's per-device pipelines keep theirs whatever the
dataset's options say.
"""

import os
import subprocess
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

flags.DEFINE_list("seconds", ["8"], "How long each iterator is read before it is deleted.")
flags.DEFINE_integer("trials", 5, "Processes per layout, load and time.")
flags.DEFINE_list("layouts", ["plain", "plain_no_autotune", "mirrored"], "Pipelines to delete.")
flags.DEFINE_list("loads", ["idle", "busy"], "Cores idle, or busy with one busy-looping process per core.")
FLAGS = flags.FLAGS
BUSY = "while True: pass"

TRIAL = """
import gc, sys, time
import tensorflow as tf
layout, seconds = sys.argv[1], float(sys.argv[2])
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
def dataset(context=None):
    numbers = tf.data.Dataset.range(10**9)
    numbers = numbers.map(lambda x: tf.cast(x, tf.float32) * 2.0, num_parallel_calls=tf.data.AUTOTUNE)
    numbers = numbers.batch(8).prefetch(tf.data.AUTOTUNE)
    if layout.endswith("no_autotune"):
        options = tf.data.Options()
        options.autotune.enabled = False
        numbers = numbers.with_options(options)
    return numbers
if layout.startswith("plain"):
    iterator = iter(dataset())
else:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    iterator = iter(strategy.distribute_datasets_from_function(dataset))
started = time.perf_counter()
while time.perf_counter() - started < seconds:
    next(iterator)
started = time.perf_counter()
del iterator
gc.collect()
print(time.perf_counter() - started)
"""


def trial(layout, seconds, busy):
    """Seconds the deletion took in a fresh process, with `busy` busy-looping processes beside it."""
    load = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        result = subprocess.run(
            [sys.executable, "-c", TRIAL, layout, seconds], capture_output=True, text=True, check=True
        )
    finally:
        for process in load:
            process.kill()
            process.wait()
    return float(result.stdout.split()[-1])


def main(argv):
    del argv
    print(f"CPU: {describe()}", flush=True)
    print("layout | cores | seconds read | deletion (s), each trial | waits over 1 s")
    for load in FLAGS.loads:
        busy = os.cpu_count() if load == "busy" else 0
        for layout in FLAGS.layouts:
            for seconds in FLAGS.seconds:
                times = [trial(layout, seconds, busy) for _ in range(FLAGS.trials)]
                waits = sum(t > 1 for t in times)
                print(
                    f"{layout} | {load} | {seconds} | "
                    f"{', '.join(f'{t:.2f}' for t in times)} | {waits} of {len(times)}",
                    flush=True,
                )


if __name__ == "__main__":
    app.run(main)
