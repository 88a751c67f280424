"""What the package ships, by name: model configs, run recipes (flagfiles) and the sample's records.

After `pip install`, the quick start runs from any directory:

    python -m albert_tf.run_pretraining --flagfile=tiny

Names are taken on the command line by `--flagfile` of run_pretraining (`tiny`, `base`, ...: the files of
`albert_tf/configs/pretrain/`), run_classifier (`sst-2`, `mnli`, ...), run_squad (`squad-v1.1`,
`squad-v2.0`) and run_race (`race`), all from `albert_tf/configs/finetune/`; by `--albert_config_file` of
run_pretraining and model_summary (`albert_base`: `albert_tf/configs/albert_base.json`); and `sample`, by
run_pretraining's `--input_file`, `--eval_input_file` and `--spm_model_file`, names the bundled sample's
training records, held-out records and SentencePiece model. A name is only looked up when no file of that name
exists, so a path always means the file it names. A flagfile's own lines take paths (absl reads them).
"""

import os
import pathlib
import sys

PACKAGE = pathlib.Path(__file__).resolve().parent
CONFIGS = PACKAGE / "configs"
SAMPLE = PACKAGE / "sample"
# Each entry point's recipes: their folder, and which of its flagfiles are for that entry point.
RECIPE_FOLDERS = {
    "run_pretraining": "pretrain",
    "run_classifier": "finetune",
    "run_squad": "finetune",
    "run_race": "finetune",
}
_RECIPE_OF = {
    "run_squad": lambda name: name.startswith("squad"),
    "run_race": lambda name: name == "race",
    "run_classifier": lambda name: not name.startswith("squad") and name != "race",
}


def config_names():
    """The shipped model configs' names: albert_base, albert_large, ..., bert_base, bert_large."""
    return sorted(path.stem for path in CONFIGS.glob("*.json"))


def config_file(name_or_path):
    """The path of a shipped config (`albert_base`, ...) or of the config file given."""
    return resolve("albert_config_file", name_or_path)


def recipe_names(entry_point):
    """The names `--flagfile` takes for an entry point (e.g. run_pretraining: base, large, tiny, ...)."""
    folder = RECIPE_FOLDERS.get(entry_point)
    if not folder:
        return []
    mine = _RECIPE_OF.get(entry_point, lambda name: True)
    return sorted(path.stem for path in (CONFIGS / folder).glob("*.flags") if mine(path.stem))


def recipe_file(entry_point, name):
    """The path of a shipped recipe of an entry point: recipe_file("run_pretraining", "tiny")."""
    return str(CONFIGS / RECIPE_FOLDERS[entry_point] / f"{name}.flags")


def _named_files(flag):
    if flag == "albert_config_file":
        return {name: CONFIGS / f"{name}.json" for name in config_names()}
    return {
        "input_file": {"sample": SAMPLE / "records" / "train.manifest.json"},
        "eval_input_file": {"sample": SAMPLE / "records" / "eval.manifest.json"},
        "spm_model_file": {"sample": SAMPLE / "spm_8k.model"},
    }.get(flag, {})


def resolve(flag, value):
    """The path a flag's value stands for: the shipped file it names, or the value itself.

    Args:
      flag: the flag's name without dashes (albert_config_file, input_file, eval_input_file, spm_model_file).
      value: what was given (None passes through).

    Raises:
      ValueError: a config name that is neither a file nor shipped (the message lists the shipped ones).
    """
    named = _named_files(flag)
    if not named or value is None or os.path.isfile(value):
        return value
    if value in named:
        return str(named[value])
    if flag == "albert_config_file" and not _looks_like_a_path(value, ".json"):
        raise ValueError(
            f"--albert_config_file={value}: no such file, and not a shipped config ({', '.join(named)})"
        )
    return value


def expand_recipe_names(argv, entry_point):
    """argv with each `--flagfile=NAME` of a shipped recipe replaced by the recipe's path.

    A value that is an existing file, or looks like a path (holds a `/` or ends in `.flags`), is left to
    absl. An unknown name ends the program with the names there are.
    """
    names = recipe_names(entry_point)
    expanded = list(argv)
    for index, argument in enumerate(argv):
        flag, equals, value = argument.partition("=")
        if flag not in ("--flagfile", "-flagfile"):
            continue
        if not equals:  # `--flagfile NAME`
            if index + 1 == len(argv):
                continue
            value = argv[index + 1]
        if _looks_like_a_path(value):
            continue
        if value not in names:
            sys.exit(
                f"{entry_point}: error: --flagfile={value}: no such file, and not a recipe of "
                f"{entry_point} ({', '.join(names) or 'it has none'})"
            )
        path = recipe_file(entry_point, value)
        if equals:
            expanded[index] = f"{flag}={path}"
        else:
            expanded[index + 1] = path
    return expanded


def _looks_like_a_path(value, suffix=".flags"):
    return os.path.isfile(value) or "/" in value or os.sep in value or value.endswith(suffix)
