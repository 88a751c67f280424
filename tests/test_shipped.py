"""albert_tf.shipped: the names of the configs, recipes and sample files the package ships."""

import json
import pathlib

import pytest

from albert_tf import shipped


def test_every_shipped_config_name_resolves_to_its_json():
    names = shipped.config_names()
    assert {"albert_tiny", "albert_base", "albert_xxlarge", "bert_base"} <= set(names)
    for name in names:
        path = shipped.resolve("albert_config_file", name)
        assert path.endswith(f"configs/{name}.json")
        assert "hidden_size" in json.loads(pathlib.Path(path).read_text())


def test_sample_names_the_shipped_records_and_tokenizer():
    train = shipped.resolve("input_file", "sample")
    held_out = shipped.resolve("eval_input_file", "sample")
    spm = shipped.resolve("spm_model_file", "sample")
    assert train.endswith("train.manifest.json") and held_out.endswith("eval.manifest.json")
    assert spm.endswith(".model")
    for path in (train, held_out, spm):
        assert pathlib.Path(path).stat().st_size > 0, path


def test_a_path_means_the_file_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shipped.resolve("albert_config_file", "my/config.json") == "my/config.json"
    assert shipped.resolve("input_file", "records/train.manifest.json") == "records/train.manifest.json"
    assert shipped.resolve("output_dir", "sample") == "sample"  # not a flag that takes shipped files
    assert shipped.resolve("spm_model_file", None) is None
    (tmp_path / "albert_base").write_text("{}")  # a file of that name wins over the shipped config
    assert shipped.resolve("albert_config_file", "albert_base") == "albert_base"


def test_recipe_names_expand_to_the_entry_points_own_folder():
    argv = shipped.expand_recipe_names(["run_pretraining", "--flagfile=tiny", "--seed=3"], "run_pretraining")
    assert argv[1].endswith("configs/pretrain/tiny.flags") and argv[2] == "--seed=3"
    argv = shipped.expand_recipe_names(["run_classifier", "--flagfile", "sst-2"], "run_classifier")
    assert argv[1] == "--flagfile" and argv[2].endswith("configs/finetune/sst-2.flags")
    assert set(shipped.recipe_names("run_pretraining")) == {"tiny", "base", "large", "xlarge", "xxlarge"}
    assert {"sst-2", "squad-v2.0", "race"} <= set(shipped.recipe_names("run_squad"))


def test_a_flagfile_path_is_left_to_absl():
    argv = ["run_pretraining", "--flagfile=my/run.flags", "--flagfile=base.flags"]
    assert shipped.expand_recipe_names(argv, "run_pretraining") == argv


def test_an_unknown_recipe_name_is_refused_with_the_names_there_are():
    with pytest.raises(SystemExit) as raised:
        shipped.expand_recipe_names(["run_pretraining", "--flagfile=tiny_model"], "run_pretraining")
    message = str(raised.value)
    assert "--flagfile=tiny_model" in message and "base, large, tiny, xlarge, xxlarge" in message


def test_an_unknown_config_name_is_refused_with_the_names_there_are():
    with pytest.raises(ValueError, match=r"--albert_config_file=albert_huge: no such file, and not a shipped "
                       r"config \(albert_base, .*bert_large\)"):  # fmt: skip
        shipped.resolve("albert_config_file", "albert_huge")
    assert shipped.resolve("albert_config_file", "missing/albert.json") == "missing/albert.json"
