"""A command for tests/test_commands.py (`python -m tests.probe ARGS`): prints as JSON whether TensorFlow
was imported before it ran, its argv, working directory, first sys.path entry and environment, then a line
on stderr; touches READY_FILE if set, sleeps SLEEP_SECONDS and exits with EXIT_CODE."""

import json
import os
import pathlib
import sys
import time

report = {"tensorflow_before": "tensorflow" in sys.modules, "argv": sys.argv[1:], "cwd": os.getcwd(),
          "path": sys.path[0], "environment": dict(os.environ)}  # fmt: skip
print(json.dumps(report), flush=True)
print("probe: on stderr", file=sys.stderr, flush=True)
if "READY_FILE" in os.environ:
    pathlib.Path(os.environ["READY_FILE"]).touch()
time.sleep(float(os.environ.get("SLEEP_SECONDS", "0")))
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
