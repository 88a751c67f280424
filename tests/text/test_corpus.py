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


def test_patterns_as_a_list_and_a_folder_named_with_its_slash(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    paths = corpus.expand_patterns([f"{tmp_path}/b.txt,{tmp_path}/a.txt", f" {tmp_path}/c.md "], flag="input")
    assert paths == [f"{tmp_path}/b.txt", f"{tmp_path}/a.txt", f"{tmp_path}/c.md"]  # each pattern in turn
    folder = tmp_path / "TEXT"
    folder.mkdir()
    with pytest.raises(corpus.CorpusError) as error:
        corpus.expand_patterns(f"{folder}/", flag="input")
    assert str(error.value) == f"--input: '{folder}/' is a folder; give its files ({folder}/*.txt)"


# A blank first line, one-letter lines, a line ending in spaces and one ending in "X": blocks of 1 and 2 bytes
# begin on and right after the first newline.
EDGES = "\na\nb\n\nMalcolm X\nkept  \t\n\nc\n"


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 4])
def test_blocks_that_begin_at_the_first_lines_and_lines_that_keep_their_ends(tmp_path, block_bytes):
    path = tmp_path / "edges.txt"
    path.write_bytes(EDGES.encode())
    whole = _all_blocks(path, block_bytes)
    assert [document for _, documents, _ in whole for document in documents] == [
        ["a", "b"],
        ["Malcolm X", "kept  \t"],
        ["c"],
    ]
    assert whole == _reference_blocks(EDGES.encode(), block_bytes)
    one_by_one = [
        found
        for block in range(-(-len(EDGES.encode()) // block_bytes))
        for found in _all_blocks(path, block_bytes, first_block=block, end_block=block + 1)
    ]
    assert one_by_one == whole


def test_blocks_after_a_line_of_invalid_utf8_are_read_with_replace(tmp_path):
    """The line before a block, read to know whether a document starts there, may hold invalid UTF-8 too; each
    invalid line is counted once, in the block that holds its document."""
    data = b"fine\nbro\xffken X\nand bad \xfe again  \n\nnext\n"
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    whole = _all_blocks(path, 1 << 20, errors="replace")
    assert whole == [(0, [["fine", "bro\ufffdken X", "and bad \ufffd again  "], ["next"]], 2)]
    one_by_one = [
        found
        for block in range(len(data) // 8 + 1)
        for found in _all_blocks(path, 8, first_block=block, end_block=block + 1, errors="replace")
    ]
    assert [document for _, documents, _ in one_by_one for document in documents] == whole[0][1]
    assert sum(replaced for _, _, replaced in one_by_one) == 2


def test_bad_arguments_are_named(tmp_path):
    path = tmp_path / "a.txt.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(b"one\n\ntwo\n")
    with pytest.raises(ValueError) as error:
        _all_blocks(path, 4, first_block=1)
    assert str(error.value) == f"{path}: a .gz file is read from its first block, not from block 1"
    with pytest.raises(corpus.CorpusError) as error:
        _all_blocks(path, 4, errors="ignore")
    assert str(error.value) == "--errors must be 'strict' or 'replace', got 'ignore'"
    with pytest.raises(corpus.CorpusError) as error:
        corpus.LineReader([str(path)], errors="ignore")
    assert str(error.value) == "--errors must be 'strict' or 'replace', got 'ignore'"


def test_lines_of_several_files_in_order_strict_or_replaced_and_counted(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"first  \r\nMalcolm X\n")
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(b"bro\xffken\n\nbad \xfe too\n"))
    paths = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt.gz")]
    reader = corpus.LineReader(paths, errors="replace")
    assert [list(lines) for lines in reader.files()] == [
        ["first  ", "Malcolm X"],
        ["bro\ufffdken", "", "bad \ufffd too"],
    ]
    assert reader.replaced_lines == 2
    strict = corpus.LineReader(paths)
    files = strict.files()
    assert list(next(files)) == ["first  ", "Malcolm X"]
    with pytest.raises(corpus.CorpusError) as error:
        list(next(files))
    assert str(error.value) == (
        f"{paths[1]}:1: invalid UTF-8 (byte 3 of the line); fix the file or pass --errors=replace"
    )
    late = tmp_path / "late.txt"
    late.write_bytes(b"one\ntwo\nthree \xff\n")
    with pytest.raises(corpus.CorpusError, match=r"late\.txt:3: invalid UTF-8 \(byte 6 of the line\)"):
        [line for lines in corpus.LineReader([str(late)]).files() for line in lines]
