"""The Keras models of a model directory (albert_tf/model_files.py: what a model directory holds, and
what reads its files without Keras): the pretrainer and its encoder, and fine-tuned task models.

    >>> encoder = load_encoder("runs/tiny")          # in a notebook
"""

import json
import os
import zipfile

import keras

from albert_tf import file_io, model_files
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.pretrainer import AlbertPretrainer


def load_pretrainer(directory, dtype=None) -> AlbertPretrainer:
    """A built `AlbertPretrainer` with the directory's weights (dtype: optional dtype policy)."""
    pretrainer = AlbertPretrainer(AlbertEncoder(model_files.load_config(directory), dtype=dtype))
    path = model_files.require(directory, model_files.WEIGHTS_FILE)
    try:
        pretrainer.load_weights(path)
    except (OSError, ValueError) as error:  # a truncated or damaged file (h5py), or another model's weights
        raise ValueError(
            f"{path}: not the weights of the model {model_files.CONFIG_FILE} describes ({error}); "
            "was it copied whole, and with its config?"
        ) from None
    return pretrainer


def load_encoder(directory, dtype=None) -> AlbertEncoder:
    """The directory's `AlbertEncoder`, weights loaded (the pretraining heads are dropped)."""
    return load_pretrainer(directory, dtype=dtype).encoder


def _copy_spm(spm_model, directory):
    target = file_io.join(directory, model_files.SPM_FILE)
    if spm_model and os.path.abspath(spm_model) != os.path.abspath(target):
        file_io.copy(spm_model, target)


def save_model_dir(
    pretrainer: AlbertPretrainer, directory, spm_model=None, step=None, do_lower_case=True, keep_accents=False
):  # fmt: skip
    """Writes config, SentencePiece model, tokenizer settings, step and weights; each file appears whole
    (temporary name, rename).

    Args:
        pretrainer: the model to save.
        directory: created if missing (any TensorFlow file system); files already there are replaced.
        spm_model: path of the SentencePiece model to copy in, or None.
        step: the step the weights were trained to (global_step.json), or None when unknown (no file).
        do_lower_case: whether text is lowercased before SentencePiece (False: a cased model).
        keep_accents: whether text keeps its combining marks (True: albert_tf.text.marks).
    """
    file_io.makedirs(directory)
    pretrainer.encoder.config.to_json_file(file_io.join(directory, model_files.CONFIG_FILE))
    _copy_spm(spm_model, directory)
    model_files.write_tokenizer_settings(directory, do_lower_case, keep_accents)
    # The step after the weights it is of (removed first): a write that fails between leaves no wrong step.
    model_files.write_global_step(directory, None)
    file_io.replace_with(file_io.join(directory, model_files.WEIGHTS_FILE), pretrainer.save_weights)
    model_files.write_global_step(directory, step)


def copy_config_and_spm(source, directory):
    """Starts a model directory for a model fine-tuned from `source`: its config, SentencePiece model and
    tokenizer settings."""
    file_io.makedirs(directory)
    model_files.load_config(source).to_json_file(file_io.join(directory, model_files.CONFIG_FILE))
    _copy_spm(model_files.spm_model_file(source), directory)
    model_files.write_tokenizer_settings(
        directory, model_files.do_lower_case(source), model_files.keep_accents(source)
    )


def save_task_model(model, directory, step=None, rollbacks=0):
    """Adds a fine-tuned task model (e.g. an `AlbertClassifier`) to a model directory, with the fine-tuning
    step its weights are of and the rollbacks before them (global_step.json; step None: unknown, no file)."""
    file_io.makedirs(directory)
    model_files.write_global_step(directory, None)  # the step after the model it is of, as save_model_dir
    file_io.replace_with(file_io.join(directory, model_files.TASK_MODEL_FILE), model.save)
    model_files.write_global_step(directory, step, rollbacks)


def write_run_model_config(model, directory):
    """Writes, for a fine-tuning run training in directory, the config of its task model as task_model.keras
    holds it (model_files.RUN_MODEL_FILE, read by model_files.run_model_config)."""
    text = json.dumps(keras.saving.serialize_keras_object(model))
    path = file_io.join(directory, model_files.RUN_MODEL_FILE)
    file_io.makedirs(os.path.dirname(path))
    file_io.write_atomically(path, text.encode("utf-8"))


def load_task_model(directory):
    """The directory's fine-tuned task model (a fine-tuning sweep's folder: its chosen run's)."""
    # Registers the task models' classes for deserialization (imported here: task_models imports us).
    from albert_tf.models import task_models  # noqa: F401

    path = model_files.require(model_files.resolve(directory), model_files.TASK_MODEL_FILE)
    try:
        # Not compiled: the optimizer it was trained with is not needed to predict or export.
        return keras.saving.load_model(path, compile=False)
    except (OSError, ValueError, zipfile.BadZipFile) as error:  # truncated or damaged; Keras' "not found"
        raise ValueError(f"{path}: not a readable Keras model ({error}); was it copied whole?") from None
