"""What a run's memory peaked at so far: the process on the host, and each accelerator TensorFlow uses.

The progress line says it, so a user sees what a batch size, a sequence length or a precision cost.
"""

import resource
import sys

import tensorflow as tf


def host_peak_bytes():
    """The process's peak resident set so far, in bytes: VmHWM of /proc/self/status on Linux (getrusage's
    ru_maxrss there also counts the image before exec, so a run started by a large process, a notebook or a
    test runner, would report that process's size); ru_maxrss elsewhere (kilobytes, bytes on macOS)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def device_peak_bytes():
    """{device name: peak bytes TensorFlow allocated on it so far} for each GPU and TPU of this process;
    empty on a CPU-only host."""
    peaks = {}
    for device in tf.config.list_logical_devices("GPU") + tf.config.list_logical_devices("TPU"):
        try:
            peak = tf.config.experimental.get_memory_info(device.name)["peak"]
        except (ValueError, tf.errors.OpError):  # a device whose allocator keeps no statistics
            continue
        peaks[device.name.split("device:")[-1]] = peak
    return peaks


def peak_text():
    """ "peak memory 1.23 GB host" (and ", 10.50 GB GPU:0" per accelerator): for the progress line."""
    parts = [f"{host_peak_bytes() / 1e9:.2f} GB host"]
    parts += [f"{peak / 1e9:.2f} GB {name}" for name, peak in device_peak_bytes().items()]
    return "peak memory " + ", ".join(parts)
