"""Model directories: the unit every command reads and writes (`--output_dir` of pretraining, `--model_dir`
of fine-tuning and export), and what reads and writes their files without Keras (or TensorFlow, on a local
disk), so that a command can check a model directory before TensorFlow starts.

A model directory holds
    albert_config.json        the model's config (original keys),
    spm.model                 its SentencePiece model (absent when the run had none),
    tokenizer.json            {"do_lower_case": false} for a cased model, "keep_accents": true for one that
                              keeps combining marks (albert_tf.text.marks): how text becomes ids before
                              SentencePiece (absent: lowercased, as the released models and directories
                              written before this file are); fine-tuning and export tokenize by it,
    pretrainer.weights.h5     the weights of an `AlbertPretrainer` (encoder and pretraining heads),
    global_step.json          {"global_step": N}: the step those weights were trained to, when known (written
                              by pretraining, by fine-tuning for its task model, the best evaluation's step,
                              and by conversions of TF1 checkpoints that hold one), so that an evaluation of
                              the directory reports it,
    task_model.keras          a fine-tuned task model (classifier, span labeler, multiple choice), if any;
                              fine-tuning writes config, spm.model and this only (the encoder is in it);
                              the task models' from_model_dir continue from it.

The Keras models in it are loaded and saved by `albert_tf.models.model_dir`.

    >>> model_files.load_config("runs/tiny").hidden_size
"""

import json
import sys
import zipfile

from albert_tf import file_io
from albert_tf.config import AlbertConfig

CONFIG_FILE = "albert_config.json"
SPM_FILE = "spm.model"
WEIGHTS_FILE = "pretrainer.weights.h5"
TASK_MODEL_FILE = "task_model.keras"
STEP_FILE = "global_step.json"
TOKENIZER_FILE = "tokenizer.json"
# In a fine-tuning run's output_dir: the config of the task model its checkpoints are of, written when
# training starts, so that a run stopped before it saved task_model.keras is resumed only under its settings.
RUN_MODEL_FILE = "checkpoints/task_model.json"
CHECKPOINT_STATE_FILE = "checkpoints/checkpoint"  # tf.train.CheckpointManager's list of the checkpoints
# In a fine-tuning sweep's output_dir (albert_tf/finetuning/sweep.py): its plan, and once every run has ended
# its summary, which names the chosen run's folder (a model directory).
SWEEP_FILE = "sweep.json"
SUMMARY_FILE = "summary.json"


def resolve(directory):
    """The model directory `directory` stands for: itself, or for a fine-tuning sweep's output_dir the run
    its summary chose, which it says on stderr. ValueError when the sweep has no summary yet, or chose no
    run (every run failed)."""
    if not file_io.exists(file_io.join(directory, SWEEP_FILE)):
        return directory
    path = file_io.join(directory, SUMMARY_FILE)
    if not file_io.exists(path):
        raise ValueError(
            f"{directory} holds a sweep that has no summary yet (some runs have not ended): "
            f"python -m albert_tf.summarize_sweep --output_dir={directory} says which"
        )
    try:
        chosen = json.loads(file_io.read_text(path))["chosen"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a sweep's summary ({error})") from None
    if not chosen:
        raise ValueError(f"{directory}: every run of the sweep failed ({path}), so it chose no model")
    model = file_io.join(directory, chosen["run"])
    print(f"albert_tf: {directory} is a sweep; its chosen model is {model}: {chosen['why']}", file=sys.stderr)
    return model


def require(directory, name):
    """The path of the file `name` of the model directory; FileNotFoundError when it has none, saying what the
    directory is instead (missing; a pretrained model where a fine-tuned one is needed, or the reverse)."""
    path = file_io.join(directory, name)
    if file_io.exists(path):
        return path
    if not file_io.isdir(directory):
        raise FileNotFoundError(f"{directory}: no such model directory")
    if name == TASK_MODEL_FILE and file_io.exists(file_io.join(directory, WEIGHTS_FILE)):
        raise FileNotFoundError(
            f"{directory} holds a pretrained model ({WEIGHTS_FILE}), not a fine-tuned one ({name}): "
            "fine-tune it first, or use it as a pretrained model (export_saved_model --task=encoder or "
            "pretraining)"
        )
    if name == WEIGHTS_FILE and has_task_model(directory):
        raise FileNotFoundError(
            f"{directory} holds a fine-tuned model ({TASK_MODEL_FILE}), not a pretrained one ({name}): give "
            "the pretrained model directory it was fine-tuned from"
        )
    raise FileNotFoundError(f"{directory} is not a model directory: it has no {name}")


def is_model_dir(directory):
    """Whether directory holds a pretrained model directory (config and weights)."""
    return all(file_io.exists(file_io.join(directory, name)) for name in (CONFIG_FILE, WEIGHTS_FILE))


def files(directory):
    """The model-directory files directory holds, by name."""
    names = (CONFIG_FILE, SPM_FILE, TOKENIZER_FILE, STEP_FILE, WEIGHTS_FILE, TASK_MODEL_FILE)
    return [name for name in names if file_io.exists(file_io.join(directory, name))]


def has_task_model(directory):
    """Whether the directory holds a fine-tuned task model."""
    return file_io.exists(file_io.join(directory, TASK_MODEL_FILE))


def task_model_config(directory):
    """The fine-tuned task model's Keras class name and config, read from the config.json inside
    task_model.keras without Keras (only that member is read): (class_name, config dict), or None when the
    directory holds no task model. ValueError naming the file when it cannot be read as one."""
    path = file_io.join(directory, TASK_MODEL_FILE)
    if not file_io.exists(path):
        return None
    try:
        with file_io.open_file(path, "rb") as handle, zipfile.ZipFile(handle) as archive:
            saved = json.loads(archive.read("config.json"))
    except Exception as error:  # not a zip, no config; unreadable: OSError, or tf.errors.OpError when remote
        raise ValueError(
            f"{path}: cannot be read as a Keras model file, a zip with the model's config.json ({error})"
        ) from None
    return _class_and_config(saved, f"{path}: its config.json")


def _class_and_config(saved, where):
    """(class_name, config) of a serialized Keras model; ValueError starting with `where` otherwise."""
    saved = saved if isinstance(saved, dict) else {}
    class_name, config = saved.get("class_name"), saved.get("config")
    if not isinstance(class_name, str) or not isinstance(config, dict):
        raise ValueError(f"{where} holds no model class and config")
    return class_name, config


def run_model_config(directory):
    """The Keras class name and config of the task model a fine-tuning run in directory trained: its
    task_model.keras once saved, else the RUN_MODEL_FILE the run wrote when it trained, while checkpoints
    are there to resume; None for neither (as task_model_config)."""
    saved = task_model_config(directory)
    if saved is not None or not file_io.exists(file_io.join(directory, CHECKPOINT_STATE_FILE)):
        return saved
    path = file_io.join(directory, RUN_MODEL_FILE)
    if not file_io.exists(path):
        return None  # checkpoints of a run that recorded no model (another command's)
    try:
        saved = json.loads(file_io.read_text(path))
    except ValueError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None
    return _class_and_config(saved, path)


def load_config(directory) -> AlbertConfig:
    return AlbertConfig.from_json_file(require(directory, CONFIG_FILE))


def spm_model_file(directory):
    """The directory's SentencePiece model, or None."""
    path = file_io.join(directory, SPM_FILE)
    return path if file_io.exists(path) else None


def _json_value(directory, name, key, default, valid, expected, optional=False):
    """The `key` of the JSON object in directory/name, or default when the file is missing (or, optional,
    the key); ValueError naming the file and what was `expected` when valid(value) is false."""
    path = file_io.join(directory, name)
    if not file_io.exists(path):
        return default
    try:
        saved = json.loads(file_io.read_text(path))
        value = saved.get(key, default) if optional else saved[key]
    except (ValueError, KeyError, TypeError, AttributeError):
        value = None
    if not valid(value):
        raise ValueError(f"{path}: expected {expected}")
    return value


def do_lower_case(directory):
    """Whether the directory's model takes lowercased text (tokenizer.json; True when it has none)."""
    return _json_value(
        directory, TOKENIZER_FILE, "do_lower_case", True, lambda value: isinstance(value, bool),
        '{"do_lower_case": true} or {"do_lower_case": false}',
    )  # fmt: skip


def keep_accents(directory):
    """Whether the directory's model keeps combining marks (tokenizer.json; False, the original's, when it
    does not say)."""
    return _json_value(
        directory, TOKENIZER_FILE, "keep_accents", False, lambda value: isinstance(value, bool),
        '{"do_lower_case": ..., "keep_accents": true or false}', optional=True,
    )  # fmt: skip


def write_tokenizer_settings(directory, lowercased, keeps_accents=False):
    """Writes tokenizer.json: whether the directory's model takes lowercased text, and keeps marks (written
    when it does: a file without it is the original's normalization)."""
    path = file_io.join(directory, TOKENIZER_FILE)
    settings = {"do_lower_case": bool(lowercased), **({"keep_accents": True} if keeps_accents else {})}
    file_io.write_atomically(path, (json.dumps(settings) + "\n").encode())


def trained_settings_path(spm_model_file):
    """Where train_tokenizer writes the settings a SentencePiece model was trained with: PREFIX.tokenizer.json
    beside PREFIX.model."""
    return spm_model_file.removesuffix(".model") + "." + TOKENIZER_FILE


def write_trained_settings(model_prefix, lowercased, keeps_accents):
    """Writes PREFIX.tokenizer.json: {"do_lower_case": ..., "keep_accents": ...} of a model just trained."""
    settings = {"do_lower_case": bool(lowercased), "keep_accents": bool(keeps_accents)}
    file_io.write_atomically(model_prefix + "." + TOKENIZER_FILE, (json.dumps(settings) + "\n").encode())


def trained_settings(spm_model_file):
    """(the settings file's path, {"do_lower_case": bool, "keep_accents": bool}) that train_tokenizer wrote
    beside the model, or (path, None) for a model without one (trained elsewhere); ValueError naming the file
    when it holds something else."""
    path = trained_settings_path(spm_model_file)
    if not file_io.exists(path):
        return path, None
    try:
        settings = json.loads(file_io.read_text(path))
        valid = all(isinstance(settings[key], bool) for key in ("do_lower_case", "keep_accents"))
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        expected = '{"do_lower_case": true or false, "keep_accents": true or false}'
        raise ValueError(f"{path}: expected {expected}")
    return path, settings


def global_step(directory):
    """The step the directory's weights were trained to (global_step.json), or None when it does not say."""
    return _json_value(
        directory, STEP_FILE, "global_step", None,
        lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        '{"global_step": N} with N a whole number ≥ 0',
    )  # fmt: skip


def write_global_step(directory, step, rollbacks=0):
    """Writes global_step.json, or removes it when step is None (unknown: a step written there before
    would be wrong now). rollbacks: those the run made before the weights (after a collapse), when any."""
    path = file_io.join(directory, STEP_FILE)
    if step is None:
        file_io.remove(path)
    else:
        saved = {"global_step": int(step), **({"rollbacks": int(rollbacks)} if rollbacks else {})}
        file_io.write_atomically(path, (json.dumps(saved) + "\n").encode())


def rollbacks(directory):
    """The rollbacks the run made before the directory's weights (global_step.json; 0 when it says none)."""
    return _json_value(
        directory, STEP_FILE, "rollbacks", 0, lambda value: isinstance(value, int) and value >= 0,
        '{"global_step": N, "rollbacks": R} with R a whole number ≥ 0', optional=True,
    )  # fmt: skip
