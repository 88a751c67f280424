"""The settings of the fine-tuning commands: what every one takes (`FineTuningSettings`), and
`run_classifier`'s and `run_race`'s (`ClassifierSettings`) and `run_squad`'s (`SquadSettings`).

No TensorFlow here: the commands build their settings, read their data and check the model directory
before TensorFlow starts.
"""

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningSettings:
    """The flags every fine-tuning entry point takes."""

    model_dir: str
    output_dir: str
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 2e-5
    train_step: int = 1000
    warmup_step: int = 100
    save_checkpoints_steps: int = 200
    keep_checkpoint_max: int = 2
    gradient_accumulation_steps: int = 1
    remat: bool = False
    rollback_on_collapse: bool = False
    rollback_learning_rate_factor: float = 0.5
    dropout_rate: float = 0.1
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    strategy: str = "default"
    tpu: str | None = None
    mixed_precision: str = "float32"
    jit_compile: bool = False
    seed: int = 12345
    errors: str = "strict"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierSettings(FineTuningSettings):
    """The `run_classifier` flags (and `run_race`'s: task_name "race", data_dir the RACE folder)."""

    task_name: str
    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    labels: tuple | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadSettings(FineTuningSettings):
    """The `run_squad` flags."""

    train_file: str | None = None
    predict_file: str | None = None
    version_2_with_negative: bool = False
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_threshold: float = 0.0
