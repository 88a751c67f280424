"""Checkpoint conversion: Google's TF1 ALBERT releases and Hugging Face ALBERT directories → our model
directories, and our model directories → Hugging Face directories.

Every tensor of the source is accounted for: converted, kept as the model directory's step (`global_step`,
in global_step.json), skipped as optimizer state (`*/adam_m`, `*/adam_v`), kept as a fine-tuned task head
(`task_heads.npz` in the model directory, under the original names), or listed in the conversion's notes
as unused. Output directories appear only when
the conversion succeeded (written under a temporary name, then renamed).
"""

import dataclasses
import io
import json
import os

import numpy as np

from albert_tf import file_io, model_files
from albert_tf.checkpoints import hf_names
from albert_tf.checkpoints.tf1_variables import TRANSPOSED, assign_tf1_weights, tf1_variable_map
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir

TASK_HEADS_FILE = "task_heads.npz"
OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v")
TF1_TASK_HEADS = ("output_weights", "output_bias", "cls/squad/output_weights", "cls/squad/output_bias")
PRETRAINING_HEADS = {"cls/predictions/": "masked-LM head", "cls/seq_relationship/": "sentence-order head"}
# transformers' AlbertTokenizer settings that decide ids, and their defaults there.
HF_TEXT_SETTINGS = {"do_lower_case": True, "keep_accents": False, "remove_space": True}


class ConversionError(ValueError):
    """The source cannot be converted; the message names the file, variable or key."""


@dataclasses.dataclass
class Conversion:
    """A converted model, ready to be written as a model directory."""

    pretrainer: AlbertPretrainer
    spm_model: str | None
    task_heads: dict[str, np.ndarray]
    notes: list[str]
    # The step the weights were trained to: a TF1 checkpoint's global_step, a model directory's; None when
    # the source does not say (Hugging Face directories).
    global_step: int | None = None
    # Whether the model takes lowercased text, and keeps combining marks: a Hugging Face directory's
    # tokenizer_config.json says, a model directory's tokenizer.json; Google's releases lowercase and drop.
    do_lower_case: bool = True
    keep_accents: bool = False


def _load(pretrainer: AlbertPretrainer, weights: dict[str, np.ndarray], source: str) -> list[str]:
    """Assigns `weights` (TF1 names) to `pretrainer`; absent pretraining heads keep their initialization.

    Returns the notes to report.
    """
    variables = tf1_variable_map(pretrainer)
    notes, weights = [], dict(weights)
    for prefix, label in PRETRAINING_HEADS.items():
        names = {name for name in variables if name.startswith(prefix)}
        present = names & set(weights)
        if not present:
            notes.append(f"{source} has no {label}: it is initialized randomly")
            for name in names:
                value = np.asarray(variables[name])
                weights[name] = value.T if name in TRANSPOSED else value
        elif present != names:
            raise ConversionError(
                f"{source}: the {label} is incomplete; missing {', '.join(sorted(names - present))}"
            )
    try:
        assign_tf1_weights(pretrainer, weights)
    except ValueError as error:
        raise ConversionError(f"{source}: {error}") from None
    return notes


# TF1 --------------------------------------------------------------------------------------------------------


def _tf1_prefix(path):
    """The checkpoint prefix in a release directory, or `path` itself when it is a prefix."""
    if not file_io.isdir(path):
        if not file_io.exists(f"{path}.index"):
            raise ConversionError(f"{path}: neither a directory nor a checkpoint prefix (no {path}.index)")
        return path
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(path)
    if latest:
        return latest
    indexes = file_io.glob(file_io.join(path, "*.index"))
    best = [index for index in indexes if os.path.basename(index) == "model.ckpt-best.index"]
    if best or len(indexes) == 1:
        return (best or indexes)[0][: -len(".index")]
    if not indexes:
        raise ConversionError(f"{path}: no TF1 checkpoint (*.index) in this directory")
    raise ConversionError(
        f"{path}: several checkpoints ({', '.join(map(os.path.basename, indexes))}); pass one prefix"
    )


def _only_file(directory, pattern):
    matches = file_io.glob(file_io.join(directory, pattern))
    return matches[0] if len(matches) == 1 else None


def from_tf1(path, albert_config_file=None, spm_model_file=None) -> Conversion:
    """Converts a TF1 checkpoint (a prefix, or a release directory with albert_config.json, the checkpoint
    and its SentencePiece model). Any num_hidden_groups × inner_group_num; heads when present."""
    import tensorflow as tf

    prefix = _tf1_prefix(path)
    folder = path if file_io.isdir(path) else os.path.dirname(prefix)
    config_file = albert_config_file or file_io.join(folder, "albert_config.json")
    if not file_io.exists(config_file):
        raise ConversionError(
            f"{config_file}: no albert_config.json next to the checkpoint; pass --albert_config_file"
        )
    config = AlbertConfig.from_json_file(config_file)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    known = set(tf1_variable_map(pretrainer))
    weights, task_heads, unused = {}, {}, []
    for name in sorted(shapes):
        if name == "global_step" or name.endswith(OPTIMIZER_SUFFIXES):
            continue
        if name in known:
            weights[name] = reader.get_tensor(name)
        elif name in TF1_TASK_HEADS:
            task_heads[name] = reader.get_tensor(name)
        else:
            unused.append(name)
    notes = _load(pretrainer, weights, prefix)
    if unused:
        notes.append(
            f"{prefix}: variables not converted (neither model weights nor optimizer state): "
            f"{', '.join(unused)}"
        )
    spm = spm_model_file or _only_file(folder, "*.model")  # a release's 30k-clean.model, beside a prefix too
    if spm is None:
        notes.append(
            f"{folder}: no SentencePiece model (one *.model file) next to the checkpoint, so the model "
            "directory has no spm.model, which fine-tuning and export need; convert again with "
            "--spm_model_file"
        )
    step = int(reader.get_tensor("global_step")) if "global_step" in shapes else None
    return Conversion(pretrainer, spm, task_heads, notes, global_step=step)


# Hugging Face ----------------------------------------------------------------------------------------------


def _hf_config(directory) -> AlbertConfig:
    path = file_io.join(directory, "config.json")
    try:
        values = json.loads(file_io.read_text(path))
    except FileNotFoundError:
        raise ConversionError(f"{directory}: no config.json (not a Hugging Face model directory)") from None
    if values.get("model_type", "albert") != "albert":
        raise ConversionError(f"{path}: model_type is {values['model_type']!r}, not 'albert'")
    act = values.get("hidden_act", "gelu_new")
    if act not in hf_names.HF_ACTIVATIONS:
        raise ConversionError(
            f"{path}: hidden_act={act!r} is not one of {', '.join(hf_names.HF_ACTIVATIONS)}"
        )
    if not np.isclose(values.get("layer_norm_eps", 1e-12), 1e-12, rtol=0, atol=1e-15):
        raise ConversionError(f"{path}: layer_norm_eps={values['layer_norm_eps']} (ALBERT uses 1e-12)")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(
            f"{path}: position_embedding_type={values['position_embedding_type']!r} is not supported"
        )
    missing = [key for key in hf_names.SHARED_CONFIG_KEYS if key not in values]
    if missing:
        raise ConversionError(f"{path}: missing key(s) {', '.join(missing)}")
    config = {key: values[key] for key in hf_names.SHARED_CONFIG_KEYS}
    config["hidden_act"] = hf_names.HF_ACTIVATIONS[act]
    # Hugging Face always projects E→H; keep the projection so the model computes what its source did.
    config["embedding_projection"] = True
    try:
        return AlbertConfig.from_dict(config, source=path)
    except ValueError as error:
        raise ConversionError(str(error)) from None


def _hf_tensors(directory) -> dict[str, np.ndarray]:
    """Every tensor of the directory's weights (model.safetensors, sharded or not; pytorch_model.bin)."""
    from safetensors.numpy import load

    single = file_io.join(directory, "model.safetensors")
    index = file_io.join(directory, "model.safetensors.index.json")
    if file_io.exists(single):
        return load(file_io.read_bytes(single))
    if file_io.exists(index):
        shards = sorted(set(json.loads(file_io.read_text(index))["weight_map"].values()))
        return {
            name: value
            for shard in shards
            for name, value in load(file_io.read_bytes(file_io.join(directory, shard))).items()
        }
    binary = file_io.join(directory, "pytorch_model.bin")
    if file_io.exists(binary):
        try:
            import torch
        except ImportError:
            raise ConversionError(
                f"{binary}: reading a PyTorch .bin checkpoint needs torch (pip install torch); "
                "model.safetensors files need no torch"
            ) from None
        with file_io.local_copy(binary) as local:
            state = torch.load(local, map_location="cpu", weights_only=True)
        return {name: tensor.float().numpy() for name, tensor in state.items()}
    raise ConversionError(
        f"{directory}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin"
    )


def _hf_text_settings(directory):
    """(do_lower_case, keep_accents, notes) from tokenizer_config.json, transformers' AlbertTokenizer
    defaults (True, False) where it says nothing. Its remove_space: false (keep runs of spaces) is noted:
    this toolkit collapses whitespace as the original and transformers' default do, and SentencePiece
    collapses it again, so only text whose spaces a user model counts differs."""
    path = file_io.join(directory, "tokenizer_config.json")
    if not file_io.exists(path):
        return True, False, []
    try:
        saved = json.loads(file_io.read_text(path))
        settings = {name: saved.get(name, default) for name, default in HF_TEXT_SETTINGS.items()}
    except (ValueError, AttributeError):
        raise ConversionError(f"{path}: not a JSON object (transformers' tokenizer settings)") from None
    for name, value in settings.items():
        if not isinstance(value, bool):
            raise ConversionError(f"{path}: {name} is {value!r}, expected true or false")
    notes = [] if settings["remove_space"] else [
        f"{path}: remove_space is false; the converted model collapses runs of whitespace, as the original "
        "does and SentencePiece does again"
    ]  # fmt: skip
    return settings["do_lower_case"], settings["keep_accents"], notes


def from_hf(directory) -> Conversion:
    """Converts a Hugging Face ALBERT directory (config.json, weights, spiece.model, and
    tokenizer_config.json's casing when it has one)."""
    config = _hf_config(directory)
    tensors = hf_names.normalize_hf_names(_hf_tensors(directory))
    mapping = hf_names.hf_to_tf1_names(config)
    weights, task_heads, unused = {}, {}, []
    for name, value in sorted(tensors.items()):
        value = np.asarray(value, dtype=np.float32) if value.dtype.kind == "f" else value
        if name in mapping:
            tf1, transposed = mapping[name]
            weights[tf1] = value.T if transposed else value
        elif name in hf_names.HF_TASK_HEADS:
            task_heads[hf_names.HF_TASK_HEADS[name]] = value
        elif name not in hf_names.HF_DERIVED and not name.endswith("token_type_ids"):
            unused.append(name)
    decoder = tensors.get("predictions.decoder.weight")
    if decoder is not None and not np.array_equal(
        decoder, tensors["albert.embeddings.word_embeddings.weight"]
    ):
        raise ConversionError(f"{directory}: predictions.decoder.weight is not tied to the word embeddings")
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    notes = _load(pretrainer, weights, directory)
    if unused:
        notes.append(f"{directory}: tensors not converted: {', '.join(unused)}")
    spm = _only_file(directory, "spiece.model")
    lowercased, keeps_accents, text_notes = _hf_text_settings(directory)
    return Conversion(
        pretrainer, spm, task_heads, notes + text_notes, do_lower_case=lowercased, keep_accents=keeps_accents
    )


def from_any(path) -> Conversion:
    """A pretrained model from a model directory of ours, a Hugging Face directory (config.json) or an
    original TF1 release (a directory or a checkpoint prefix), whichever path is."""
    if model_files.is_model_dir(path):
        pretrainer, spm = model_dir.load_pretrainer(path), model_files.spm_model_file(path)
        step, lowercased = model_files.global_step(path), model_files.do_lower_case(path)
        keeps_accents = model_files.keep_accents(path)
        return Conversion(
            pretrainer, spm, {}, [], global_step=step, do_lower_case=lowercased, keep_accents=keeps_accents
        )
    if file_io.exists(file_io.join(path, "config.json")):
        return from_hf(path)
    if model_files.has_task_model(path):
        model_files.require(path, model_files.WEIGHTS_FILE)  # says it holds a fine-tuned model
    return from_tf1(path)


# Writing ---------------------------------------------------------------------------------------------------


def _publish(output_dir, write):
    """Calls write(temporary folder), then renames the folder to output_dir (which must not exist)."""
    if file_io.exists(output_dir):
        raise ConversionError(f"{output_dir} already exists; choose a new --output_dir")
    file_io.publish_directory(output_dir, write)


def write_model_dir(conversion: Conversion, output_dir):
    """Writes the conversion as a model directory (see `model_dir`), task heads included."""

    def write(folder):
        model_dir.save_model_dir(
            conversion.pretrainer, folder, spm_model=conversion.spm_model, step=conversion.global_step,
            do_lower_case=conversion.do_lower_case, keep_accents=conversion.keep_accents,
        )  # fmt: skip
        if conversion.task_heads:
            buffer = io.BytesIO()
            np.savez(buffer, **conversion.task_heads)
            file_io.write_atomically(file_io.join(folder, TASK_HEADS_FILE), buffer.getvalue())

    _publish(output_dir, write)


def to_hf(directory, output_dir):
    """Writes our model directory as a Hugging Face directory (AlbertForPreTraining) for transformers."""
    from safetensors.numpy import save

    pretrainer = model_dir.load_pretrainer(directory)
    config = pretrainer.encoder.config
    if config.sharing in ("attention", "ffn"):
        raise ConversionError(f"{directory}: sharing={config.sharing!r} has no Hugging Face counterpart")
    weights = {}
    for name, variable in tf1_variable_map(pretrainer).items():
        value = np.asarray(variable, dtype=np.float32)
        weights[name] = value.T if name in TRANSPOSED else value
    groups = 1 + max(int(name.split("/group_")[1].split("/")[0]) for name in weights if "/group_" in name)
    hf_config = config.replace(num_hidden_groups=groups, sharing=None) if config.sharing else config
    if not config.uses_embedding_projection:
        # Hugging Face always projects E→H: the identity makes that the original's no-op.
        weights["bert/encoder/embedding_hidden_mapping_in/kernel"] = np.eye(
            config.hidden_size, dtype=np.float32
        )
        weights["bert/encoder/embedding_hidden_mapping_in/bias"] = np.zeros(config.hidden_size, np.float32)
    tensors = {}
    for hf, (tf1, transposed) in hf_names.hf_to_tf1_names(hf_config).items():
        tensors[hf] = np.ascontiguousarray(weights[tf1].T if transposed else weights[tf1])
    values = {key: getattr(hf_config, key) for key in hf_names.SHARED_CONFIG_KEYS}
    values.update(
        model_type="albert",
        architectures=["AlbertForPreTraining"],
        hidden_act=hf_names.TO_HF_ACTIVATIONS[config.hidden_act],
        layer_norm_eps=1e-12,
        classifier_dropout_prob=0.1,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        tie_word_embeddings=True,
    )
    spm, lowercased = model_files.spm_model_file(directory), model_files.do_lower_case(directory)
    keeps_accents = model_files.keep_accents(directory)

    def write(folder):
        tensors_bytes = save(tensors, metadata={"format": "pt"})
        file_io.write_atomically(file_io.join(folder, "model.safetensors"), tensors_bytes)
        file_io.write_atomically(
            file_io.join(folder, "config.json"), json.dumps(values, indent=2, sort_keys=True).encode()
        )
        if spm:
            file_io.copy(spm, file_io.join(folder, "spiece.model"))
            # What the model's text settings are, in transformers' names (remove_space: as the original).
            tokenizer = {
                "tokenizer_class": "AlbertTokenizer",
                "do_lower_case": lowercased,
                "keep_accents": keeps_accents,
                "remove_space": True,
            }
            text = json.dumps(tokenizer, indent=2, sort_keys=True)
            file_io.write_atomically(file_io.join(folder, "tokenizer_config.json"), text.encode())

    _publish(output_dir, write)
