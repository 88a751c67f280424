"""`keep_accents` end to end, on Vietnamese and Japanese text: the commands that read a corpus stop before
writing anything when its marks carry meaning and neither flag is given; with --keep_accents the tokenizer
keeps them, the records' manifest and the model directory say so, and conversions carry it both ways."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from albert_tf import model_files
from albert_tf.checkpoints import convert
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertPretrainer, model_dir
from albert_tf.serving.servable import Servable
from albert_tf.text import spm_training
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenizer import AlbertTokenizer
from tests import commands
from tests.helpers import REPO, SAMPLE_CORPUS, SAMPLE_SPM, tiny_config
from tests.text.text_samples import MARKED_LINES, varied_lines

# Help text as a Vietnamese and a Japanese user guide write it (one sentence a line).
VIETNAMESE = [
    "Chọn tệp mà bạn muốn mở trong hộp thoại.",
    "Nhấn nút Lưu để ghi lại các thay đổi của bạn.",
    "Bảng tính hiện thời sẽ được in ra máy in mặc định.",
    "Văn bản trong danh sách được xếp theo thứ tự chữ cái.",
    "Hàm này trả về số ngày giữa hai ngày đã cho.",
    "Bạn có thể đổi tên trang tính bằng cách nhấp đúp vào thẻ của nó.",
    "Tiếng Việt là ngôn ngữ chính thức của Việt Nam.",
    "Mỗi ô có thể chứa văn bản, số hoặc công thức.",
]
JAPANESE = [
    "ファイルを開くには、メニューからコマンドを選びます。",
    "ドイツ語のガイドをダウンロードしてください。",
    "変更を保存するには、ボタンをクリックします。",
    "データベースのテーブルを選択して、データを表示します。",
]


def corpus(tmp_path, lines, copies=40):
    """A corpus file of the lines, `copies` documents of them (a blank line between)."""
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join("\n".join(lines) for _ in range(copies)) + "\n", encoding="utf-8")
    return path


def test_the_tokenizer_keeps_marks_as_transformers_does():
    # transformers' AlbertTokenizer.preprocess_text with keep_accents: whitespace collapsed, quotes replaced,
    # no NFKD, no mark removal, then lowercase.
    for line in [*VIETNAMESE, *JAPANESE, "हिन्दी  ``भाषा''", "Größe"]:
        expected = " ".join(line.split()).replace("``", '"').replace("''", '"').lower()
        assert preprocess_text(line, keep_accents=True) == expected
    assert preprocess_text("Tiếng Việt") == "tieng viet"  # the original's
    tokenizer = AlbertTokenizer(SAMPLE_SPM)
    kept = AlbertTokenizer(tokenizer.model_file, keep_accents=True)
    assert kept.normalize("Tiếng Việt") == "tiếng việt" and tokenizer.normalize("Tiếng Việt") == "tieng viet"
    assert kept.encode("Tiếng Việt") != tokenizer.encode("Tiếng Việt")
    assert kept.encode("plain English text") == tokenizer.encode("plain English text")


@pytest.mark.parametrize("lines, script", [(VIETNAMESE, "LATIN"), (JAPANESE, "KATAKANA")])
def test_a_corpus_whose_marks_carry_meaning_stops_the_tokenizer_and_the_builder_before_they_write(
    tmp_path, lines, script
):
    path = corpus(tmp_path, lines)
    trained = commands.run(
        "albert_tf.train_tokenizer", [f"--input={path}", f"--model_prefix={tmp_path / 'spm' / 'm'}",
                                      "--vocab_size=120", "--num_threads=1"],
    )  # fmt: skip
    assert trained.returncode == 1, trained.stderr[-2000:]
    refused = "train_tokenizer: error: the original's normalization (NFKD, then combining marks dropped) "
    assert refused in trained.stderr
    assert f"{script}: " in trained.stderr and "Pass --keep_accents to keep them" in trained.stderr
    assert "--nokeep_accents for the original's normalization" in trained.stderr
    assert not (tmp_path / "spm").exists()
    built = commands.run(
        "albert_tf.create_pretraining_data",
        [f"--input_file={path}", f"--output_file={tmp_path / 'records' / 'train@1'}", "--num_workers=1",
         f"--spm_model_file={SAMPLE_SPM}",
         "--max_seq_length=32", "--max_predictions_per_seq=4", "--dupe_factor=1"],
    )  # fmt: skip
    assert built.returncode == 1 and "create_pretraining_data: error: the original's normalization" in (
        built.stderr
    ), built.stderr[-2000:]
    assert not (tmp_path / "records").exists()


def record_ids(folder):
    """The input ids of the TFRecords in folder (the manifest and shards the builder wrote), but those at
    masked positions (a tenth of which are random ids)."""
    import tensorflow as tf

    shards = sorted(str(path) for path in folder.iterdir() if not path.name.endswith(".json"))
    ids = set()
    for record in tf.data.TFRecordDataset(shards):
        feature = tf.train.Example.FromString(record.numpy()).features.feature
        masked = set(feature["masked_lm_positions"].int64_list.value)
        ids.update(i for p, i in enumerate(feature["input_ids"].int64_list.value) if p not in masked)
    return ids


def build(tmp_path, path, spm, name, *flags):
    """create_pretraining_data on path into tmp_path/name: (the finished process, the manifest or None)."""
    built = commands.run(
        "albert_tf.create_pretraining_data",
        [f"--input_file={path}", f"--output_file={tmp_path / name / 'train@1'}", f"--spm_model_file={spm}",
         "--max_seq_length=32", "--max_predictions_per_seq=4", "--dupe_factor=1", "--num_workers=1", *flags],
    )  # fmt: skip
    manifest = tmp_path / name / "train.manifest.json"
    return built, json.loads(manifest.read_text()) if manifest.exists() else None


def test_with_keep_accents_the_tokenizer_records_and_manifest_keep_the_marks(tmp_path):
    path = corpus(tmp_path, VIETNAMESE)
    prefix = tmp_path / "spm" / "vi"
    trained = commands.run(
        "albert_tf.train_tokenizer",
        [f"--input={path}", f"--model_prefix={prefix}", "--vocab_size=100", "--num_threads=1",
         "--keep_accents"],
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-2000:]
    said = f"train_tokenizer: combining marks kept, in the 3,640 words of --input={path}: LATIN: 3,120 of "
    assert said + "3,640 words (85.7%), e.g. Chọn → Chon" in trained.stderr
    # The settings beside the model, which the builder follows when no flag is given.
    settings = json.loads((tmp_path / "spm" / "vi.tokenizer.json").read_text())
    assert settings == {"do_lower_case": True, "keep_accents": True}
    tokenizer = AlbertTokenizer(f"{prefix}.model", keep_accents=True)
    marked = {i for i in range(tokenizer.vocab_size) if tokenizer.normalize(tokenizer.id_to_piece(i)) != (
        preprocess_text(tokenizer.id_to_piece(i)))}  # fmt: skip
    assert len(marked) > 20  # the vocabulary holds marked letters and words: "ệ", "▁việt", ...
    built, manifest = build(tmp_path, path, f"{prefix}.model", "kept")
    assert built.returncode == 0 and manifest["settings"]["keep_accents"] is True, built.stderr[-2000:]
    assert record_ids(tmp_path / "kept") & marked  # the records' ids are those of the marked pieces too
    # A flag that contradicts the model's settings is refused before anything is written.
    built, manifest = build(tmp_path, path, f"{prefix}.model", "contradicted", "--nokeep_accents")
    assert built.returncode == 1 and manifest is None and not (tmp_path / "contradicted").exists()
    assert (
        f"create_pretraining_data: error: --nokeep_accents contradicts {prefix}.tokenizer.json: the "
        "SentencePiece model was trained with keep_accents=true (train_tokenizer)"
    ) in built.stderr
    # A model trained elsewhere (no settings beside it) takes the flags; the original's normalization never
    # gives a marked piece.
    (tmp_path / "spm" / "vi.tokenizer.json").unlink()
    built, manifest = build(tmp_path, path, f"{prefix}.model", "dropped", "--nokeep_accents")
    assert built.returncode == 0 and manifest["settings"]["keep_accents"] is False, built.stderr[-2000:]
    assert not record_ids(tmp_path / "dropped") & marked
    # English text has few marks: nothing to ask.
    built, manifest = build(tmp_path, SAMPLE_CORPUS, f"{prefix}.model", "english")
    assert built.returncode == 0 and manifest["settings"]["keep_accents"] is False, built.stderr[-2000:]


def test_a_model_directory_and_its_conversions_carry_keep_accents(tmp_path):
    spm = str(SAMPLE_SPM)
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000)))
    model_dir.save_model_dir(pretrainer, tmp_path / "vi", spm, keep_accents=True)
    assert json.loads((tmp_path / "vi" / "tokenizer.json").read_text()) == {
        "do_lower_case": True, "keep_accents": True
    }  # fmt: skip
    model_dir.save_model_dir(pretrainer, tmp_path / "en", spm)
    assert json.loads((tmp_path / "en" / "tokenizer.json").read_text()) == {"do_lower_case": True}
    assert model_files.keep_accents(str(tmp_path / "vi")) and not model_files.keep_accents(
        str(tmp_path / "en")
    )
    classifier = AlbertClassifier.from_model_dir(str(tmp_path / "vi"), num_classes=2, max_seq_length=16)
    assert classifier.preprocessing.keep_accents is True
    # Out to Hugging Face and back: transformers' names, and the same setting.
    convert.to_hf(str(tmp_path / "vi"), str(tmp_path / "hf"))
    settings = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert (settings["keep_accents"], settings["do_lower_case"], settings["remove_space"]) == (
        True,
        True,
        True,
    )
    back = convert.from_hf(str(tmp_path / "hf"))
    assert (back.keep_accents, back.do_lower_case, back.notes) == (True, True, [])
    settings["remove_space"] = False
    (tmp_path / "hf" / "tokenizer_config.json").write_text(json.dumps(settings))
    assert "remove_space is false" in convert.from_hf(str(tmp_path / "hf")).notes[-1]
    convert.write_model_dir(back, str(tmp_path / "back"))
    assert model_files.keep_accents(str(tmp_path / "back"))


@pytest.mark.slow
def test_an_export_of_a_keep_accents_model_tokenizes_through_the_cpp_loader_as_python_does(tmp_path):
    # A cased model trained with its marks kept, exported by the command from its model directory: the
    # SavedModel's preprocess signature, loaded by TensorFlow's C++ loader, gives the Python tokenizer's ids.
    lines = [*MARKED_LINES, *VIETNAMESE, *JAPANESE]
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join([*lines * 20, *varied_lines(200, seed=5)]) + "\n", encoding="utf-8")
    spm_training.train(
        [str(text)], str(tmp_path / "m"), vocab_size=500, do_lower_case=False, keep_accents=True,
        character_coverage=1.0,
    )  # fmt: skip
    spm = str(tmp_path / "m.model")
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=500, max_position_embeddings=48)))
    model_dir.save_model_dir(pretrainer, tmp_path / "model", spm, do_lower_case=False, keep_accents=True)
    exported = commands.run(
        "albert_tf.export_saved_model",
        [f"--model_dir={tmp_path / 'model'}", "--task=encoder", f"--export_dir={tmp_path / 'export' / '1'}",
         "--max_seq_length=48"],
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-2000:]
    python = AlbertTokenizer(spm, do_lower_case=False, keep_accents=True)
    texts = [*lines, *varied_lines(200, seed=9)]
    with Servable(str(tmp_path / "export" / "1")) as servable:
        served = servable.run("preprocess", {"text": texts})["input_word_ids"]
    for line, row in zip(texts, served, strict=True):
        expected = python.pack(line, None, 48).input_word_ids
        assert row.tolist() == expected[: len(row)] and not any(expected[len(row) :]), line
    # The marks reached the model as pieces of their own: the original's normalization gives other ids.
    stripped = AlbertTokenizer(spm, do_lower_case=False)
    assert stripped.encode(VIETNAMESE[0]) != python.encode(VIETNAMESE[0])
    assert np.all(served[:, 0] == 2)


@pytest.mark.slow
def test_the_language_walk_runs_small_on_japanese_with_its_marks_kept(tmp_path):
    # bench/language_walk.py, the README's walk with --keep_accents (and --noadd_dummy_prefix, for text
    # without spaces), four steps on a small Japanese corpus.
    documents = ["\n".join(JAPANESE[k:] + JAPANESE[:k]) for k in range(len(JAPANESE))] * 15
    corpus = tmp_path / "ja.txt"
    corpus.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    walked = subprocess.run(
        [sys.executable, str(REPO / "bench" / "language_walk.py"), f"--corpus={corpus}", "--language=ja",
         "--steps=4", "--vocab_size=70", "--noadd_dummy_prefix", f"--work_dir={tmp_path / 'walk'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert walked.returncode == 0, walked.stderr[-3000:] + walked.stdout[-3000:]
    assert "marks: combining marks kept, in the " in walked.stdout
    assert "model directory's tokenizer.json: {'do_lower_case': True, 'keep_accents': True}" in walked.stdout
    kept = re.search(r"held-out marked letters kept as pieces: ([\d,]+) of ([\d,]+)", walked.stdout)
    assert kept and kept.group(1) == kept.group(2) != "0", walked.stdout
    result = r"ja: step 4, masked_lm_accuracy 0\.\d{4}, most frequent token 0\.\d{4}: "
    assert re.search(result, walked.stdout), walked.stdout


def test_without_the_dummy_prefix_no_line_starts_with_a_lone_mark_and_both_tokenizers_agree(tmp_path):
    # train_tokenizer --noadd_dummy_prefix, for text written without spaces: SentencePiece's "▁" before each
    # line has no word to join in Japanese and stands alone, the most frequent piece. The model file carries
    # the setting to both tokenizers, which keep giving the same ids (digit-comma rule included).
    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    lines = [*JAPANESE, "Basicダイアログで1,000行を選びます。", "価格は2,500円です。", "ALBERTのモデル"]
    path = corpus(tmp_path, lines)
    pieces = {}
    for prefix in (True, False):
        model = str(tmp_path / f"m{prefix}")
        spm_training.train(
            [str(path)], model, vocab_size=86, keep_accents=True, character_coverage=1.0,
            add_dummy_prefix=prefix,
        )  # fmt: skip
        python = AlbertTokenizer(model + ".model", keep_accents=True)
        pieces[prefix] = [python.tokenize(line) for line in lines]
        in_graph = InGraphTokenizer(model + ".model", keep_accents=True).tokenize(lines).to_list()
        assert in_graph == [python.encode(line) for line in lines]
    assert all(line[0] == "▁" for line in pieces[True])
    assert not any("▁" in piece for line in pieces[False] for piece in line)


def test_the_tokenizer_command_suggests_no_dummy_prefix_for_text_without_spaces_only(tmp_path):
    suggestion = "of the lines begin with a piece '▁' of its own"
    said = {}
    for name, lines, flags in [
        ("ja", JAPANESE, ["--vocab_size=70"]),
        ("ja_kept", JAPANESE, ["--vocab_size=70", "--add_dummy_prefix"]),
        ("ja_without", JAPANESE, ["--vocab_size=70", "--noadd_dummy_prefix"]),
        ("vi", VIETNAMESE, ["--vocab_size=100"]),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        trained = commands.run(
            "albert_tf.train_tokenizer",
            [f"--input={corpus(folder, lines)}", f"--model_prefix={folder / 'm'}", "--num_threads=1",
             "--keep_accents", *flags],
        )  # fmt: skip
        assert trained.returncode == 0, trained.stderr[-2000:]
        said[name] = suggestion in trained.stderr
    assert said == {"ja": True, "ja_kept": False, "ja_without": False, "vi": False}
