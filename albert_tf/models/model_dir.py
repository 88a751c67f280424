"""Model directories: the unit every command reads and writes (`--output_dir` of pretraining, `--model_dir`
of fine-tuning and export).

A model directory holds
    albert_config.json        the model's config (original keys),
    spm.model                 its SentencePiece model (absent when the run had none),
    tokenizer.json            {"do_lower_case": false} for a cased model: how text becomes ids before
                              SentencePiece (absent: lowercased, as the released models and directories
                              written before this file are); fine-tuning and export tokenize by it,
    pretrainer.weights.h5     the weights of an `AlbertPretrainer` (encoder and pretraining heads),
    global_step.json          {"global_step": N}: the step those weights were trained to, when known (written
                              by pretraining and by conversions of TF1 checkpoints that hold one), so that
                              an evaluation of the directory reports it,
    task_model.keras          a fine-tuned task model (classifier, span labeler, multiple choice), if any;
                              fine-tuning writes config, spm.model and this only (the encoder is in it);
                              the task models' from_model_dir continue from it.

    >>> encoder = load_encoder("runs/tiny")          # in a notebook
"""

import json
import os

import keras

from albert_tf import file_io
from albert_tf.config import AlbertConfig
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.pretrainer import AlbertPretrainer

CONFIG_FILE = "albert_config.json"
SPM_FILE = "spm.model"
WEIGHTS_FILE = "pretrainer.weights.h5"
TASK_MODEL_FILE = "task_model.keras"
STEP_FILE = "global_step.json"
TOKENIZER_FILE = "tokenizer.json"


def _require(directory, name):
    path = file_io.join(directory, name)
    if not file_io.exists(path):
        raise FileNotFoundError(f"{directory} is not a model directory: it has no {name}")
    return path


def is_model_dir(directory):
    """Whether directory holds a pretrained model directory (config and weights)."""
    return all(file_io.exists(file_io.join(directory, name)) for name in (CONFIG_FILE, WEIGHTS_FILE))


def files(directory):
    """The model-directory files directory holds, by name."""
    names = (CONFIG_FILE, SPM_FILE, TOKENIZER_FILE, STEP_FILE, WEIGHTS_FILE, TASK_MODEL_FILE)
    return [name for name in names if file_io.exists(file_io.join(directory, name))]


def load_config(directory) -> AlbertConfig:
    return AlbertConfig.from_json_file(_require(directory, CONFIG_FILE))


def spm_model_file(directory):
    """The directory's SentencePiece model, or None."""
    path = file_io.join(directory, SPM_FILE)
    return path if file_io.exists(path) else None


def _json_value(directory, name, key, default, valid, expected):
    """The `key` of the JSON object in directory/name, or default when the file is missing; ValueError
    naming the file and what was `expected` when valid(value) is false."""
    path = file_io.join(directory, name)
    if not file_io.exists(path):
        return default
    try:
        value = json.loads(file_io.read_text(path))[key]
    except (ValueError, KeyError, TypeError):
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


def _write_tokenizer_settings(directory, lowercased):
    path = file_io.join(directory, TOKENIZER_FILE)
    file_io.write_atomically(path, (json.dumps({"do_lower_case": bool(lowercased)}) + "\n").encode())


def global_step(directory):
    """The step the directory's weights were trained to (global_step.json), or None when it does not say."""
    return _json_value(
        directory, STEP_FILE, "global_step", None,
        lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        '{"global_step": N} with N a whole number ≥ 0',
    )  # fmt: skip


def load_pretrainer(directory, dtype=None) -> AlbertPretrainer:
    """A built `AlbertPretrainer` with the directory's weights (dtype: optional dtype policy)."""
    pretrainer = AlbertPretrainer(AlbertEncoder(load_config(directory), dtype=dtype))
    pretrainer.load_weights(_require(directory, WEIGHTS_FILE))
    return pretrainer


def load_encoder(directory, dtype=None) -> AlbertEncoder:
    """The directory's `AlbertEncoder`, weights loaded (the pretraining heads are dropped)."""
    return load_pretrainer(directory, dtype=dtype).encoder


def _copy_spm(spm_model, directory):
    target = file_io.join(directory, SPM_FILE)
    if spm_model and os.path.abspath(spm_model) != os.path.abspath(target):
        file_io.copy(spm_model, target)


def save_model_dir(
    pretrainer: AlbertPretrainer, directory, spm_model=None, step=None, do_lower_case=True
):  # fmt: skip
    """Writes config, SentencePiece model, tokenizer settings, step and weights; each file appears whole
    (temporary name, rename).

    Args:
        pretrainer: the model to save.
        directory: created if missing (any TensorFlow file system); files already there are replaced.
        spm_model: path of the SentencePiece model to copy in, or None.
        step: the step the weights were trained to (global_step.json), or None when unknown (no file).
        do_lower_case: whether text is lowercased before SentencePiece (False: a cased model).
    """
    file_io.makedirs(directory)
    pretrainer.encoder.config.to_json_file(file_io.join(directory, CONFIG_FILE))
    _copy_spm(spm_model, directory)
    _write_tokenizer_settings(directory, do_lower_case)
    step_file = file_io.join(directory, STEP_FILE)
    if step is None:
        file_io.remove(step_file)  # a step from weights saved here before would be wrong now
    else:
        file_io.write_atomically(step_file, (json.dumps({"global_step": int(step)}) + "\n").encode())
    file_io.replace_with(file_io.join(directory, WEIGHTS_FILE), pretrainer.save_weights)


def copy_config_and_spm(source, directory):
    """Starts a model directory for a model fine-tuned from `source`: its config, SentencePiece model and
    tokenizer settings."""
    file_io.makedirs(directory)
    load_config(source).to_json_file(file_io.join(directory, CONFIG_FILE))
    _copy_spm(spm_model_file(source), directory)
    _write_tokenizer_settings(directory, do_lower_case(source))


def save_task_model(model, directory):
    """Adds a fine-tuned task model (e.g. an `AlbertClassifier`) to a model directory."""
    file_io.makedirs(directory)
    file_io.replace_with(file_io.join(directory, TASK_MODEL_FILE), model.save)


def has_task_model(directory):
    """Whether the directory holds a fine-tuned task model."""
    return file_io.exists(file_io.join(directory, TASK_MODEL_FILE))


def load_task_model(directory):
    """The directory's fine-tuned task model."""
    # Registers the task models' classes for deserialization (imported here: task_models imports us).
    from albert_tf.models import task_models  # noqa: F401

    # Not compiled: the optimizer it was trained with is not needed to predict or export.
    return keras.saving.load_model(_require(directory, TASK_MODEL_FILE), compile=False)
