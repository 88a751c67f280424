"""run_pretraining's settings: a value that cannot work is refused before anything runs, naming its flag."""

import pytest

from albert_tf.pretraining.settings import PretrainingSettings

REQUIRED = dict(albert_config_file="albert_config.json", input_file="records", output_dir="run")


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(num_train_steps=0), "--num_train_steps must be positive, got 0"),
        (dict(max_predictions_per_seq=0), "--max_predictions_per_seq must be positive, got 0"),
        (dict(masked_lm_prob=0.0, online_masking=True), r"--masked_lm_prob must be in \(0, 1\], got 0\.0"),
        (dict(masked_lm_prob=5.0), r"--masked_lm_prob must be in \(0, 1\], got 5\.0"),
        (dict(optimizer="sgd"), "--optimizer must be one of .*; got 'sgd'"),
        (dict(do_train=False, do_eval=False), "--nodo_train and --nodo_eval: nothing to do"),
        (dict(eval_every_steps=2), "evaluation needs --eval_input_file"),
    ],
)
def test_a_value_that_cannot_work_is_refused_naming_its_flag(changes, message):
    with pytest.raises(ValueError, match=message):
        PretrainingSettings(**REQUIRED, **changes).check()
    PretrainingSettings(**REQUIRED).check()  # the defaults work


def test_an_output_dir_that_is_a_file_or_lies_under_one_is_refused(tmp_path):
    file = tmp_path / "file"
    file.write_text("")
    for output_dir in (file, file / "run"):
        with pytest.raises(ValueError, match=f"--output_dir={output_dir}: {file} is a file, not a folder"):
            PretrainingSettings(**{**REQUIRED, "output_dir": str(output_dir)}).check()
    PretrainingSettings(**{**REQUIRED, "output_dir": str(tmp_path / "new" / "run")}).check()
