"""`python` for the documents' commands without TensorFlow's start-up in each of them: a server that has
imported TensorFlow and Keras forks a child per command, which runs it as a fresh interpreter would.

A fresh Python spends about 5 CPU-seconds importing TensorFlow (tests/commands.py); the README's and docs'
walk runs some thirty commands. `start(folder)` starts the server and writes `folder/python`, a client that
hands its arguments, working directory, environment and its standard input, output and error (the file
descriptors themselves) to the server, and exits with the command's status. The child runs `-m module`,
`-c code`, `-` (a script on standard input) or `script.py`, with sys.argv and sys.path as `python` sets them;
anything else (another option first) the client runs in the real interpreter. The server imports nothing of
the repository but this module (which each child forgets), so the commands import the package from their
working directory, as a fresh `python` does. What the interpreter reads at start-up from the environment
(PYTHONPATH, PYTHONHASHSEED, PYTHONWARNINGS) is the server's; TensorFlow is imported as the commands import
it (TF_CPP_MIN_LOG_LEVEL=1 unless set).

How a command starts in a fresh interpreter is tested elsewhere: tests/test_tf_startup.py, the quick start
from the installed wheel, the notebook's kernel, the serving loaders.
"""

import json
import os
import pathlib
import runpy
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
import types

REPO = str(pathlib.Path(__file__).resolve().parents[1])
_STATUS = struct.Struct("!i")
_LENGTH = struct.Struct("!Q")

CLIENT = """#!{python} -SE
import json, os, socket, struct, sys

args = sys.argv[1:]
if not args or (args[0].startswith("-") and args[0] not in ("-m", "-c", "-")):
    os.execv({python!r}, [{python!r}, *args])
request = json.dumps({{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
with socket.socket(socket.AF_UNIX) as connection:
    connection.connect({address!r})
    socket.send_fds(connection, [struct.pack("!Q", len(request)) + request], [0, 1, 2])
    status = b""
    while len(status) < 4:
        received = connection.recv(4 - len(status))
        if not received:
            sys.exit(1)  # the command died without a status (a signal)
        status += received
sys.exit(struct.unpack("!i", status)[0])
"""


def start(folder):
    """Starts the server (preloading TensorFlow: seconds) and writes the client `folder/python`. Returns the
    server's Popen, to terminate when done."""
    folder = pathlib.Path(folder)
    address = str(folder / "server.socket")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.command_server", address], cwd=REPO, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={name: value for name, value in os.environ.items() if name != "PYTHONPATH"},
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not os.path.exists(address):
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the command server did not start (exit status {server.poll()})")
        time.sleep(0.1)
    client = folder / "python"
    client.write_text(CLIENT.format(python=sys.executable, address=address))
    client.chmod(0o755)
    return server


def _receive(connection):
    """(request, its three file descriptors)."""
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < _LENGTH.size or len(data) < _LENGTH.size + _LENGTH.unpack_from(data)[0]:
        more = connection.recv(1 << 16)
        if not more:
            raise EOFError("the client left before sending its request")
        data += more
    return json.loads(data[_LENGTH.size :]), fds


def _run(request):
    """In the child: runs the command as `python ARGS` would; returns its exit status."""
    argv = request["argv"]
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # The server's own modules go: the command imports what it imports from its own directory.
    for name in [name for name in sys.modules if name == "tests" or name.startswith("tests.")]:
        del sys.modules[name]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    try:
        if argv[0] == "-m":
            sys.argv = ["-m", *argv[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] in ("-c", "-"):
            sys.argv = ["-c", *argv[2:]] if argv[0] == "-c" else argv
            sys.path.insert(0, "")
            source, name = (argv[1], "<string>") if argv[0] == "-c" else (sys.stdin.read(), "<stdin>")
            exec(compile(source, name, "exec"), main.__dict__)
        else:
            sys.argv = argv
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stopped:
        if stopped.code is None or isinstance(stopped.code, int):
            return stopped.code or 0
        print(stopped.code, file=sys.stderr)
        return 1
    except BaseException as error:  # as the interpreter shows it: from the command's frames on
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        return 1
    return 0


def serve(address):
    """Preloads TensorFlow and Keras, then forks a child per client until terminated."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # as tf_startup imports it for a command
    import tensorflow as tf

    tf.config.list_physical_devices()
    import keras  # noqa: F401

    # The repository's folder, put first by `-m`, goes: each command puts its own first entry in.
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != REPO]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address + ".partial")
    listener.listen(16)
    os.rename(address + ".partial", address)  # the client connects once the server listens
    while True:
        connection, _ = listener.accept()
        fds = []
        try:  # a client that failed to send its request is its own failure, not the server's
            request, fds = _receive(connection)
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                try:
                    listener.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command waits for its own children
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    _exit(connection, _run(request))
                finally:  # a child never goes on serving, whatever failed
                    os._exit(1)
        except (OSError, EOFError, ValueError):
            traceback.print_exc()
        connection.close()
        for fd in fds:
            os.close(fd)


def _exit(connection, status):
    """The child's end: as the interpreter ends (its threads joined), then the status to the client."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    sys.stdout.flush()
    sys.stderr.flush()
    connection.sendall(_STATUS.pack(status))
    os._exit(status)


if __name__ == "__main__":
    serve(sys.argv[1])
