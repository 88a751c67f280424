"""What a fine-tuning run reads before TensorFlow starts: the model directory's tokenizer and config, checked
against the settings, and the task's data, every file the settings ask for read and checked. A mistake in
either ends the command in well under a second, naming the file, line or flag, before TensorFlow, a
distribution strategy or a TPU has started.

    data = read(settings, "run_classifier")          # then: classifier.run(settings, data)
"""

import dataclasses

from albert_tf import file_io, model_files
from albert_tf.finetuning import glue, race, squad
from albert_tf.finetuning.glue import DataError
from albert_tf.finetuning.settings import TASK_MODEL_CLASSES
from albert_tf.text.span_settings import check_answer_settings, check_window_settings
from albert_tf.text.tokenizer import check_fits_vocabulary


@dataclasses.dataclass(frozen=True)
class TaskData:
    """A run's data and the model directory's tokenizer.

    spm: the model directory's SentencePiece model; do_lower_case: whether its text is lowercased;
    splits: {"train" / "dev" / "test": examples}, the splits the settings ask for (SQuAD's "dev" and "test"
    are one list: the predict file's questions; MNLI's "dev_mismatched" and "test_mismatched" come with its
    "dev" and "test"); labels: the label names in index order (None for regression and SQuAD); keep_accents:
    whether its text keeps combining marks.
    """

    spm: str
    do_lower_case: bool
    splits: dict
    labels: tuple | None = None
    keep_accents: bool = False


def read(settings, command) -> TaskData:
    """Checks settings.model_dir against the settings, then reads the splits the command reads
    ("run_classifier", "run_race", "run_squad")."""
    s = settings
    file_io.check_folder_path(s.output_dir, "--output_dir")
    spm = model_files.spm_model_file(s.model_dir)
    if not spm:
        raise FileNotFoundError(f"{s.model_dir} has no spm.model")
    config = model_files.load_config(s.model_dir)
    check_fits_vocabulary(spm, config.vocab_size, file_io.join(s.model_dir, model_files.CONFIG_FILE))
    positions = config.max_position_embeddings
    if s.max_seq_length > positions:
        raise ValueError(
            f"--max_seq_length={s.max_seq_length} exceeds the model's max_position_embeddings={positions}"
        )
    if not s.do_train and not model_files.has_task_model(s.model_dir):
        raise ValueError(
            f"--nodo_train needs a fine-tuned --model_dir ({model_files.TASK_MODEL_FILE}, what a fine-tuning "
            f"run writes to its --output_dir): {s.model_dir} holds a pretrained model, whose task head would "
            "be random"
        )
    do_lower_case = model_files.do_lower_case(s.model_dir)  # a cased model's text keeps its case
    splits, labels = READERS[command](s)
    # A training batch is never short (the last partial one is dropped): fewer examples make none at all.
    # SQuAD's batches are windows, of which a question makes one or more.
    if command != "run_squad" and s.do_train and len(splits["train"]) < s.train_batch_size:
        raise DataError(
            f"{len(splits['train'])} training examples, fewer than --train_batch_size={s.train_batch_size}: "
            "lower it, or add examples"
        )
    if s.do_train:
        _check_the_run_to_resume(s, command, splits, labels)
    return TaskData(spm, do_lower_case, splits, labels, keep_accents=model_files.keep_accents(s.model_dir))


def _check_the_run_to_resume(settings, command, splits, labels):
    """Training into an --output_dir that holds a fine-tuned model, or the checkpoints of a run stopped before
    it saved one, resumes that run: its model must be this command's kind, at this length, and a classifier
    of these texts (one or pairs) and labels; else the resumed weights would be saved, and served, under this
    run's settings (a class's output named by another label)."""
    s = settings
    saved = model_files.run_model_config(s.output_dir)
    if saved is None:
        return
    class_name, config = saved
    where = f"--output_dir={s.output_dir}"
    if class_name != TASK_MODEL_CLASSES[command]:
        raise ValueError(
            f"{where} holds a fine-tuned {class_name}, and training there resumes its run: use a new "
            "--output_dir for this one"
        )
    preprocessing = config.get("preprocessing") or {}
    kept = {"max_seq_length": preprocessing.get("max_seq_length")}
    this = {"max_seq_length": s.max_seq_length}
    if command == "run_classifier":
        examples = next(iter(splits.values()))
        kept.update(
            text_pair=preprocessing.get("text_pair"),
            num_classes=config.get("num_classes"),
            labels=tuple(str(label) for label in config.get("labels") or ()) or None,
        )
        pair, classes = examples[0].text_b is not None, len(labels) if labels else 1
        this.update(text_pair=pair, num_classes=classes, labels=tuple(labels) if labels else None)
    differ = [name for name, value in kept.items() if value is not None and value != this[name]]
    if differ:
        kept, this = (", ".join(f"{name}={values[name]}" for name in differ) for values in (kept, this))
        raise ValueError(
            f"{where} holds a run fine-tuned with {kept}, and training there resumes it: this run has "
            f"{this}, under which its weights would be saved and served. Use a new --output_dir, or delete "
            "that one"
        )


def _wanted(settings):
    return [split for split, on in (("train", settings.do_train), ("dev", settings.do_eval),
                                    ("test", settings.do_predict)) if on]  # fmt: skip


def classifier_splits(settings):
    """GLUE (data_dir) or text (train_file, dev_file, test_file): the splits and the label names (None for
    regression)."""
    s = settings
    task_name = s.task_name.lower()
    if task_name in glue.TASKS:
        if not s.data_dir:
            raise ValueError(f"--data_dir is required for the GLUE task {task_name}")
        for name in ("train_file", "dev_file", "test_file", "labels"):
            if getattr(s, name):
                raise ValueError(
                    f"--{name} is for --task_name=text; the GLUE task {task_name} reads --data_dir and has "
                    "its own labels"
                )
        wanted = [name for split in _wanted(s) for name in glue.reported_splits(task_name, split)]
        splits = {split: glue.read_glue(s.data_dir, task_name, split, s.errors) for split in wanted}
        return splits, glue.TASKS[task_name].labels
    if task_name != "text":
        raise ValueError(
            f"--task_name must be a GLUE task ({', '.join(glue.TASKS)}) or 'text', got {s.task_name!r}"
        )
    files = {"train": s.train_file, "dev": s.dev_file, "test": s.test_file}
    step = {"train": "do_train", "dev": "do_eval", "test": "do_predict"}
    missing = [split for split in _wanted(s) if not files[split]]
    if missing:
        needed = " and ".join(f"--{split}_file (for --{step[split]})" for split in missing)
        off = " and ".join(f"--no{step[split]}" for split in missing)
        raise ValueError(f"--task_name=text needs {needed}, or {off}")
    labels, splits = s.labels, {}
    for split, path in files.items():
        if path and split == "test" and s.do_predict:
            splits[split], _ = glue.read_text_classification(path, labels, label=None, errors=s.errors)
        elif path and split != "test":
            splits[split], labels = glue.read_text_classification(path, labels, errors=s.errors)
    paired = {split: bool(examples) and examples[0].text_b is not None for split, examples in splits.items()}
    if len(set(paired.values())) > 1:
        pairs, single = (
            next(files[split] for split, p in paired.items() if p is kind) for kind in (True, False)
        )
        raise DataError(f"{pairs} holds sentence pairs (text_b) and {single} single texts: one or the other")
    return splits, labels


def race_splits(settings):
    """RACE's splits under data_dir, and the answer letters as labels."""
    s = settings
    if not s.data_dir:
        raise ValueError("--data_dir is required: the RACE folder with train/, dev/ and test/")
    splits = {split: race.read_race(s.data_dir, split, errors=s.errors) for split in _wanted(s)}
    return splits, tuple(race.LETTERS)


def squad_splits(settings):
    """The questions of train_file ("train") and predict_file ("dev" and "test", one list); no labels.
    The window flags are checked first."""
    s = settings
    check_window_settings(s.max_seq_length, s.doc_stride, s.max_query_length)
    check_answer_settings(s.n_best_size, s.max_answer_length)
    splits = {}
    if s.do_train:
        if not s.train_file:
            raise ValueError("--train_file is required with --do_train")
        splits["train"] = squad.trainable(_squad_examples(s, s.train_file, labelled=True))
        if not splits["train"]:
            raise DataError(f"{s.train_file}: no question has its answer in the context, to train on")
    if s.do_eval or s.do_predict:
        if not s.predict_file:
            raise ValueError("--predict_file is required with --do_eval or --do_predict")
        examples = _squad_examples(s, s.predict_file, labelled=s.do_eval)
        splits.update({split: examples for split in ("dev", "test") if split in _wanted(s)})
    return splits, None


def _squad_examples(settings, path, labelled):
    """The questions of a file; labelled: each must have answers or be unanswerable (v2.0)."""
    examples = squad.read_squad(path, settings.errors)
    if not examples:
        raise DataError(f"{path}: no questions")
    impossible = [e.qas_id for e in examples if e.is_impossible]
    if impossible and not settings.version_2_with_negative:
        raise DataError(
            f"{path}: {len(impossible)} unanswerable question(s) (e.g. {impossible[0]}): "
            "SQuAD v2.0 data needs --version_2_with_negative"
        )
    unlabelled = [e.qas_id for e in examples if not e.answers and not e.is_impossible]
    if labelled and unlabelled:
        raise DataError(
            f"{path}: {len(unlabelled)} question(s) without answers (e.g. {unlabelled[0]}) "
            "to train or evaluate on"
        )
    return examples


# Each command's reader: settings → (splits, labels).
READERS = {"run_classifier": classifier_splits, "run_race": race_splits, "run_squad": squad_splits}
