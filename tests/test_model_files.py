"""A model directory's files read and written without Keras (albert_tf.model_files): what each says, and the
message that names a directory of the wrong kind or a file that cannot be read. tests/models/test_model_dir.py
checks them with the models that write them."""

import json
import zipfile

import pytest

from albert_tf import model_files


def make(folder, *names):
    """A folder holding empty files of those names (their presence is what is checked)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    return folder


def keras_file(path, saved):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(saved))


def test_the_files_of_a_model_directory_and_its_kind(tmp_path):
    pretrained = make(tmp_path / "pretrained", "albert_config.json", "pretrainer.weights.h5", "spm.model")
    assert model_files.files(pretrained) == ["albert_config.json", "spm.model", "pretrainer.weights.h5"]
    assert model_files.is_model_dir(pretrained) and not model_files.has_task_model(pretrained)
    tuned = make(tmp_path / "tuned", "task_model.keras", "albert_config.json", "tokenizer.json")
    assert model_files.files(tuned) == ["albert_config.json", "tokenizer.json", "task_model.keras"]
    assert model_files.has_task_model(tuned) and not model_files.is_model_dir(tuned)
    assert not model_files.is_model_dir(make(tmp_path / "weights", "pretrainer.weights.h5"))
    assert model_files.files(tmp_path / "missing") == []


def test_a_file_required_is_found_or_the_directory_is_named_as_what_it_is(tmp_path):
    pretrained = make(tmp_path / "pretrained", "albert_config.json", "pretrainer.weights.h5")
    assert model_files.require(pretrained, "albert_config.json") == str(pretrained / "albert_config.json")
    with pytest.raises(FileNotFoundError) as error:
        model_files.require(pretrained, "task_model.keras")
    assert str(error.value) == (
        f"{pretrained} holds a pretrained model (pretrainer.weights.h5), not a fine-tuned one "
        "(task_model.keras): fine-tune it first, or use it as a pretrained model (export_saved_model "
        "--task=encoder or pretraining)"
    )
    tuned = make(tmp_path / "tuned", "task_model.keras")
    with pytest.raises(FileNotFoundError) as error:
        model_files.require(tuned, "pretrainer.weights.h5")
    assert str(error.value) == (
        f"{tuned} holds a fine-tuned model (task_model.keras), not a pretrained one (pretrainer.weights.h5): "
        "give the pretrained model directory it was fine-tuned from"
    )
    # Other files missing from either kind, and a folder of neither: the file is named.
    for folder, name in ((tuned, "spm.model"), (make(tmp_path / "weights", "pretrainer.weights.h5"),
                         "albert_config.json"), (make(tmp_path / "empty"), "task_model.keras")):  # fmt: skip
        with pytest.raises(FileNotFoundError) as error:
            model_files.require(folder, name)
        assert str(error.value) == f"{folder} is not a model directory: it has no {name}"
    with pytest.raises(FileNotFoundError, match=r"^.*missing: no such model directory$"):
        model_files.require(tmp_path / "missing", "albert_config.json")


def test_a_task_models_class_and_config_or_what_is_wrong_with_its_file(tmp_path):
    folder = make(tmp_path / "tuned")
    assert model_files.task_model_config(folder) is None
    keras_file(folder / "task_model.keras", {"class_name": "AlbertClassifier", "config": {"num_classes": 2}})
    assert model_files.task_model_config(folder) == ("AlbertClassifier", {"num_classes": 2})
    for saved in ({"class_name": "AlbertClassifier", "config": 3}, {"config": {}}, ["AlbertClassifier", {}]):
        keras_file(folder / "task_model.keras", saved)
        with pytest.raises(ValueError) as error:
            model_files.task_model_config(folder)
        assert (
            str(error.value)
            == f"{folder / 'task_model.keras'}: its config.json holds no model class and config"
        )


def test_the_run_to_resume_is_its_task_model_or_the_one_it_recorded_beside_its_checkpoints(tmp_path):
    out = make(tmp_path / "out")
    run_file = out / model_files.RUN_MODEL_FILE
    assert model_files.run_model_config(out) is None
    make(out, model_files.RUN_MODEL_FILE)
    run_file.write_text(json.dumps({"class_name": "AlbertSpanLabeler", "config": {"answerability": True}}))
    assert model_files.run_model_config(out) is None  # no checkpoints: nothing to resume
    make(out, model_files.CHECKPOINT_STATE_FILE)
    assert model_files.run_model_config(out) == ("AlbertSpanLabeler", {"answerability": True})
    keras_file(out / "task_model.keras", {"class_name": "AlbertClassifier", "config": {}})
    assert model_files.run_model_config(out) == ("AlbertClassifier", {})  # the model it saved
    (out / "task_model.keras").unlink()
    run_file.write_text("{not json")
    with pytest.raises(ValueError, match=r"^.*checkpoints/task_model\.json: not JSON \(Expecting"):
        model_files.run_model_config(out)
    run_file.write_text(json.dumps(["AlbertSpanLabeler"]))
    with pytest.raises(ValueError) as error:
        model_files.run_model_config(out)
    assert str(error.value) == f"{run_file} holds no model class and config"
    run_file.unlink()
    assert model_files.run_model_config(out) is None  # checkpoints of a run that recorded no model


def test_the_step_and_rollbacks_are_written_and_read_back(tmp_path):
    assert (model_files.global_step(tmp_path), model_files.rollbacks(tmp_path)) == (None, 0)  # no file
    model_files.write_global_step(tmp_path, 0)
    assert (model_files.global_step(tmp_path), model_files.rollbacks(tmp_path)) == (0, 0)
    assert json.loads((tmp_path / "global_step.json").read_text()) == {"global_step": 0}
    model_files.write_global_step(tmp_path, 700, rollbacks=2)
    assert (model_files.global_step(tmp_path), model_files.rollbacks(tmp_path)) == (700, 2)
    model_files.write_global_step(tmp_path, None, rollbacks=2)
    assert not (tmp_path / "global_step.json").exists()
    model_files.write_global_step(tmp_path, None)  # nothing to remove: fine


@pytest.mark.parametrize(
    "text, reader, expected",
    [
        ('{"rollbacks": 1}', model_files.global_step, '{"global_step": N} with N a whole number ≥ 0'),
        ('{"global_step": -1}', model_files.global_step, '{"global_step": N} with N a whole number ≥ 0'),
        ('{"global_step": true}', model_files.global_step, '{"global_step": N} with N a whole number ≥ 0'),
        ("[300]", model_files.global_step, '{"global_step": N} with N a whole number ≥ 0'),
        ('{"global_step": 3, "rollbacks": -1}', model_files.rollbacks, "with R a whole number ≥ 0"),
        ('{"global_step": 3, "rollbacks": "2"}', model_files.rollbacks, "with R a whole number ≥ 0"),
        ("[3]", model_files.rollbacks, "with R a whole number ≥ 0"),
    ],
)
def test_a_step_file_that_does_not_say_a_step_is_named(tmp_path, text, reader, expected):
    (tmp_path / "global_step.json").write_text(text)
    with pytest.raises(ValueError) as error:
        reader(tmp_path)
    assert str(error.value).startswith(f"{tmp_path / 'global_step.json'}: expected ")
    assert str(error.value).endswith(expected)


def test_the_tokenizer_settings_are_written_and_read_back(tmp_path):
    """tokenizer.json: lowercased unless it says not, combining marks dropped unless it says kept."""
    assert (model_files.do_lower_case(tmp_path), model_files.keep_accents(tmp_path)) == (True, False)
    model_files.write_tokenizer_settings(tmp_path, False)
    assert (model_files.do_lower_case(tmp_path), model_files.keep_accents(tmp_path)) == (False, False)
    assert json.loads((tmp_path / "tokenizer.json").read_text()) == {"do_lower_case": False}
    model_files.write_tokenizer_settings(tmp_path, True, keeps_accents=True)
    assert (model_files.do_lower_case(tmp_path), model_files.keep_accents(tmp_path)) == (True, True)
    (tmp_path / "tokenizer.json").write_text("[false]")
    with pytest.raises(
        ValueError, match=r'tokenizer\.json: expected \{"do_lower_case": true\} or \{"do_lower'
    ):
        model_files.do_lower_case(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"do_lower_case": true, "keep_accents": "yes"}')
    with pytest.raises(
        ValueError, match=r'tokenizer\.json: expected \{"do_lower_case": \.\.\., "keep_accents": true'
    ):
        model_files.keep_accents(tmp_path)


def test_the_settings_a_tokenizer_was_trained_with_are_read_back_and_bad_ones_named(tmp_path):
    prefix = str(tmp_path / "spm" / "albert")
    (tmp_path / "spm").mkdir()
    assert model_files.trained_settings_path(prefix + ".model") == prefix + ".tokenizer.json"
    assert model_files.trained_settings(prefix + ".model") == (prefix + ".tokenizer.json", None)
    model_files.write_trained_settings(prefix, False, True)
    assert json.loads((tmp_path / "spm" / "albert.tokenizer.json").read_text()) == {
        "do_lower_case": False, "keep_accents": True
    }  # fmt: skip
    assert model_files.trained_settings(prefix + ".model") == (
        prefix + ".tokenizer.json", {"do_lower_case": False, "keep_accents": True}
    )  # fmt: skip
    expected = '{"do_lower_case": true or false, "keep_accents": true or false}'
    for bad in ('{"do_lower_case": true}', '{"do_lower_case": 1, "keep_accents": false}', "[]", "not json"):
        (tmp_path / "spm" / "albert.tokenizer.json").write_text(bad)
        with pytest.raises(ValueError) as error:
            model_files.trained_settings(prefix + ".model")
        assert str(error.value) == f"{prefix}.tokenizer.json: expected {expected}", bad
