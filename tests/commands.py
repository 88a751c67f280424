"""The toolkit's commands as the tests run them: `python -m albert_tf.<command> flags`, in a child process.

A fresh Python spends 3 to 5 CPU-seconds importing TensorFlow before a command does anything. Tests that
check what a command does (trains, resumes, exports, refuses input) run it in a process forked from a
server that has already imported TensorFlow as a command does (tf_startup.import_tensorflow_quietly) and
Keras: multiprocessing's fork server, one per test process, preloaded with tests/preloaded.py. The child
takes the working directory, environment and output files it is given and runs the module as `python -m`
does (runpy, as __main__, with the working directory first on sys.path).

How a command starts is tested in fresh interpreters: tests/test_tf_startup.py (start-up notices), the
`*_before_tensorflow_starts` tests (-X importtime), the installed wheel, the notebook's kernel, the serving
loaders and the memory measurements. The documents' blocks run their `python` through a server of the same
kind (tests/command_server.py).
"""

import multiprocessing
import os
import pathlib
import runpy
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
_server = None


def _context():
    global _server
    if _server is None:
        _server = multiprocessing.get_context("forkserver")
        _server.set_forkserver_preload(["tests.preloaded"])
    return _server


def _run_as_main(module, args, cwd, env, stdout, stderr, two_devices):
    """In the forked child: the command's output files, directory, environment and argv, then the module."""
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path in ((1, stdout), (2, stderr)):
        handle = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(handle, fd)
        os.close(handle)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path.insert(0, os.getcwd())
    if two_devices:  # before anything initializes TensorFlow's context
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


class Command:
    """A started command: its pid, poll(), wait(timeout), send_signal() and, once it ended, its output."""

    def __init__(self, module, args, cwd, env, two_devices, combined, quiet):
        self.args = ["python", "-m", module, *args]
        self._folder = tempfile.mkdtemp(prefix="command.")
        self._stdout = os.path.join(self._folder, "stdout")
        self._stderr = self._stdout if combined else os.path.join(self._folder, "stderr")
        for path in {self._stdout, self._stderr}:
            pathlib.Path(path).touch()
        streams = (os.devnull, os.devnull) if quiet else (self._stdout, self._stderr)
        environment = dict(os.environ if env is None else env)
        self._process = _context().Process(
            target=_run_as_main, args=(module, list(args), str(cwd), environment, *streams, two_devices)
        )
        self._process.start()
        self.pid = self._process.pid

    def poll(self):
        return self._process.exitcode

    def wait(self, timeout=None):
        self._process.join(timeout)
        if self._process.exitcode is None:
            self._process.kill()
            self._process.join()
            raise subprocess.TimeoutExpired(self.args, timeout, self._read(self._stdout))
        return self._process.exitcode

    def send_signal(self, signal_number):
        if self.poll() is None:  # an ended child's pid is its server's to reap, and may be reused
            os.kill(self.pid, signal_number)

    def _read(self, path):
        return pathlib.Path(path).read_text(encoding="utf-8", errors="replace")

    def result(self, timeout=None):
        """Waits for the end: a CompletedProcess with text stdout and stderr (both the same when combined)."""
        try:
            code = self.wait(timeout)
            return subprocess.CompletedProcess(
                self.args, code, self._read(self._stdout), self._read(self._stderr)
            )
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)


def start(module, args, *, cwd=REPO, env=None, two_devices=False, combined=False, quiet=False):
    """Starts `python -m module args` in a forked child.

    Args:
      env: its whole environment (this process's when None).
      two_devices: split the CPU into two logical devices first (a MirroredStrategy over two replicas).
      combined: stderr into stdout, in the order written.
      quiet: discard the output.
    """
    return Command(module, args, cwd, env, two_devices, combined, quiet)


def run(module, args, *, timeout=600, **options):
    """`python -m module args` in a forked child, to its end: a CompletedProcess (text); options: start's."""
    return start(module, args, **options).result(timeout)
