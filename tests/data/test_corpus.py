import gzip

import pytest

from albert_tf.data import corpus


def test_patterns_expand_sorted_and_missing_pattern_is_named(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    paths = corpus.expand_patterns(f"{tmp_path}/*.txt,{tmp_path}/c.md")
    assert [p.rsplit("/", 1)[1] for p in paths] == ["a.txt", "b.txt", "c.md"]
    with pytest.raises(corpus.CorpusError, match=r"--input_file: '.*nothing\*\.txt' matches no file"):
        corpus.expand_patterns(f"{tmp_path}/a.txt,{tmp_path}/nothing*.txt")
    with pytest.raises(corpus.CorpusError, match="--input_file is empty"):
        corpus.expand_patterns(" , ")


def test_documents_split_on_blank_lines_and_file_ends(tmp_path):
    (tmp_path / "a.txt").write_text("one.\ntwo.\n\n  \nthree.\n")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as handle:
        handle.write("four.\r\n\nfive.\nsix.")
    reader = corpus.LineReader([str(tmp_path / "a.txt"), str(tmp_path / "b.txt.gz")])
    assert list(corpus.documents(reader)) == [["one.", "two."], ["three."], ["four."], ["five.", "six."]]


def test_invalid_utf8_names_file_and_line_or_is_replaced_and_counted(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbro\xffken\n")
    with pytest.raises(corpus.CorpusError, match=r"bad\.txt:3: invalid UTF-8 \(byte 3 of the line\)"):
        list(corpus.documents(corpus.LineReader([str(path)])))
    reader = corpus.LineReader([str(path)], errors="replace")
    assert list(corpus.documents(reader)) == [["fine", "also fine", "bro\ufffdken"]]
    assert reader.replaced_lines == 1
