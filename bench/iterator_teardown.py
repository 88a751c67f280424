r"""How long deleting a tf.data iterator takes after it has run a while: a plain one, one of a dataset
distributed by MirroredStrategy over two logical CPU devices (as the engine's runs under --strategy=mirrored),
and the distributed one with tf.data's autotuning off.

    python bench/iterator_teardown.py                  # 3 trials each, after 12, 20 and 25 s of use
    python bench/iterator_teardown.py --seconds=20 --trials=5

Each trial is a fresh process: an autotuned pipeline (parallel map, prefetch) read for the given time, then
the iterator deleted and collected; the time that takes is printed. A deletion that waits joins a thread of
the iterator: in the test suite's waits, gdb found it to be tf.data's autotune thread (`Model::OptimizeLoop`),
asleep in a timed wait that the iterator's cancellation did not end. The waits come and go between runs.
"""

import os
import subprocess
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

flags.DEFINE_list("seconds", ["12", "20", "25"], "How long each iterator is read before it is deleted.")
flags.DEFINE_integer("trials", 3, "Processes per layout and time.")
FLAGS = flags.FLAGS
LAYOUTS = ("plain", "mirrored", "mirrored_no_autotune")

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
if layout == "plain":
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


def main(argv):
    del argv
    print(f"CPU: {describe()}", flush=True)
    print("layout | seconds read | deletion (s), each trial")
    for layout in LAYOUTS:
        for seconds in FLAGS.seconds:
            times = []
            for _ in range(FLAGS.trials):
                result = subprocess.run(
                    [sys.executable, "-c", TRIAL, layout, seconds], capture_output=True, text=True, check=True
                )
                times.append(float(result.stdout.split()[-1]))
            print(f"{layout} | {seconds} | {', '.join(f'{t:.2f}' for t in times)}", flush=True)


if __name__ == "__main__":
    app.run(main)
