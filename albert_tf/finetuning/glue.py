"""GLUE's TSV files and generic CSV / JSONL text-classification files → examples → tf.data batches.

    examples = read_glue("glue_data/MRPC", "mrpc", "train")
    dataset = classification_dataset(examples, "spm.model", seq_length=128, batch_size=32, is_training=True)

Files are read as GLUE ships them (tab-separated, no quoting, the column layouts of the original
`run_classifier.py`). A row with the wrong number of columns, or a label outside the task's label set, is an
error naming the file and line.
"""

import csv
import dataclasses
import io
import json
import logging

from albert_tf import file_io


@dataclasses.dataclass(frozen=True)
class Example:
    """One labelled (or, for test files, unlabelled) text or text pair."""

    text_a: str
    text_b: str | None
    label: int | float | None  # label index, regression target, or None


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a split's columns are: indices of text_a, text_b (or None) and label (or None)."""

    text_a: int
    text_b: int | None = None
    label: int | None = None
    header: bool = True


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE task: its labels (None for regression), file names and column layouts. short_rows_skipped:
    labelled rows with fewer columns than the layout needs are skipped and counted, not refused (QQP's
    train.tsv has such rows; the original and Model Garden skip them)."""

    name: str
    labels: tuple | None
    files: dict
    labelled: Layout
    test: Layout
    short_rows_skipped: bool = False


_PAIR = Layout(1, 2, 3)
_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
TASKS = {
    task.name: task
    for task in (
        GlueTask("cola", ("0", "1"), _FILES, Layout(3, None, 1, header=False), Layout(1)),
        GlueTask("sst-2", ("0", "1"), _FILES, Layout(0, None, 1), Layout(1)),
        GlueTask("mrpc", ("0", "1"), _FILES, Layout(3, 4, 0), Layout(3, 4)),
        GlueTask("sts-b", None, _FILES, Layout(7, 8, 9), Layout(7, 8)),
        GlueTask("qqp", ("0", "1"), _FILES, Layout(3, 4, 5), Layout(1, 2), short_rows_skipped=True),
        GlueTask("mnli", ("contradiction", "entailment", "neutral"),
                 {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv",
                  "dev_mismatched": "dev_mismatched.tsv", "test_mismatched": "test_mismatched.tsv"},
                 Layout(8, 9, -1), Layout(8, 9)),
        GlueTask("qnli", ("entailment", "not_entailment"), _FILES, _PAIR, Layout(1, 2)),
        GlueTask("rte", ("entailment", "not_entailment"), _FILES, _PAIR, Layout(1, 2)),
        GlueTask("wnli", ("0", "1"), _FILES, _PAIR, Layout(1, 2)),
    )
}  # fmt: skip


class DataError(ValueError):
    """Bad input data; the message names the file and line."""


ERRORS = ("strict", "replace")


def read_task_text(path, errors="strict"):
    """A task data file's text, as UTF-8.

    Args:
      errors: "strict" refuses a file holding bytes that are not UTF-8, naming its line and byte offset;
        "replace" reads each such byte as U+FFFD (what the in-graph tokenizer and the export do with them).
    """
    if errors not in ERRORS:
        raise DataError(f"--errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    if not file_io.exists(path):
        raise DataError(f"{path}: no such file")
    data = file_io.read_bytes(path)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(
            f"{path}:{line}: byte 0x{data[error.start]:02x} at offset {error.start:,} is not UTF-8; "
            "re-encode the file as UTF-8, or pass --errors=replace to read such bytes as U+FFFD"
        ) from None


def reported_splits(task_name, split):
    """The splits of a task that stand for one of "train", "dev", "test": GLUE reports MNLI on two dev sets
    and two test sets, of the genres seen in training (matched) and of others (mismatched)."""
    task, mismatched = TASKS.get(task_name.lower()), f"{split}_mismatched"
    return (split, mismatched) if task and mismatched in task.files else (split,)


def read_glue(data_dir, task_name, split, errors="strict"):
    """Examples of one split ("train", "dev", "test"; MNLI also "dev_mismatched", "test_mismatched");
    `errors`: as read_task_text."""
    task = TASKS.get(task_name.lower())
    if task is None:
        raise DataError(f"unknown GLUE task {task_name!r}; expected one of {', '.join(TASKS)}")
    if split not in task.files:
        raise DataError(f"{task.name} has no split {split!r}; expected one of {', '.join(task.files)}")
    path = file_io.join(data_dir, task.files[split])
    layout = task.test if split.startswith("test") else task.labelled
    return list(_read_tsv(path, task, layout, errors))


def _read_tsv(path, task, layout, errors):
    skipped = []  # line numbers of short rows (short_rows_skipped)
    with io.StringIO(read_task_text(path, errors), newline="") as file:
        columns = None
        for number, line in enumerate(file, start=1):
            row = line.rstrip("\r\n").split("\t")
            if layout.header and number == 1:
                columns = len(row)
                if columns < _min_columns(layout):  # another task's file, or not a GLUE file
                    raise DataError(
                        f"{path}:1: the header has {columns} tab-separated columns; {task.name}'s "
                        f"{'test' if layout is task.test else 'labelled'} files have at least "
                        f"{_min_columns(layout)}"
                    )
                continue
            if not line.strip():
                continue
            expected = columns or _min_columns(layout)
            if (columns and len(row) != columns) or len(row) < expected:
                if task.short_rows_skipped and layout is task.labelled and len(row) < expected:
                    skipped.append(number)
                    continue
                raise DataError(
                    f"{path}:{number}: expected {expected} tab-separated columns, found {len(row)}"
                )
            yield Example(
                row[layout.text_a],
                row[layout.text_b] if layout.text_b is not None else None,
                _label(row[layout.label], task.labels, path, number) if layout.label is not None else None,
            )
    if skipped:
        logging.warning(
            "%s: %d row(s) with missing fields skipped, as the original does for %s (lines %s)",
            path,
            len(skipped),
            task.name.upper(),
            ", ".join(map(str, skipped[:5])) + (", ..." * (len(skipped) > 5)),
        )


def _min_columns(layout):
    return 1 + max(i for i in (layout.text_a, layout.text_b, layout.label) if i is not None and i >= 0)


def _label(value, labels, path, number):
    if labels is None:
        try:
            return float(value)
        except ValueError:
            raise DataError(f"{path}:{number}: regression target {value!r} is not a number") from None
    if value not in labels:
        raise DataError(f"{path}:{number}: label {value!r} is not one of {', '.join(labels)}")
    return labels.index(value)


def read_text_classification(path, labels=None, text="text", text_b="text_b", label="label", errors="strict"):
    """Examples from a CSV file (with a header) or a JSONL file (one object per line).

    Args:
      labels: the label set, in index order; None: the sorted labels found in the file.
      text, text_b, label: column (CSV) or key (JSONL) names. The file holds sentence pairs when its rows
        have text_b (every row: a file with it in some rows only is refused), single texts otherwise;
        text_b None: single texts whatever the rows hold. label None for unlabelled files (test sets).
      errors: as read_task_text.

    Returns:
      (examples, labels).
    """
    rows = []
    read = _fields_read(text, text_b, label)
    content = read_task_text(path, errors)
    if path.endswith(".jsonl"):
        with io.StringIO(content) as file:
            for number, line in enumerate(file, start=1):
                if line.strip():
                    try:
                        rows.append((number, json.loads(line)))
                    except json.JSONDecodeError as error:
                        raise DataError(f"{path}:{number}: not a JSON object ({error.msg})") from None
    else:
        with io.StringIO(content, newline="") as file:
            reader = csv.DictReader(file)
            rows = [(reader.line_num, row) for row in reader]
        header = reader.fieldnames or []
        absent = [key for key in (text, label) if key and header and key not in header]
        if absent:  # every row would miss it: say so once, at the header
            raise DataError(
                f"{path}:1: the header ({', '.join(header)}) has no {' or '.join(absent)} column; text "
                f"classification reads the columns {read}: rename the file's columns to these"
            )
        for number, row in rows:
            if None in row:  # DictReader's key for the fields past the header's
                fields = len(header) + len(row[None])
                raise DataError(
                    f"{path}:{number}: {fields} fields, the header has {len(header)} "
                    f"({', '.join(header)}); quote a field that holds a comma"
                )
            if None in row.values():  # DictReader's value for the header's fields past the row's
                fields = sum(value is not None for value in row.values())
                raise DataError(
                    f"{path}:{number}: {fields} field{'s' * (fields != 1)}, the header has {len(header)} "
                    f"({', '.join(header)})"
                )
    if not rows:
        raise DataError(f"{path}: no examples")
    if text_b:
        pairs = [isinstance(row, dict) and row.get(text_b) is not None for _, row in rows]
        if any(pairs) and not all(pairs):
            number = rows[pairs.index(False)][0]
            raise DataError(
                f"{path}:{number}: missing {text_b}, which other rows have: pairs throughout, or none"
            )
        text_b = text_b if pairs and all(pairs) else None
    keys = [key for key in (text, text_b, label) if key]
    for number, row in rows:
        if not isinstance(row, dict):
            raise DataError(f"{path}:{number}: not a JSON object")
        missing = [key for key in keys if row.get(key) is None]
        if missing:
            raise DataError(
                f"{path}:{number}: missing {', '.join(missing)} (keys found: {', '.join(row) or 'none'}); "
                f"text classification reads the keys {read}"
            )
    if label is None:
        examples = [Example(str(row[text]), str(row[text_b]) if text_b else None, None) for _, row in rows]
        return examples, tuple(labels or ())
    for number, row in rows:
        if not str(row[label]).strip():
            raise DataError(f"{path}:{number}: the {label} is empty")
    if labels is None:
        labels = tuple(sorted({str(row[label]) for _, row in rows}))
    examples = [
        Example(
            str(row[text]),
            str(row[text_b]) if text_b else None,
            _label(str(row[label]), labels, path, number),
        )
        for number, row in rows
    ]
    return examples, tuple(labels)


def _fields_read(text, text_b, label):
    """The columns or keys read_text_classification reads, in words (run_classifier's are fixed)."""
    names = ", ".join(key for key in (text, label) if key)
    return names + (f" and, for sentence pairs, {text_b}" if text_b else "")


def classification_dataset(
    examples, spm_model_file, seq_length, batch_size, is_training=False, seed=12345, pad_to_multiple=32,
    do_lower_case=True, keep_accents=False, start=None,
):  # fmt: skip
    """(features, label) batches of examples for `model.fit` (features alone for unlabelled examples), as
    `text.batches.text_dataset` makes them: in-graph tokenization, each batch padded to its longest example
    rounded up to a multiple of `pad_to_multiple` (None: to seq_length). Labels: int32 class index, or
    float32 for regression. Text is lowercased before SentencePiece unless do_lower_case is False (a cased
    model: model_files.do_lower_case), and keeps its marks with keep_accents (model_files.keep_accents).
    is_training, seed, start: as text_dataset's.
    """
    if not examples:
        raise DataError("no examples")
    # TensorFlow is imported here, not with the module: the commands read and check files before it starts.
    from albert_tf.text import batches
    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    pair = examples[0].text_b is not None
    labels = None if examples[0].label is None else [example.label for example in examples]
    return batches.text_dataset(
        [e.text_a for e in examples], [e.text_b for e in examples] if pair else None, labels,
        InGraphTokenizer(spm_model_file, do_lower_case, keep_accents=keep_accents), seq_length, batch_size,
        is_training=is_training, seed=seed, pad_to_multiple=pad_to_multiple, start=start,
    )  # fmt: skip
