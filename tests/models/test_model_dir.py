"""Model directories: save, load into a pretrainer or an encoder, and clear errors."""

import numpy as np
import pytest

from albert_tf import file_io, model_files
from albert_tf.checkpoints import convert
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertPretrainer, model_dir
from tests.helpers import ENCODER_INPUTS, random_features, tiny_config

SPM = "albert_tf/sample/spm_8k.model"


def test_round_trip_gives_the_same_outputs(tmp_path):
    config = tiny_config()
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    features = random_features(config)
    expected = pretrainer(features)
    model_dir.save_model_dir(pretrainer, tmp_path, spm_model=SPM)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "albert_config.json",
        "pretrainer.weights.h5",
        "spm.model",
        "tokenizer.json",
    ]
    assert model_files.do_lower_case(tmp_path) is True
    loaded = model_dir.load_pretrainer(str(tmp_path))
    got = loaded(features)
    for name in ("mlm_logits", "sop_logits"):
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(expected[name]))
    encoder = model_dir.load_encoder(str(tmp_path))
    pooled = encoder({name: features[name] for name in ENCODER_INPUTS})["pooled_output"]
    reference = pretrainer.encoder({name: features[name] for name in ENCODER_INPUTS})["pooled_output"]
    np.testing.assert_array_equal(np.asarray(pooled), np.asarray(reference))
    assert model_files.spm_model_file(str(tmp_path)).endswith("spm.model")


def test_a_folder_without_a_model_is_named(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=f"{tmp_path} is not a model directory: it has no albert_config.json"
    ):
        model_dir.load_encoder(str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nope'}: no such model directory"):
        model_dir.load_encoder(str(tmp_path / "nope"))


def test_a_pretrained_directory_where_a_fine_tuned_one_is_needed_and_the_reverse_say_so(tmp_path):
    pretrained, tuned = tmp_path / "pretrained", tmp_path / "tuned"
    encoder = AlbertEncoder(tiny_config())
    model_dir.save_model_dir(AlbertPretrainer(encoder), pretrained)
    with pytest.raises(FileNotFoundError, match=r"pretrained holds a pretrained model .*not a fine-tuned"):
        model_dir.load_task_model(str(pretrained))
    model_dir.copy_config_and_spm(str(pretrained), str(tuned))
    model_dir.save_task_model(AlbertClassifier(encoder, num_classes=2), str(tuned))
    fine_tuned = r"tuned holds a fine-tuned model \(task_model\.keras\), not a pretrained one"
    with pytest.raises(FileNotFoundError, match=fine_tuned):
        model_dir.load_pretrainer(str(tuned))
    with pytest.raises(FileNotFoundError, match=fine_tuned):  # --init_checkpoint reads any of three kinds
        convert.from_any(str(tuned))


def test_the_step_is_kept_replaced_and_a_bad_step_file_is_named(tmp_path):
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config()))
    model_dir.save_model_dir(pretrainer, tmp_path, step=300)
    assert model_files.global_step(tmp_path) == 300
    model_dir.save_model_dir(pretrainer, tmp_path)  # weights of no known step: the old step must not stay
    assert model_files.global_step(tmp_path) is None and not (tmp_path / model_files.STEP_FILE).exists()
    (tmp_path / model_files.STEP_FILE).write_text('{"global_step": "300"}')
    with pytest.raises(ValueError, match=r"global_step\.json: expected \{\"global_step\": N\}"):
        model_files.global_step(tmp_path)


def test_the_casing_is_kept_and_a_bad_tokenizer_file_is_named(tmp_path):
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config()))
    model_dir.save_model_dir(pretrainer, tmp_path, do_lower_case=False)
    assert model_files.do_lower_case(tmp_path) is False
    (tmp_path / model_files.TOKENIZER_FILE).unlink()
    assert model_files.do_lower_case(tmp_path) is True  # directories written before the file: uncased
    (tmp_path / model_files.TOKENIZER_FILE).write_text('{"do_lower_case": "no"}')
    with pytest.raises(ValueError, match=r'tokenizer\.json: expected \{"do_lower_case": true\} or'):
        model_files.do_lower_case(tmp_path)


def test_a_task_models_class_and_config_are_read_from_its_file_and_a_bad_file_is_named(tmp_path):
    """What the fine-tuning commands read before TensorFlow starts: the task model's class and config."""
    encoder = AlbertEncoder(tiny_config())
    classifier = AlbertClassifier(
        encoder, num_classes=2, labels=("no", "yes"), preprocessing={"max_seq_length": 9}
    )
    model_dir.save_task_model(classifier, tmp_path)
    class_name, config = model_files.task_model_config(tmp_path)
    assert class_name == "AlbertClassifier" and config["labels"] == ["no", "yes"]
    assert config["preprocessing"]["max_seq_length"] == 9
    assert model_files.task_model_config(tmp_path / "none") is None
    # On TensorFlow's file systems too (ram://), where seeking before a file's start is not an OSError.
    for folder in (str(tmp_path), "ram://task_model_settings"):
        for data in (b"", b"not a zip file, but longer than a zip's end record"):
            file_io.write_atomically(file_io.join(folder, model_files.TASK_MODEL_FILE), data)
            with pytest.raises(ValueError, match=r"task_model\.keras: cannot be read as a Keras model file"):
                model_files.task_model_config(folder)


def test_a_truncated_weights_or_task_model_file_is_named(tmp_path):
    """A file cut short by a copy or a full disk: named, as the kind of file it should be."""
    encoder = AlbertEncoder(tiny_config())
    model_dir.save_model_dir(AlbertPretrainer(encoder), tmp_path)
    model_dir.save_task_model(AlbertClassifier(encoder, num_classes=2), tmp_path)
    for name in ("pretrainer.weights.h5", "task_model.keras"):
        path = tmp_path / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"weights\.h5: not the weights of the model albert_config\.json"):
        model_dir.load_pretrainer(str(tmp_path))
    with pytest.raises(ValueError, match=r"task_model\.keras: not a readable Keras model .*copied whole"):
        model_dir.load_task_model(str(tmp_path))
