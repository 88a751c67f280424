r"""Mutation score per module: how many of mutmut's mutants of a module its own fast tests kill.

    pip install -e ".[mutation]"                                     # mutmut
    python bench/mutation.py albert_tf/text/tokenizer.py            # one module (or several)
    python bench/mutation.py                                         # every module in MODULES, in turn
    python bench/mutation.py --retest albert_tf/text/tokenizer.py   # after new tests: the ones not killed
    python bench/mutation.py --survivors albert_tf/text/tokenizer.py  # each one not killed, as a diff
    python bench/mutation.py --report                               # the table of the last runs

A measurement, not a CI step (docs/contributing.md, "Mutation testing"). Each module is its own mutmut project
in --work/<module>/ (runs/, git-ignored): links to albert_tf/, tests/ and data/sample/, and the repository's
pyproject.toml with a [tool.mutmut] section naming the module and MODULES' tests for it. mutmut copies the
package into mutants/ there, writes each mutant of each function beside the original behind a switch, runs
the tests once to learn which reach which function, then for each mutant the tests that reach its function, in
one worker (--max-children 1), in the fast tier, each from a fork server that has imported the tests but run
none (TensorFlow's thread pools do not survive a fork of a process that has run ops: forking each mutant from
the process that ran the tests, mutmut's default, hangs). Decorated functions other than classmethods and
staticmethods are not mutated (mutmut leaves them alone), nor module-level code.

A mutant is killed when a test fails; a timeout counts as killed (the tests noticed), as in mutmut's own
score. "no tests" (no listed test reaches the function) counts as survived. Results are cached per function:
a run tests only mutants not yet tested (new or changed functions); --retest also finds again which tests
reach which function, then tests again those not killed.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from machine import describe

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Module → its own fast tests (files, or node ids where a file's other tests build slow fixtures). Graph code
# (batches, span_windows, span_answers) is reached through the tests that run it on tiny inputs.
MODULES = {
    "albert_tf/text/normalization.py": ["tests/text/test_tokenizer.py", "tests/text/test_tf_tokenizer.py"],
    "albert_tf/text/tokenizer.py": [
        "tests/text/test_tokenizer.py",
        "tests/text/test_tf_tokenizer.py::test_text_never_becomes_a_control_id_even_where_the_model_lacks_its_characters",
    ],
    "albert_tf/text/span_settings.py": ["tests/text/test_span_settings.py"],
    "albert_tf/text/span_decoding.py": ["tests/text/test_span_decoding.py"],
    "albert_tf/text/span_windows.py": [
        "tests/serving/test_export.py::test_in_graph_context_spans_are_the_python_tokenizers",
        "tests/serving/test_export.py::test_span_windows_without_room_for_question_and_context_are_refused",
    ],
    "albert_tf/text/span_answers.py": [
        "tests/text/test_span_answers.py",
        "tests/models/test_task_models.py::test_a_span_model_predicts_answers_on_raw_questions_and_contexts",
    ],
    "albert_tf/text/corpus.py": ["tests/text/test_corpus.py"],
    "albert_tf/text/batches.py": ["tests/text/test_batches.py"],
    "albert_tf/pretraining/data/instances.py": ["tests/pretraining/data/test_instances.py"],
    "albert_tf/pretraining/data/manifest.py": [
        "tests/pretraining/data/test_manifest.py",
        "tests/pretraining/data/test_local.py",
    ],
    "albert_tf/pretraining/data/records.py": ["tests/pretraining/data/test_records.py"],
    "albert_tf/finetuning/metrics.py": ["tests/finetuning/test_metrics.py"],
    "albert_tf/finetuning/task_data.py": ["tests/finetuning/test_task_data.py"],
    "albert_tf/config.py": ["tests/test_config.py"],
    "albert_tf/model_files.py": ["tests/test_model_files.py", "tests/models/test_model_dir.py"],
    "albert_tf/checkpoints/hf_names.py": ["tests/checkpoints/test_hf_names.py"],
    "albert_tf/checkpoints/tf1_variables.py": ["tests/checkpoints/test_tf1_variables.py"],
    "albert_tf/pretraining/data/units.py": [
        "tests/pretraining/data/test_local.py",
        "tests/pretraining/data/test_manifest.py",
    ],
    "albert_tf/training/collapse_guard.py": ["tests/training/test_collapse_guard.py"],
}
# One process, the fast tier (the repository's addopts ask for a worker per core). Without the plugins that
# cost each mutant's run a second and more: the unraisable-exception check (gc.collect over TensorFlow's
# objects) and Hypothesis' pytest plugin (it imports Hypothesis in every run; tests that use @given import
# it themselves, and run without the plugin).
PYTEST_ARGS = [
    *("-n", "0", "-m", "not slow", "-p", "no:cacheprovider"),
    *("-p", "no:unraisableexception", "-p", "no:hypothesispytest"),
]
DETECTED = ("killed", "timeout")


def project(work, module, tests):
    """The module's mutmut project folder, made or refreshed: links to the sources and its pyproject.toml."""
    folder = work / module.removesuffix(".py").replace("/", ".")
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for link, target in (("albert_tf", "albert_tf"), ("tests", "tests"), ("data/sample", "data/sample")):
        if not (folder / link).is_symlink():
            (folder / link).symlink_to(ROOT / target)
    section = {
        "source_paths": ["albert_tf"],
        "only_mutate": [module],
        "also_copy": ["data/sample/"],
        "process_isolation": "forkserver",
        "forkserver_warmup": "import",
        "preload_modules_file": "preload.txt",
        "use_git_change_detection": False,
        "pytest_add_cli_args": PYTEST_ARGS,
        "pytest_add_cli_args_test_selection": tests,
    }
    # What the fork server imports before forking: TensorFlow and Keras (the conftest's fixture imports Keras
    # in every test: seconds a mutant otherwise), the conftest and the test modules.
    test_modules = sorted({test.split("::")[0].removesuffix(".py").replace("/", ".") for test in tests})
    preload = ["pytest", "tensorflow", "keras", "tests.conftest", *test_modules]
    (folder / "preload.txt").write_text("\n".join(preload) + "\n", encoding="utf-8")
    lines = [f"{key} = {json.dumps(value)}" for key, value in section.items()]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8") + "\n[tool.mutmut]\n" + "\n".join(lines)
    written = folder / "pyproject.toml"
    if not written.exists() or written.read_text(encoding="utf-8") != pyproject + "\n":
        written.write_text(pyproject + "\n", encoding="utf-8")
    return folder


def statuses(folder, module):
    """{mutant name: status} of the module's last run; {} before one."""
    from mutmut.stats import status_by_exit_code

    meta = folder / "mutants" / (module + ".meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {name: status_by_exit_code[code] for name, code in codes.items()}


def mutmut(folder, *arguments):
    command = [shutil.which("mutmut") or os.path.join(os.path.dirname(sys.executable), "mutmut"), *arguments]
    return subprocess.run(command, cwd=folder, check=False).returncode


def row(module, found):
    """(module, mutants, killed, survived, timeout/suspicious, score) of a module's statuses."""
    count = lambda *names: sum(status in names for status in found.values())  # noqa: E731
    killed, timeout = count("killed"), count("timeout")
    survived, suspicious = count("survived", "no tests"), count("suspicious", "segfault")
    score = f"{100 * (killed + timeout) / len(found):.1f}%" if found else "-"
    return module, len(found), killed, survived, f"{timeout}/{suspicious}", score


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("modules", nargs="*", help="paths as in MODULES (default: all of them)")
    parser.add_argument("--work", type=pathlib.Path, default=ROOT / "runs" / "mutation")
    parser.add_argument("--retest", action="store_true", help="test again the mutants not killed")
    parser.add_argument("--fresh", action="store_true", help="forget the modules' earlier results first")
    parser.add_argument("--tests", help="comma-separated tests to run instead of MODULES' (one module)")
    parser.add_argument("--report", action="store_true", help="print the table only, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print each mutant not killed as a diff")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"not in MODULES: {', '.join(unknown)}; the modules are:\n  " + "\n  ".join(MODULES))
    modules = args.modules or list(MODULES)
    if args.tests and len(modules) != 1:
        parser.error("--tests replaces one module's tests: name that module")

    if not (args.report or args.survivors):
        print(describe(), flush=True)
    rows = []
    for module in modules:
        folder = project(args.work, module, args.tests.split(",") if args.tests else MODULES[module])
        if args.fresh and (folder / "mutants").exists():
            shutil.rmtree(folder / "mutants")
        if args.survivors:
            for name, status in sorted(statuses(folder, module).items()):
                if status not in DETECTED:
                    mutmut(folder, "show", name)
        elif not args.report:
            start = time.monotonic()
            if args.retest:  # which tests reach which function, collected again: mutmut keeps it otherwise,
                # and a function added since would count as reached by none ("no tests")
                (folder / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
            # Mutants not tested yet: a new module's, or a changed function's (mutmut resets them).
            mutmut(folder, "run", "--max-children", "1")
            if args.retest:  # then the survivors, against the tests as they are now
                names = [n for n, status in statuses(folder, module).items() if status not in DETECTED]
                if names:
                    mutmut(folder, "run", "--max-children", "1", *names)
            print(f"\n{module}: {time.monotonic() - start:.0f} s", flush=True)
        rows.append(row(module, statuses(folder, module)))

    header = ("module", "mutants", "killed", "survived", "timeout/suspicious", "score")
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for module, *values in rows:
        print(f"| `{module}` | " + " | ".join(str(value) for value in values) + " |")
    totals = [sum(r[i] for r in rows) for i in (1, 2, 3)]
    detected = sum(r[2] + int(r[4].split("/")[0]) for r in rows)
    if totals[0]:
        print(f"\nall: {totals[0]} mutants, {totals[1]} killed, {totals[2]} survived, "
              f"{100 * detected / totals[0]:.1f}%")  # fmt: skip


if __name__ == "__main__":
    main()
