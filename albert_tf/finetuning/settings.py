"""The settings of the fine-tuning commands: what every one takes (`FineTuningSettings`), and
`run_classifier`'s and `run_race`'s (`ClassifierSettings`) and `run_squad`'s (`SquadSettings`).

No TensorFlow here: the commands build their settings, read their data and check the model directory
before TensorFlow starts. A fine-tuned model directory brings the settings it was fine-tuned with
(`saved_settings`): the commands take them for the flags not given, so a model evaluated, predicting or
fine-tuned further reads its data as it was trained, as its export does.
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
    end_with_best: bool = True
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


# The task model each command fine-tunes, continues or predicts with.
TASK_MODEL_CLASSES = {
    "run_classifier": "AlbertClassifier",
    "run_race": "AlbertMultipleChoice",
    "run_squad": "AlbertSpanLabeler",
}
# The module of each command's task: its run(settings, data) and constant_baseline(settings, data).
TASK_MODULES = {
    "run_classifier": "albert_tf.finetuning.classifier",
    "run_race": "albert_tf.finetuning.multiple_choice",
    "run_squad": "albert_tf.finetuning.span",
}
# A span model's span_settings, by the run_squad flag of the same name.
SPAN_FLAGS = ("doc_stride", "max_query_length", "n_best_size", "max_answer_length", "null_score_threshold")


def saved_settings(command, task_model, where, values):
    """The settings, by flag name, that a fine-tuned model keeps: its sequence length; a text classifier's
    labels in index order; a span model's windows, decoding and answerability (version_2_with_negative).

    Args:
      command: "run_classifier", "run_race" or "run_squad".
      task_model: (class name, Keras config) of the model (model_files.task_model_config), or None.
      where: the model directory, for errors.
      values: the command's flag values by name. Only the text task takes labels from the model (a GLUE
        task has its own).
    Raises ValueError when the model is not the command's kind, or is a text classifier with no label names
    to predict with (none kept, none given, no labelled data to read them from).
    """
    if task_model is None:
        return {}
    class_name, config = task_model
    if class_name != TASK_MODEL_CLASSES[command]:
        raise ValueError(
            f"{where} holds a fine-tuned {class_name}; {command} fine-tunes and predicts with an "
            f"{TASK_MODEL_CLASSES[command]}"
        )
    saved = {}
    length = (config.get("preprocessing") or {}).get("max_seq_length")
    if length:
        saved["max_seq_length"] = int(length)
    if command == "run_classifier" and str(values.get("task_name")).lower() == "text":
        classes, labels = config.get("num_classes", 1), config.get("labels")
        if labels:
            saved["labels"] = tuple(str(label) for label in labels)
        elif classes > 1 and not (values.get("labels") or values.get("train_file") or values.get("dev_file")):
            raise ValueError(
                f"{where} holds a {classes}-class classifier without label names: give --labels, its classes "
                "in index order"
            )
    if command == "run_squad":
        saved["version_2_with_negative"] = bool(config.get("answerability"))
        span = config.get("span_settings") or {}
        saved.update({name: span[name] for name in SPAN_FLAGS if name in span})
    return saved
