"""RACE reader and multiple-choice pipeline."""

import json

import numpy as np
import pytest

from albert_tf.finetuning import race
from albert_tf.text.tokenizer import AlbertTokenizer

SPM = "albert_tf/sample/spm_8k.model"
RECORD = {
    "id": "high1.txt",
    "article": "Tom went to the market. He bought apples.",
    "questions": ["What did Tom buy?", "Tom went to the _ ."],
    "options": [["pears", "apples", "bread", "milk"], ["school", "park", "market", "zoo"]],
    "answers": ["B", "C"],
}


def write(tmp_path, record, split="train", level="high", name="1.txt"):
    folder = tmp_path / split / level
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(record), encoding="utf-8")


def test_reads_questions_with_blanks_and_answers(tmp_path):
    write(tmp_path, RECORD)
    examples = race.read_race(str(tmp_path), "train", levels=("high",))
    assert [e.label for e in examples] == [1, 2]
    assert examples[0].choices[1] == "What did Tom buy? apples"
    assert examples[1].choices[2] == "Tom went to the market ."
    assert examples[1].example_id == "high1.txt-1"


def test_bad_answer_and_missing_folder_are_named(tmp_path):
    write(tmp_path, {**RECORD, "answers": ["B", "E"]})
    with pytest.raises(race.DataError, match=r"1\.txt: question 1: answer 'E' is not one of A, B, C, D"):
        race.read_race(str(tmp_path), "train", levels=("high",))
    with pytest.raises(race.DataError, match=r"dev/high: no RACE files"):
        race.read_race(str(tmp_path), "dev", levels=("high",))


def test_dataset_packs_each_choice_like_the_python_tokenizer(tmp_path):
    write(tmp_path, RECORD)
    examples = race.read_race(str(tmp_path), "train", levels=("high",))
    features, labels = next(iter(race.multiple_choice_dataset(examples, SPM, seq_length=24, batch_size=2)))
    assert features["input_word_ids"].shape == (2, 4, 24)
    python = AlbertTokenizer(SPM)
    for row, example in enumerate(examples):
        for choice, text in enumerate(example.choices):
            packed = python.pack(example.article, text, 24)
            assert features["input_word_ids"][row, choice].numpy().tolist() == packed.input_word_ids
    np.testing.assert_array_equal(labels, [1, 2])


def test_a_short_length_cuts_the_article_and_keeps_every_choice_whole(tmp_path):
    # At 16 tokens, trimming the longer segment first would cut "What did Tom buy? <option>" before its
    # option, leaving four identical choices; the original keeps the choice and cuts the article (a choice
    # longer than the room keeps its last tokens: its option).
    write(tmp_path, RECORD)
    (example, _) = race.read_race(str(tmp_path), "train", levels=("high",))
    features = next(iter(race.multiple_choice_dataset([example], SPM, seq_length=16, batch_size=1)))[0]
    python = AlbertTokenizer(SPM)
    article = python.encode(example.article)
    rows = features["input_word_ids"][0].numpy().tolist()
    for row, text in zip(rows, example.choices, strict=True):
        choice = python.encode(text)[-(16 - 3) :]
        ids = [2, *article[: 16 - 3 - len(choice)], 3, *choice, 3]
        assert len(article) + len(choice) > 13 and row == ids + [0] * (16 - len(ids)), text
    assert len({tuple(row) for row in rows}) == 4


def test_bytes_that_are_not_utf8_are_named_or_replaced(tmp_path):
    write(tmp_path, RECORD)
    path = tmp_path / "train" / "high" / "1.txt"
    path.write_bytes(path.read_bytes().replace(b"Tom", b"T\xffm", 1))
    with pytest.raises(race.DataError, match=r"1\.txt:1: byte 0xff at offset \d+ is not UTF-8"):
        race.read_race(str(tmp_path), "train", levels=("high",))
    examples = race.read_race(str(tmp_path), "train", levels=("high",), errors="replace")
    assert "T\ufffdm" in examples[0].article
