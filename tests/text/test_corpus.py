import gzip

import pytest

from albert_tf.text import corpus
from tests.helpers import SAMPLE_CORPUS


def test_patterns_expand_sorted_and_missing_pattern_is_named(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    paths = corpus.expand_patterns(f"{tmp_path}/*.txt,{tmp_path}/c.md")
    assert [p.rsplit("/", 1)[1] for p in paths] == ["a.txt", "b.txt", "c.md"]
    with pytest.raises(corpus.CorpusError, match=r"--input_file: '.*nothing\*\.txt' matches no file"):
        corpus.expand_patterns(f"{tmp_path}/a.txt,{tmp_path}/nothing*.txt")
    with pytest.raises(corpus.CorpusError, match="--input_file is empty"):
        corpus.expand_patterns(" , ")
    with pytest.raises(
        corpus.CorpusError, match=r"--input_file: '.*' is a folder; give its files \(.*/\*\.txt\)"
    ):
        corpus.expand_patterns(str(tmp_path))


def _reference_blocks(data, block_bytes):
    """Blocks of a file's bytes by the corpus format, written independently: (block of the byte where a run
    of non-blank lines starts, its lines), grouped by block."""
    blocks, document, offset = {}, None, 0
    for raw in data.split(b"\n"):
        line = raw.decode("utf-8").rstrip("\r")
        if not line.strip():
            document = None
        elif document is None:
            document = [line]
            blocks.setdefault(offset // block_bytes, []).append(document)
        else:
            document.append(line)
        offset += len(raw) + 1
    return [(block, documents, 0) for block, documents in blocks.items()]


def _all_blocks(path, block_bytes, **kwargs):
    return list(corpus.read_blocks(str(path), block_bytes, **kwargs))


TEXT = (
    "one.\ntwo, a longer line than a block.\n\n  \t\nthree.\r\nfour.\n\n\n\nfive.\n"
    "a document of many lines\nthat runs\nacross\nseveral\nblocks\nof bytes.\n \nsix.\nseven."
)


@pytest.mark.parametrize("block_bytes", [1, 5, 7, 16, 64, 1 << 20])
def test_blocks_read_one_at_a_time_are_the_documents_read_in_one_pass(tmp_path, block_bytes):
    path = tmp_path / "a.txt"
    path.write_bytes(TEXT.encode())
    whole = _all_blocks(path, block_bytes)
    assert whole == _reference_blocks(TEXT.encode(), block_bytes)
    one_by_one = [
        found
        for block in range(-(-len(TEXT.encode()) // block_bytes))
        for found in _all_blocks(path, block_bytes, first_block=block, end_block=block + 1)
    ]
    assert one_by_one == whole
    gz = tmp_path / "a.txt.gz"
    with gzip.open(gz, "wb") as handle:
        handle.write(TEXT.encode())
    assert _all_blocks(gz, block_bytes) == whole


def test_the_sample_corpus_in_blocks_is_its_documents(tmp_path):
    data = SAMPLE_CORPUS.read_bytes()
    blocks = [
        found
        for block in range(-(-len(data) // 100_000))
        for found in _all_blocks(SAMPLE_CORPUS, 100_000, first_block=block, end_block=block + 1)
    ]
    assert len(blocks) > 10 and blocks == _reference_blocks(data, 100_000)


def test_invalid_utf8_names_file_and_line_or_is_replaced_and_counted(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\n\nmore\nbro\xffken\n")
    with pytest.raises(corpus.CorpusError, match=r"bad\.txt:5: invalid UTF-8 \(byte 3 of the line\)"):
        _all_blocks(path, 1 << 20)
    # Found by the block that holds the document, which counts lines from the start of the file.
    with pytest.raises(corpus.CorpusError, match=r"bad\.txt:5: invalid UTF-8"):
        _all_blocks(path, 8, first_block=2, end_block=3)
    assert _all_blocks(path, 1 << 20, errors="replace") == [
        (0, [["fine", "also fine"], ["more", "bro\ufffdken"]], 1)
    ]
    reader = corpus.LineReader([str(path)], errors="replace")
    assert [line for lines in reader.files() for line in lines][-1] == "bro\ufffdken"
    assert reader.replaced_lines == 1
