"""GLUE TSV and generic CSV/JSONL readers, and the classification tf.data pipeline."""

import logging

import numpy as np
import pytest

from albert_tf.finetuning import glue, task_data
from albert_tf.finetuning.settings import ClassifierSettings
from albert_tf.text.tokenizer import AlbertTokenizer

SPM = "albert_tf/sample/spm_8k.model"

# Rows in the official layouts (GLUE 1.0 files; texts shortened).
FILES = {
    (
        "cola",
        "train.tsv",
    ): "gj04\t1\t\tOur friends won't buy this analysis.\ngj04\t0\t*\tOne more pseudo generalization.\n",
    ("sst-2", "dev.tsv"): "sentence\tlabel\nit 's a charming journey .\t1\nunflinchingly bleak\t0\n",
    (
        "mrpc",
        "train.tsv",
    ): "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t702876\t702977\tAmrozi accused.\tHe called.\n",
    (
        "sts-b",
        "dev.tsv",
    ): "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man plays.\tA man sings.\t2.500\n",
    ("qqp", "test.tsv"): "id\tquestion1\tquestion2\n0\tWhy?\tHow?\n",
    (
        "mnli",
        "dev_mismatched.tsv",
    ): "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2\tlabel1\t"
    "gold_label\n0\t63735\t63735n\tletters\tx\tx\tx\tx\tYour gift matters.\tIt helps.\tneutral\tneutral\n",
    (
        "rte",
        "train.tsv",
    ): "index\tsentence1\tsentence2\tlabel\n0\tNo weapons.\tWeapons found.\tnot_entailment\n",
}


def write(tmp_path, task, name, text):
    folder = tmp_path / task
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder)


def test_official_layouts_are_read(tmp_path):
    read = {}
    for (task, name), text in FILES.items():
        split = {"train.tsv": "train", "dev.tsv": "dev", "test.tsv": "test"}.get(name, "dev_mismatched")
        read[task] = glue.read_glue(write(tmp_path, task, name, text), task, split)
    assert read["cola"] == [glue.Example("Our friends won't buy this analysis.", None, 1),
                            glue.Example("One more pseudo generalization.", None, 0)]  # fmt: skip
    assert read["sst-2"][0] == glue.Example("it 's a charming journey .", None, 1)
    assert read["mrpc"] == [glue.Example("Amrozi accused.", "He called.", 1)]
    assert read["sts-b"] == [glue.Example("A man plays.", "A man sings.", 2.5)]
    assert read["qqp"] == [glue.Example("Why?", "How?", None)]
    assert read["mnli"] == [glue.Example("Your gift matters.", "It helps.", 2)]
    assert read["rte"] == [glue.Example("No weapons.", "Weapons found.", 1)]


def test_wrong_column_count_and_unknown_label_name_file_and_line(tmp_path):
    folder = write(
        tmp_path, "rte", "dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\n"
    )
    with pytest.raises(glue.DataError, match=r"rte/dev\.tsv:3: expected 4 tab-separated columns, found 3"):
        glue.read_glue(folder, "rte", "dev")
    folder = write(tmp_path, "sst", "train.tsv", "sentence\tlabel\nfine\t1\nodd\t2\n")
    with pytest.raises(glue.DataError, match=r"train\.tsv:3: label '2' is not one of 0, 1"):
        glue.read_glue(folder, "sst-2", "train")
    with pytest.raises(glue.DataError, match="unknown GLUE task 'nope'"):
        glue.read_glue(folder, "nope", "train")
    # SST-2's file read as STS-B's: its header is too short for the columns STS-B reads.
    with pytest.raises(
        glue.DataError,
        match=r"train\.tsv:1: the header has 2 tab-separated columns; "
        r"sts-b's labelled files have at least 10",
    ):
        glue.read_glue(folder, "sts-b", "train")


def test_qqp_rows_with_missing_fields_are_skipped_and_counted(tmp_path, caplog):
    # QQP's train.tsv has rows that lack a question; the original (and Model Garden) skip them.
    header = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
    rows = "0\t1\t2\tHow?\tWhy?\t0\n1\t3\t4\tWhat?\n2\t5\t6\tWho?\tWhom?\t1\n"
    folder = write(tmp_path, "qqp", "train.tsv", header + rows)
    with caplog.at_level(logging.WARNING):
        examples = glue.read_glue(folder, "qqp", "train")
    assert examples == [glue.Example("How?", "Why?", 0), glue.Example("Who?", "Whom?", 1)]
    assert "1 row(s) with missing fields skipped" in caplog.text and "(lines 3)" in caplog.text


def test_csv_and_jsonl_text_classification(tmp_path):
    (tmp_path / "a.csv").write_text('text,label\n"Good, really",pos\nBad,neg\n', encoding="utf-8")
    examples, labels = glue.read_text_classification(str(tmp_path / "a.csv"))
    assert labels == ("neg", "pos") and examples[0] == glue.Example("Good, really", None, 1)
    (tmp_path / "b.jsonl").write_text('{"text": "x", "label": "pos"}\n{"text": "y"}\n', encoding="utf-8")
    with pytest.raises(glue.DataError, match=r"b\.jsonl:2: missing label"):
        glue.read_text_classification(str(tmp_path / "b.jsonl"))
    unlabelled, _ = glue.read_text_classification(str(tmp_path / "b.jsonl"), label=None)
    assert unlabelled == [glue.Example("x", None, None), glue.Example("y", None, None)]
    with pytest.raises(glue.DataError, match=r"a\.csv:3: label 'neg' is not one of pos"):
        glue.read_text_classification(str(tmp_path / "a.csv"), labels=("pos",))


def test_a_header_without_the_columns_read_names_the_header_and_the_columns_read(tmp_path):
    """A header naming its label `category` is refused once, at the header, with what it has and what is
    read; a short row and a JSONL object without the label say what they hold."""
    expected = "text, label and, for sentence pairs, text_b"
    (tmp_path / "nolabel.csv").write_text("text,category\nGood,pos\nBad,neg\n", encoding="utf-8")
    with pytest.raises(glue.DataError) as refused:
        glue.read_text_classification(str(tmp_path / "nolabel.csv"))
    assert str(refused.value) == (
        f"{tmp_path / 'nolabel.csv'}:1: the header (text, category) has no label column; text "
        f"classification reads the columns {expected}: rename the file's columns to these"
    )
    # A test file is read without labels: its header needs the text column only.
    examples, _ = glue.read_text_classification(str(tmp_path / "nolabel.csv"), label=None)
    assert [example.text_a for example in examples] == ["Good", "Bad"]
    (tmp_path / "short.csv").write_text("text,label\nGood,pos\nBad\n", encoding="utf-8")
    with pytest.raises(glue.DataError, match=r"short\.csv:3: 1 field, the header has 2 \(text, label\)$"):
        glue.read_text_classification(str(tmp_path / "short.csv"))
    (tmp_path / "c.jsonl").write_text('{"text": "x", "category": "pos"}\n', encoding="utf-8")
    with pytest.raises(glue.DataError) as refused:
        glue.read_text_classification(str(tmp_path / "c.jsonl"))
    assert str(refused.value).endswith(
        ":1: missing label (keys found: text, category); text classification reads the keys " + expected
    )


def test_text_classification_reads_pairs_when_every_row_has_text_b(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,text_b,label\nA cat.,A dog.,same\nRain.,Sun.,other\n")
    examples, labels = glue.read_text_classification(str(pairs))
    assert [(e.text_a, e.text_b, e.label) for e in examples] == [
        ("A cat.", "A dog.", 1),
        ("Rain.", "Sun.", 0),
    ]
    assert labels == ("other", "same")
    some = tmp_path / "some.jsonl"
    some.write_text('{"text": "a", "text_b": "b", "label": "x"}\n{"text": "c", "label": "y"}\n')
    with pytest.raises(glue.DataError, match=r"some\.jsonl:2: missing text_b, which other rows have"):
        glue.read_text_classification(str(some))
    # run_classifier --task_name=text: every split pairs, or none.
    single = tmp_path / "single.csv"
    single.write_text("text,label\nA cat.,same\n")
    settings = ClassifierSettings(
        model_dir="m", output_dir="o", task_name="text", train_file=str(pairs), dev_file=str(single)
    )
    with pytest.raises(
        glue.DataError, match=r"pairs\.csv holds sentence pairs \(text_b\) and .*single\.csv single"
    ):
        task_data.classifier_splits(settings)


@pytest.mark.parametrize("name", ["train_file", "labels"])
def test_text_task_flags_given_to_a_glue_task_are_refused(tmp_path, name):
    settings = ClassifierSettings(
        model_dir="m", output_dir="o", task_name="sst-2", data_dir=str(tmp_path), **{name: ("x.csv",)}
    )
    with pytest.raises(ValueError, match=f"--{name} is for --task_name=text; the GLUE task sst-2 reads"):
        task_data.classifier_splits(settings)


def test_dataset_packs_like_the_python_tokenizer():
    examples = [glue.Example("A fine film, 1,000 times.", "I liked it.", 1), glue.Example("Dull.", "Meh", 0)]
    features, labels = next(iter(glue.classification_dataset(examples, SPM, seq_length=16, batch_size=2)))
    python = AlbertTokenizer(SPM)
    for row, example in enumerate(examples):
        packed = python.pack(example.text_a, example.text_b, 16)
        assert features["input_word_ids"][row].numpy().tolist() == packed.input_word_ids
        assert features["input_type_ids"][row].numpy().tolist() == packed.input_type_ids
    np.testing.assert_array_equal(labels, [1, 0])
    training = glue.classification_dataset(examples * 3, SPM, seq_length=16, batch_size=4, is_training=True)
    assert [int(f["input_word_ids"].shape[0]) for f, _ in training] == [4]  # full batches only


def test_batches_are_padded_to_their_longest_example_in_steps():
    short = [glue.Example("Dull.", "Meh", 0)] * 2
    features, _ = next(
        iter(glue.classification_dataset(short, SPM, seq_length=128, batch_size=2, pad_to_multiple=8))
    )
    longest = len(AlbertTokenizer(SPM).encode("Dull.")) + len(AlbertTokenizer(SPM).encode("Meh")) + 3
    assert features["input_word_ids"].shape == (2, 8) and longest <= 8
    fixed, _ = next(
        iter(glue.classification_dataset(short, SPM, seq_length=128, batch_size=2, pad_to_multiple=None))
    )
    assert fixed["input_word_ids"].shape == (2, 128)


def test_bytes_that_are_not_utf8_are_named_or_replaced(tmp_path):
    """TSV, CSV and JSONL task data with a byte that is not UTF-8 (0xff, on line 3): refused naming the file,
    the line and the byte's offset; with errors="replace" read as U+FFFD, as the served model reads it."""
    tsv = tmp_path / "SST-2"
    tsv.mkdir()
    (tsv / "train.tsv").write_bytes(b"sentence\tlabel\na fine film\t1\nbad \xff byte\t0\n")
    csv_file, jsonl = tmp_path / "train.csv", tmp_path / "train.jsonl"
    csv_file.write_bytes(b"text,label\nfine,a\nbad \xff,b\n")
    jsonl.write_bytes(b'{"text": "fine", "label": "a"}\n\n{"text": "bad \xff", "label": "b"}\n')
    paths = {"train.tsv": tsv / "train.tsv", "train.csv": csv_file, "train.jsonl": jsonl}
    for name, read in (
        ("train.tsv", lambda errors: glue.read_glue(str(tsv), "sst-2", "train", errors)),
        ("train.csv", lambda errors: glue.read_text_classification(str(csv_file), errors=errors)[0]),
        ("train.jsonl", lambda errors: glue.read_text_classification(str(jsonl), errors=errors)[0]),
    ):
        offset = paths[name].read_bytes().index(b"\xff")
        refused = rf"{name}:3: byte 0xff at offset {offset} is not UTF-8; .* --errors=replace"
        with pytest.raises(glue.DataError, match=refused):
            read("strict")
        replaced = read("replace")[-1].text_a
        assert replaced == ("bad \ufffd byte" if name == "train.tsv" else "bad \ufffd"), replaced
