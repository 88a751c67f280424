"""TensorFlow imported for a command, without the C++ start-up notices in the user's terminal.

Importing TensorFlow 2.21 on a CPU machine prints, whatever `TF_CPP_MIN_LOG_LEVEL` says (they are written
before TensorFlow reads it, tensorflow/tensorflow#100442):

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 ... port.cc:153] oneDNN custom operations are on. You may see slightly different numerical ...
    I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
    E0000 ... cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: ...

each import line twice. `import_tensorflow_quietly()`, which each command calls before anything imports
TensorFlow (the fine-tuning commands once their data is read), imports TensorFlow and initializes its devices
with the process's stderr going to a temporary file, then writes back every line but those notices; the two
CUDA lines are notices only on a machine without an NVIDIA driver (on a GPU machine they say why the GPU is
not used). Later C++ messages are filtered by TensorFlow itself at `TF_CPP_MIN_LOG_LEVEL=1`, which we set:
INFO lines (the CPU-feature notice of cpu_feature_guard.cc among them, and the SavedModel loader's on each
load) are dropped, warnings and errors show. BUILD.md, "What TensorFlow prints on a CPU", shows them.

TensorFlow's Python INFO lines (absl logging: one per checkpoint saved, all-reduce traced and SavedModel
signature written), which absl's `app.run` turns on, are held back too: a command prints its own progress.
`--verbosity=0` (`-v 0`) on a command line shows them.

Commands do this; importing the library (a notebook, a test) leaves TensorFlow's logging as the user has it,
unless the notebook calls this first, as the shipped one does. A `TF_CPP_MIN_LOG_LEVEL` in the environment
wins: then nothing is captured or dropped.
"""

import os
import re
import sys
import tempfile

# Lines that say nothing a user can act on, on any machine.
_NOTICES = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|\] oneDNN custom operations are on\."
)
# Lines that are notices where there is no GPU: the CUDA platform failing to start without a driver.
_CPU_MACHINE_NOTICES = re.compile(
    r"\] Could not find cuda drivers on your machine|\] failed call to cuInit: "
)
NVIDIA_DRIVER = "/proc/driver/nvidia/version"


def is_startup_notice(line, gpu_driver=None):
    """Whether a line of TensorFlow's start-up output is a notice to keep out of the terminal.

    Args:
      line: one line of stderr.
      gpu_driver: whether an NVIDIA driver is installed; None: look for it.
    """
    if _NOTICES.search(line):
        return True
    if gpu_driver is None:
        gpu_driver = os.path.exists(NVIDIA_DRIVER)
    return not gpu_driver and bool(_CPU_MACHINE_NOTICES.search(line))


def import_tensorflow_quietly():
    """Imports TensorFlow and initializes its devices, writing back to stderr all but the start-up notices.

    Does nothing to the C++ notices when TensorFlow is already imported (too late to help) or when the
    environment sets TF_CPP_MIN_LOG_LEVEL (the user's choice). Python INFO lines are held back in any case,
    unless --verbosity was given.
    """
    _hold_back_info_lines()
    if "tensorflow" in sys.modules or "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()  # starts the GPU platform: where cuInit fails without a GPU
        finally:
            # Whatever happened (an import error included), the terminal gets stderr back, and every line
            # that is not a notice.
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not is_startup_notice(line)]
            sys.stderr.write("".join(kept))
            sys.stderr.flush()


def import_tensorflow_quietly_for(values):
    """import_tensorflow_quietly when a flag value (a string, or a list of them) names a remote file system
    (file_io.is_remote), for commands that import TensorFlow only to read one: first, before reading it
    would import TensorFlow with its notices."""
    from albert_tf import file_io

    items = [item for value in values for item in (value if isinstance(value, list | tuple) else [value])]
    if any(isinstance(item, str) and file_io.is_remote(item) for item in items):
        import_tensorflow_quietly()


def _hold_back_info_lines():
    """absl logging at WARNING, unless the command line set --verbosity (absl's app.run sets INFO)."""
    from absl import flags, logging

    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
