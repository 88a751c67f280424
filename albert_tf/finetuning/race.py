"""RACE (multiple-choice reading comprehension) → examples → tf.data batches for `AlbertMultipleChoice`.

    examples = read_race("RACE", "train")            # RACE/train/{high,middle}/*.txt, one JSON object each
    dataset = multiple_choice_dataset(examples, "spm.model", seq_length=512, batch_size=32, is_training=True)

As the original ALBERT RACE code: each choice is packed as `[CLS] article [SEP] question+option [SEP]`, where
a question with blanks ("_") gets the option in them, and any other question is followed by the option.
"""

import dataclasses
import json
import os

from albert_tf import file_io
from albert_tf.finetuning.glue import DataError, read_task_text

LETTERS = "ABCD"


@dataclasses.dataclass(frozen=True)
class ChoiceExample:
    """One question: the article, one text per choice (question and option combined), the answer index."""

    example_id: str
    article: str
    choices: tuple
    label: int | None


def combine(question, option):
    """The second segment for one option: the option in the question's blank, or after the question."""
    if "_" in question:
        return question.replace("_", option)
    return f"{question} {option}"


def read_race(data_dir, split, levels=("high", "middle"), errors="strict"):
    """Examples of RACE's split ("train", "dev", "test") for the given levels, in file-name order;
    `errors`: as glue.read_task_text."""
    examples = []
    for level in levels:
        folder = file_io.join(data_dir, split, level)
        paths = file_io.glob(file_io.join(folder, "*.txt"))
        if not paths:
            raise DataError(f"{folder}: no RACE files (*.txt)")
        for path in paths:
            examples.extend(_read_file(path, errors))
    return examples


def _read_file(path, errors):
    try:
        record = json.loads(read_task_text(path, errors))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}:{error.lineno}: not a RACE JSON object ({error.msg})") from None
    for key in ("article", "questions", "options"):
        if key not in record:
            raise DataError(f"{path}: missing {key!r}")
    answers = record.get("answers")
    examples = []
    for index, (question, options) in enumerate(zip(record["questions"], record["options"], strict=True)):
        if len(options) != len(LETTERS):
            raise DataError(f"{path}: question {index} has {len(options)} options, expected {len(LETTERS)}")
        label = None
        if answers is not None:
            if answers[index] not in LETTERS:
                raise DataError(
                    f"{path}: question {index}: answer {answers[index]!r} is not one of A, B, C, D"
                )
            label = LETTERS.index(answers[index])
        choices = tuple(combine(question, option) for option in options)
        example_id = f"{record.get('id', os.path.basename(path))}-{index}"
        examples.append(ChoiceExample(example_id, record["article"], choices, label))
    return examples


def multiple_choice_dataset(
    examples, spm_model_file, seq_length, batch_size, is_training=False, seed=12345, do_lower_case=True,
    keep_accents=False, start=None,
):  # fmt: skip
    """(features, label) batches: features int32 [batch, choices, seq_length], label int32 [batch], as
    `text.batches.choice_dataset` makes them (each choice kept whole, the article cut to the room left).

    Training data is shuffled each epoch and batches are full; evaluation keeps order and the last batch.
    Text is lowercased before SentencePiece unless do_lower_case is False (a cased model) and keeps its
    marks with keep_accents. `start`: as glue.classification_dataset's.
    """
    if not examples:
        raise DataError("no examples")
    # TensorFlow is imported here, not with the module: the commands read and check files before it starts.
    from albert_tf.text import batches
    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    labels = None if examples[0].label is None else [e.label for e in examples]
    return batches.choice_dataset(
        [e.article for e in examples], [e.choices for e in examples], labels,
        InGraphTokenizer(spm_model_file, do_lower_case, keep_accents=keep_accents), seq_length, batch_size,
        is_training=is_training, seed=seed, start=start,
    )  # fmt: skip
