import os
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf.data import corpus
from albert_tf.data.pretraining_builder import BuildError, BuildSettings, build
from albert_tf.data.pretraining_dataset import parse_spec
from albert_tf.data.pretraining_instances import InstanceOptions
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM

SETTINGS = BuildSettings(
    spm_model_file=str(SAMPLE_SPM),
    options=InstanceOptions(max_seq_length=128, max_predictions_per_seq=20),
    dupe_factor=1,
)


def _build(tmp_path, name, workers, inputs=(str(SAMPLE_CORPUS),), **kwargs):
    outputs = [str(tmp_path / f"{name}-{i}.tfrecord") for i in range(2)]
    summary = build(list(inputs), outputs, kwargs.pop("settings", SETTINGS), num_workers=workers, **kwargs)
    return outputs, summary


@pytest.mark.slow
def test_same_bytes_for_one_and_two_workers_and_paper_statistics(tmp_path):
    one, summary = _build(tmp_path, "one", 1)
    two, _ = _build(tmp_path, "two", 2)
    for a, b in zip(one, two, strict=True):
        with open(a, "rb") as first, open(b, "rb") as second:
            assert first.read() == second.read()
    stats = summary.stats
    assert stats["documents"] == 1283 and stats["instances"] > 3000
    assert stats["instances"] == sum(1 for path in one for _ in tf.data.TFRecordDataset(path))
    assert abs(stats["masked"] / stats["tokens"] - 0.15) < 0.01  # max_predictions 20 ≥ 0.15 · 128: no cap
    masked = stats["masked"]
    assert abs(stats["masked_as_mask"] / masked - 0.8) < 0.02
    assert abs(stats["masked_kept"] / masked - 0.1) < 0.02
    assert abs(stats["label_1"] / stats["instances"] - 0.5) < 0.03
    assert "masked: 15.0% of tokens" in str(summary) or "masked: 14.9% of tokens" in str(summary)
    assert not [name for name in os.listdir(tmp_path) if ".tmp-" in name]


def test_records_parse_with_the_original_feature_spec(tmp_path):
    text = tmp_path / "small.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:400]) + "\n")
    outputs, _ = _build(tmp_path, "gz", 1, inputs=[str(text)], gzip=True)
    spec = parse_spec(128, 20)
    dataset = tf.data.TFRecordDataset(outputs, compression_type="GZIP").map(
        lambda r: tf.io.parse_single_example(r, spec)
    )
    for example in dataset.take(50):
        length = int(tf.reduce_sum(example["input_mask"]))
        ids = example["input_ids"].numpy()
        assert ids[0] == 2 and ids[length - 1] == 3 and not ids[length:].any()
        assert int(example["next_sentence_labels"][0]) in (0, 1)


def test_empty_corpus_and_short_documents_are_clear_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(BuildError, match=r"empty corpus: .*empty\.txt hold no text"):
        _build(tmp_path, "e", 1, inputs=[str(empty)])
    short = tmp_path / "short.txt"
    short.write_text("a\n\nb\n")
    with pytest.raises(BuildError, match=r"no instances: all 2 documents .* too short"):
        _build(tmp_path, "s", 1, inputs=[str(short)])
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "short.txt"]


def test_failure_midway_leaves_no_output_and_keeps_old_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A fine sentence here.\nAnother one.\n\nbroken \xff line\n")
    old = tmp_path / "out-0.tfrecord"
    old.write_bytes(b"previous run")
    with pytest.raises(corpus.CorpusError, match=r"bad\.txt:4: invalid UTF-8"):
        _build(tmp_path, "out", 1, inputs=[str(bad)])
    assert old.read_bytes() == b"previous run"
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "out-0.tfrecord"]
    _, summary = _build(tmp_path, "out", 1, inputs=[str(bad)], errors="replace")
    assert summary.replaced_lines == 1 and summary.stats["documents"] == 2


def _peak_rss_mb(corpus_path, tmp_path):
    """(main process, largest worker) peak RSS in MB of a 2-worker build in a fresh process.

    The shuffle buffer (1,000 instances) fills up on either corpus: what is left to grow is what would
    grow with the corpus.

    The main's peak is VmHWM: ru_maxrss would carry this pytest process's peak over fork and exec.
    """
    script = (
        "import resource, sys\n"
        "from albert_tf.data.pretraining_builder import BuildSettings, build\n"
        "from albert_tf.data.pretraining_instances import InstanceOptions\n"
        f"build([{str(corpus_path)!r}], [{str(tmp_path / 'mem.tfrecord')!r}], BuildSettings("
        f"spm_model_file={str(SAMPLE_SPM)!r}, options=InstanceOptions(max_seq_length=128), dupe_factor=1, "
        "shuffle_buffer_size=1000), num_workers=2)\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
        "print(int(status) / 1024, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return tuple(float(x) for x in out.split())


@pytest.mark.slow
def test_peak_memory_barely_grows_with_a_ten_times_larger_corpus(tmp_path):
    big = tmp_path / "big.txt"
    text = SAMPLE_CORPUS.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    with big.open("w", encoding="utf-8") as file:
        for _ in range(10):
            file.write(text)
    small_main, small_worker = _peak_rss_mb(SAMPLE_CORPUS, tmp_path)
    big_main, big_worker = _peak_rss_mb(big, tmp_path)
    assert big_main < small_main * 1.25, (small_main, big_main)
    assert big_worker < small_worker * 1.25, (small_worker, big_worker)
    assert max(big_main, big_worker) < 200  # The target is 1 GB; it takes well under 100 MB.


@pytest.mark.slow
def test_command_line_train_tokenizer_then_create_pretraining_data(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True)

    tokenizer = run(
        "albert_tf.train_tokenizer",
        f"--input={SAMPLE_CORPUS}",
        f"--model_prefix={tmp_path}/spm",
        "--vocab_size=2000",
        "--num_threads=2",
    )
    assert tokenizer.returncode == 0, tokenizer.stderr
    assert (tmp_path / "spm.model").exists() and (tmp_path / "spm.vocab").read_text().startswith("<pad>\t")
    created = run(
        "albert_tf.create_pretraining_data",
        f"--input_file={SAMPLE_CORPUS}",
        f"--output_file={tmp_path}/a.tfrecord,{tmp_path}/b.tfrecord",
        f"--spm_model_file={tmp_path}/spm.model",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=1",
        "--num_workers=2",
    )
    assert created.returncode == 0, created.stderr
    assert "instances" in created.stdout and "sentence order" in created.stdout
    missing = run(
        "albert_tf.create_pretraining_data",
        f"--input_file={tmp_path}/nothing/*.txt",
        f"--output_file={tmp_path}/c.tfrecord",
        f"--spm_model_file={tmp_path}/spm.model",
    )
    assert missing.returncode != 0
    assert (
        "create_pretraining_data: error: --input_file: " in missing.stderr
        and "matches no file" in missing.stderr
    )
