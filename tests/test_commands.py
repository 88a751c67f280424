"""The forked commands of tests/commands.py run as `python -m` would run them, without importing TensorFlow
again."""

import json
import os
import signal
import time

from tests import commands


def test_a_forked_command_has_tensorflow_imported_and_its_own_argv_directory_and_environment(tmp_path):
    environment = {"PATH": os.environ["PATH"], "ONLY_HERE": "yes", "EXIT_CODE": "3"}
    result = commands.run("tests.probe", ["--flag=a b", "c"], cwd=tmp_path, env=environment)
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["tensorflow_before"] is True  # the fork server imported it
    assert report["argv"] == ["--flag=a b", "c"]
    assert report["cwd"] == report["path"] == str(tmp_path)
    assert report["environment"] == environment
    assert result.stderr == "probe: on stderr\n"


def test_a_forked_command_is_killed_and_its_streams_combined_in_order(tmp_path):
    ready = tmp_path / "ready"
    environment = {**os.environ, "READY_FILE": str(ready), "SLEEP_SECONDS": "600"}
    sleeping = commands.start("tests.probe", [], env=environment, combined=True)
    while not ready.exists():
        time.sleep(0.01)
    assert sleeping.poll() is None
    sleeping.send_signal(signal.SIGKILL)
    killed = sleeping.result(timeout=60)
    assert killed.returncode == -signal.SIGKILL and killed.stdout == killed.stderr
    printed, on_stderr = killed.stdout.splitlines()
    assert json.loads(printed)["argv"] == [] and on_stderr == "probe: on stderr"
