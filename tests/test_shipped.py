"""albert_tf.shipped: the names of the configs, recipes and sample files the package ships."""

import fnmatch
import json
import pathlib

import pytest

from albert_tf import shipped
from tests.helpers import setup_arguments


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


def test_a_folder_of_a_shipped_name_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("sample", "tiny", "albert_tiny"):
        (tmp_path / name).mkdir()
    assert shipped.resolve("input_file", "sample").endswith("train.manifest.json")
    assert shipped.resolve("albert_config_file", "albert_tiny").endswith("albert_tiny.json")
    argv = shipped.expand_recipe_names(["run_pretraining", "--flagfile=tiny"], "run_pretraining")
    assert argv[1].endswith("configs/pretrain/tiny.flags")


def test_recipe_names_expand_to_the_entry_points_own_folder():
    argv = shipped.expand_recipe_names(["run_pretraining", "--flagfile=tiny", "--seed=3"], "run_pretraining")
    assert argv[1].endswith("configs/pretrain/tiny.flags") and argv[2] == "--seed=3"
    argv = shipped.expand_recipe_names(["run_classifier", "--flagfile", "sst-2"], "run_classifier")
    assert argv[1] == "--flagfile" and argv[2].endswith("configs/finetune/sst-2.flags")
    assert set(shipped.recipe_names("run_pretraining")) == {"tiny", "base", "large", "xlarge", "xxlarge"}
    assert shipped.recipe_names("run_squad") == ["squad-v1.1", "squad-v2.0"]
    assert shipped.recipe_names("run_race") == ["race"]
    assert {"sst-2", "mnli", "sts-b"} <= set(shipped.recipe_names("run_classifier"))
    assert not {"race", "squad-v1.1"} & set(shipped.recipe_names("run_classifier"))


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


def test_the_wheel_holds_every_file_a_name_stands_for():
    globs = setup_arguments()["package_data"]["albert_tf"]
    named = [shipped.resolve("albert_config_file", name) for name in shipped.config_names()]
    for entry_point in shipped.RECIPE_FOLDERS:
        folder = shipped.CONFIGS / shipped.RECIPE_FOLDERS[entry_point]
        named += [str(folder / f"{name}.flags") for name in shipped.recipe_names(entry_point)]
    named += [shipped.resolve(flag, "sample") for flag in ("input_file", "eval_input_file", "spm_model_file")]
    named += [str(path) for path in (shipped.SAMPLE / "records").iterdir()]  # the shards the manifests name
    named.append(str(shipped.SAMPLE / "LICENSE.rst"))
    for path in named:
        inside = str(pathlib.Path(path).relative_to(shipped.PACKAGE))
        assert any(fnmatch.fnmatch(inside, pattern) for pattern in globs), inside
