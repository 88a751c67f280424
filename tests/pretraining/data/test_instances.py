import collections
import random

import pytest

from albert_tf.pretraining.data.instances import InstanceMaker, InstanceOptions, Vocabulary, is_start_piece
from albert_tf.pretraining.dataset import parse_spec
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_SPM

# Ids 0-4 special; even ids start words, odd ids continue them.
VOCAB = Vocabulary(
    cls_id=2,
    sep_id=3,
    mask_id=4,
    word_start=tuple(i % 2 == 0 for i in range(1000)),
    replacement_ids=tuple(range(5, 1000)),
)


def _parse(record, options):
    import tensorflow as tf

    spec = parse_spec(options.max_seq_length, options.max_predictions_per_seq)
    return {k: v.numpy().tolist() for k, v in tf.io.parse_single_example(record, spec).items()}


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(max_predictions_per_seq=0), "max_predictions_per_seq must be at least 1, got 0"),
        (dict(short_seq_prob=10.0), r"short_seq_prob must be in \[0, 1\], got 10\.0"),
        (dict(masked_lm_prob=-0.1), r"masked_lm_prob must be in \[0, 1\], got -0\.1"),
        (dict(max_seq_length=4), "max_seq_length must be at least 5, got 4"),
    ],
)
def test_options_that_cannot_work_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        InstanceOptions(**changes)


def test_start_piece_rule():
    assert is_start_piece("▁the") and is_start_piece("<unk>") and is_start_piece(",")
    assert is_start_piece("中") and is_start_piece("12")  # other scripts and digits are words alone
    assert not is_start_piece("ing") and not is_start_piece("s")


def test_vocabulary_from_sentencepiece_excludes_special_ids_from_replacements():
    vocab = Vocabulary.from_sentencepiece(AlbertTokenizer(SAMPLE_SPM).sp)
    assert (vocab.cls_id, vocab.sep_id, vocab.mask_id) == (2, 3, 4)
    assert min(vocab.replacement_ids) == 5 and len(vocab.replacement_ids) == 7995


def test_ngram_probabilities():
    assert InstanceOptions().ngram_cumulative() == pytest.approx([6 / 11, 9 / 11, 1.0])
    # The original reverses the probabilities: longer n-grams favoured (2/11, 3/11, 6/11), not uniform.
    longer = InstanceOptions(favor_shorter_ngram=False)
    assert longer.ngram_cumulative() == pytest.approx([2 / 11, 5 / 11, 1.0])
    assert InstanceOptions(ngram=2, favor_shorter_ngram=False).ngram_cumulative() == pytest.approx([1 / 3, 1])


def _documents(count, sentences, length, rng):
    """Documents whose ids encode (document, position): doc d uses ids 10 + 100·d + k, k increasing."""
    documents = []
    for d in range(count):
        ids = iter(range(10 + 100 * d, 10 + 100 * (d + 1)))
        documents.append([[next(ids) for _ in range(rng.randint(1, length))] for _ in range(sentences)])
    return documents


def _instances(options, documents, seed=0, dupe=1):
    maker = InstanceMaker(options, VOCAB)
    stats = collections.Counter()
    rng = random.Random(seed)
    records = [
        r
        for _ in range(dupe)
        for i in range(len(documents))
        for r in maker.document_instances(documents, i, rng, stats)
    ]
    return [_parse(r, options) for r in records], stats


def test_sop_pairs_come_from_one_document_in_order_or_swapped():
    options = InstanceOptions(max_seq_length=24, max_predictions_per_seq=4, masked_lm_prob=0.0)
    documents = _documents(6, 5, 6, random.Random(1)) + [[[900, 901, 902]]]  # one single-segment document
    examples, stats = _instances(options, documents, dupe=20)
    labels = collections.Counter()
    for example in examples:
        ids, segments = example["input_ids"], example["segment_ids"]
        a = [t for t, s, m in zip(ids, segments, example["input_mask"], strict=True) if m and s == 0][1:-1]
        b = [t for t, s, m in zip(ids, segments, example["input_mask"], strict=True) if m and s == 1][:-1]
        assert a and b
        assert len({t // 100 for t in a + b}) == 1, "A and B from different documents"
        label = example["next_sentence_labels"][0]
        assert (max(a) < min(b)) == (label == 0) and (min(a) > max(b)) == (label == 1)
        labels[label] += 1
        assert ids[0] == 2 and ids[len(a) + 1] == 3 and sum(example["input_mask"]) <= 24
    assert abs(labels[1] / sum(labels.values()) - 0.5) < 0.08
    assert stats["instances"] == len(examples)


def test_masking_statistics_whole_words_and_feature_layout():
    options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=20)
    rng = random.Random(3)
    # Each line starts a word, as with SentencePiece's dummy prefix ("▁" before each line).
    line = lambda first, n: [first] + [rng.randrange(5, 1000) for _ in range(n)]  # noqa: E731
    documents = [[line(2 * rng.randrange(3, 500), rng.randint(4, 14)) for _ in range(8)] for _ in range(30)]
    examples, stats = _instances(options, documents, dupe=5)
    masked = stats["masked_as_mask"] + stats["masked_kept"] + stats["masked_random"]
    assert stats["masked"] == masked
    assert abs(stats["masked_as_mask"] / masked - 0.8) < 0.03
    assert abs(stats["masked_kept"] / masked - 0.1) < 0.03
    assert abs(stats["masked_random"] / masked - 0.1) < 0.03
    assert abs(stats["masked"] / stats["tokens"] - 0.15) < 0.02
    short_of_budget = 0
    for example in examples:
        count = int(sum(example["masked_lm_weights"]))
        positions = example["masked_lm_positions"][:count]
        assert positions == sorted(positions) and len(set(positions)) == count
        assert example["masked_lm_positions"][count:] == [0] * (20 - count)
        length = sum(example["input_mask"])
        budget = min(20, max(1, round(length * 0.15)))  # the original's number of predictions
        assert count <= budget
        short_of_budget += count < budget
        for p in positions:
            assert example["input_ids"][p] != 2 and example["input_ids"][p] != 3
        # Whole words: a masked continuation piece has its word start masked too (labels hold the originals).
        original = list(example["input_ids"])
        for p, label in zip(positions, example["masked_lm_ids"], strict=False):
            original[p] = label
        for p in positions:
            if not VOCAB.word_start[original[p]] and original[p - 1] not in (2, 3):
                assert p - 1 in positions
        boundary = example["token_boundary"]
        assert boundary[0] == 1 and all(
            boundary[i] == int(original[i] in (2, 3) or VOCAB.word_start[original[i]]) for i in range(length)
        )
    # Whole words sometimes do not fit the tokens left (14 of 287 examples here); most fill the budget.
    assert short_of_budget < 0.1 * len(examples)


def test_a_word_never_runs_across_the_start_of_a_line():
    # A model trained without SentencePiece's dummy prefix (train_tokenizer --noadd_dummy_prefix) may begin
    # a line with a piece that continues words elsewhere ("asic" of a line "Basic..."): odd ids 901-999 here,
    # found only at a line's start. That piece starts a word all the same: the boundary feature marks it and
    # a whole-word mask of the previous line's last word stops before it.
    options = InstanceOptions(max_seq_length=40, max_predictions_per_seq=12, masked_lm_prob=0.3)
    rng = random.Random(8)
    line = lambda n: [rng.randrange(901, 1000, 2)] + [rng.randrange(5, 900) for _ in range(n)]  # noqa: E731
    documents = [[line(rng.randint(2, 9)) for _ in range(6)] for _ in range(20)]
    examples, _ = _instances(options, documents, dupe=3)
    line_starts = masked_line_starts = 0
    for example in examples:
        original = list(example["input_ids"])
        count = int(sum(example["masked_lm_weights"]))
        positions = example["masked_lm_positions"][:count]
        for p, label in zip(positions, example["masked_lm_ids"], strict=False):
            original[p] = label
        length = sum(example["input_mask"])
        starts = [i for i in range(length) if original[i] > 900]
        line_starts += len(starts)
        assert example["token_boundary"][:length] == [
            int(original[i] in (2, 3) or VOCAB.word_start[original[i]] or original[i] > 900)
            for i in range(length)
        ]
        # A masked continuation piece has its word's start masked too, and a line's first piece is a start.
        for p in positions:
            if original[p] % 2 and original[p] < 900 and original[p - 1] not in (2, 3):
                assert p - 1 in positions
        masked_line_starts += sum(p in positions and p - 1 not in positions for p in starts)
    assert line_starts > 100 and masked_line_starts > 10


def test_same_seed_same_records_other_seed_other_records():
    options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=5)
    documents = _documents(5, 6, 7, random.Random(2))
    assert _instances(options, documents, seed=4)[0] == _instances(options, documents, seed=4)[0]
    assert _instances(options, documents, seed=4)[0] != _instances(options, documents, seed=5)[0]


def test_truncation_keeps_the_limit_and_nsp_mixes_documents():
    options = InstanceOptions(
        max_seq_length=12, max_predictions_per_seq=2, masked_lm_prob=0.0, random_next_sentence=True
    )
    documents = _documents(8, 4, 12, random.Random(5))
    examples, _ = _instances(options, documents, dupe=10)
    mixed = 0
    for example in examples:
        assert sum(example["input_mask"]) <= 12
        tokens = [t for t, m in zip(example["input_ids"], example["input_mask"], strict=True) if m and t > 4]
        mixed += len({t // 100 for t in tokens}) > 1
        if len({t // 100 for t in tokens}) > 1:
            assert example["next_sentence_labels"] == [1]
    assert mixed > len(examples) // 4


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(ngram=0), "ngram must be at least 1, got 0"),
        (dict(short_seq_prob=-0.5), r"short_seq_prob must be in \[0, 1\], got -0\.5"),
        (dict(short_seq_prob=1.5), r"short_seq_prob must be in \[0, 1\], got 1\.5"),
        (dict(masked_lm_prob=1.5), r"masked_lm_prob must be in \[0, 1\], got 1\.5"),
    ],
)
def test_more_options_that_cannot_work_are_refused(changes, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        InstanceOptions(**changes)


def test_the_smallest_and_largest_options_that_work_are_taken():
    InstanceOptions(
        max_seq_length=5, max_predictions_per_seq=1, ngram=1, short_seq_prob=0.0, masked_lm_prob=0.0
    )
    InstanceOptions(short_seq_prob=1.0, masked_lm_prob=1.0)


def test_vocabulary_from_sentencepiece_marks_word_starts():
    processor = AlbertTokenizer(SAMPLE_SPM).sp
    vocab = Vocabulary.from_sentencepiece(processor)
    starts = {
        piece: vocab.word_start[processor.piece_to_id(piece)] for piece in ("▁the", "▁", ",", "ing", "s")
    }
    assert starts == {"▁the": 1, "▁": 1, ",": 1, "ing": 0, "s": 0}
    assert len(vocab.word_start) == 8000


def _pairs(example):
    """(A, B, label) of an example: its two segments' ids, without [CLS] and [SEP]."""
    ids, segments, mask = example["input_ids"], example["segment_ids"], example["input_mask"]
    a = [t for t, s, m in zip(ids, segments, mask, strict=True) if m and s == 0][1:-1]
    b = [t for t, s, m in zip(ids, segments, mask, strict=True) if m and s == 1][:-1]
    return a, b, example["next_sentence_labels"][0]


def _document(lengths, first=10):
    """Segments of the given lengths, ids counting up from `first`."""
    ids = iter(range(first, first + sum(lengths)))
    return [[next(ids) for _ in range(length)] for length in lengths]


def test_segments_are_gathered_until_they_hold_the_target_tokens():
    """Chunks of consecutive segments, each closed when its tokens reach max_seq_length - 3 (12 here) or at
    the document's end, each made into one instance that holds it whole, in order or swapped."""
    options = InstanceOptions(
        max_seq_length=15, max_predictions_per_seq=1, masked_lm_prob=0.0, short_seq_prob=0.0
    )
    document = _document([11, 1, 11, 1, 6, 6, 4, 4, 4, 2])
    s = document
    chunks = [s[0] + s[1], s[2] + s[3], s[4] + s[5], s[6] + s[7] + s[8], s[9]]
    for seed in range(12):
        examples, stats = _instances(options, [document], seed=seed)
        assert [sorted(a + b) for a, b, _ in map(_pairs, examples)] == chunks
        assert [sum(example["input_mask"]) for example in examples] == [15, 15, 15, 15, 5]
        labels = [label for _, _, label in map(_pairs, examples)]
        assert (stats["label_0"], stats["label_1"]) == (labels.count(0), labels.count(1))
        assert stats["instances"] == 5 and stats["tokens"] == 4 * 15 + 5


def test_padding_is_zeros_in_every_feature():
    options = InstanceOptions(max_seq_length=24, max_predictions_per_seq=6, masked_lm_prob=0.15)
    examples, _ = _instances(options, [_document([3, 4]), _document([5], first=200)], seed=1)
    for example in examples:
        length, count = sum(example["input_mask"]), int(sum(example["masked_lm_weights"]))
        assert 0 < length < 24 and 0 < count < 6
        for name in ("input_ids", "input_mask", "segment_ids", "token_boundary"):
            assert example[name][length:] == [0] * (24 - length), name
        for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
            assert example[name][count:] == [0] * (6 - count), name


def test_a_single_segment_is_split_at_a_word_start_or_anywhere_without_one():
    options = InstanceOptions(
        max_seq_length=32, max_predictions_per_seq=1, masked_lm_prob=0.0, short_seq_prob=0.0
    )
    # Even ids start words: 11 13 [14] 15 17 has one word start, at position 2.
    splits = collections.Counter()
    for seed in range(30):
        (example,), _ = _instances(options, [[[11, 13, 14, 15, 17]]], seed=seed)
        a, b, label = _pairs(example)
        first, second = (b, a) if label else (a, b)
        assert first + second == [11, 13, 14, 15, 17]
        splits[len(first)] += 1
    assert set(splits) == {2}
    # Without a word start after the first token: anywhere, each of the four places over the seeds.
    splits.clear()
    for seed in range(60):
        (example,), _ = _instances(options, [[[11, 13, 15, 17, 19]]], seed=seed)
        a, b, label = _pairs(example)
        splits[len(b if label else a)] += 1
    assert set(splits) == {1, 2, 3, 4}
    # Two tokens make an instance of one token each; one token makes none.
    (example,), _ = _instances(options, [[[12, 14]]])
    assert sorted(_pairs(example)[:2]) == [[12], [14]]
    assert _instances(options, [[[12]]])[0] == []


def test_truncation_removes_tokens_from_both_ends_of_a_segment():
    options = InstanceOptions(
        max_seq_length=8, max_predictions_per_seq=1, masked_lm_prob=0.0, short_seq_prob=0.0
    )
    document = _document([10, 10])  # 20 tokens into 5
    fronts = ends = 0
    for seed in range(30):
        examples, _ = _instances(options, [document], seed=seed)
        a, b, label = _pairs(examples[0])
        first, second = (b, a) if label else (a, b)
        assert len(first) + len(second) == 5 and first == list(range(first[0], first[0] + len(first)))
        fronts += first[0] > 10  # tokens left the front of the first segment
        ends += first[-1] < 19  # and its end
    assert fronts and ends


def test_without_whole_word_masking_a_piece_is_masked_alone():
    options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=20, do_whole_word_mask=False)
    rng = random.Random(3)
    documents = [
        [[rng.randrange(5, 1000) for _ in range(rng.randint(5, 15))] for _ in range(8)] for _ in range(10)
    ]
    examples, _ = _instances(options, documents)
    alone = 0
    for example in examples:
        count = int(sum(example["masked_lm_weights"]))
        positions = set(example["masked_lm_positions"][:count])
        original = dict(zip(example["masked_lm_positions"], example["masked_lm_ids"], strict=True))
        for p in positions:
            starts_word = VOCAB.word_start[original[p]] or example["input_ids"][p - 1] in (2, 3)
            alone += not starts_word and p - 1 not in positions
    assert alone > 10  # continuation pieces masked without their word's start


def test_ngrams_of_one_word_mask_words_apart():
    """With ngram=1 each draw masks one word, so masked words seldom touch (the budget is 15% of the tokens;
    0.22 of them here): n-grams of two words would make at least half of them touch."""

    def touching(ngram):
        options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=20, ngram=ngram)
        rng = random.Random(4)
        documents = [
            [[rng.randrange(5, 1000) for _ in range(rng.randint(5, 15))] for _ in range(8)] for _ in range(20)
        ]
        examples, _ = _instances(options, documents)
        masked = touch = 0
        for example in examples:
            count = int(sum(example["masked_lm_weights"]))
            words = set()
            for p in example["masked_lm_positions"][:count]:
                words.add(sum(example["token_boundary"][: p + 1]))  # the word index of position p
            masked += len(words)
            touch += sum(word + 1 in words for word in words)
        return touch / masked

    assert touching(1) < 0.35


def test_nsp_pairs_continue_a_or_come_from_another_document():
    """random_next_sentence (BERT's NSP): B continues A in its document (label 0) or is a run of another
    document's segments (label 1, about half the time, from any other document); the segments of a document
    are each in one instance's A or label-0 B, in order (a random B gives back the segments it replaced)."""
    options = InstanceOptions(
        max_seq_length=512, max_predictions_per_seq=1, masked_lm_prob=0.0, short_seq_prob=0.0,
        random_next_sentence=True,
    )  # fmt: skip
    documents = [_document([1 + (d + k) % 6 for k in range(5)], first=10 + 100 * d) for d in range(4)]
    maker, rng = InstanceMaker(options, VOCAB), random.Random(0)
    labels, sources, several = collections.Counter(), collections.defaultdict(set), 0
    for _ in range(30):
        for index, document in enumerate(documents):
            records = maker.document_instances(documents, index, rng, collections.Counter())
            covered = []
            for a, b, label in map(_pairs, [_parse(record, options) for record in records]):
                assert {t // 100 for t in a} == {index}
                if label == 0:
                    assert b and {t // 100 for t in b} == {index} and b[0] == a[-1] + 1
                    covered += a + b
                else:
                    (other,) = {t // 100 for t in b}
                    assert other != index and b == list(range(b[0], b[0] + len(b)))
                    assert b[0] in [segment[0] for segment in documents[other]]  # from a segment's start
                    sources[index].add(other)
                    covered += a
                several += sum(segment[0] in a for segment in document) > 1
                labels[label] += 1
            assert covered == [t for segment in document for t in segment]
    assert 0.35 < labels[1] / sum(labels.values()) < 0.75
    assert all(sources[index] == {0, 1, 2, 3} - {index} for index in range(4))
    assert several  # A holds several segments at times
    # One document: no other to take B from.
    examples, _ = _instances(options, documents[:1], dupe=10)
    assert {_pairs(example)[2] for example in examples} == {0}
    examples, _ = _instances(options, documents[:2], dupe=10)
    assert {_pairs(example)[2] for example in examples} == {0, 1}


# Documents in scripts written without spaces between words (Japanese, Chinese) or between sentences only
# (Thai), one sentence a line as docs/data.md asks, with English words mixed in.
UNSPACED_DOCUMENTS = [
    ["ファイルを開くには、メニューからコマンドを選びます。", "ALBERTモデルは小さいです。",
     "変更を保存するには、ボタンをクリックします。", "ドイツ語のガイドをダウンロードしてください。"],
    ["中文文本没有空格。", "句子以句号结束。", "请选择要打开的文件。", "这个模型叫做ALBERT。"],
    ["ภาษาไทยไม่มีช่องว่างระหว่างคำ", "ผู้ใช้ต้องเลือกไฟล์", "กดปุ่มบันทึกเพื่อเก็บการเปลี่ยนแปลง", "โมเดลALBERTมีขนาดเล็ก"],
]  # fmt: skip


def test_text_without_spaces_makes_each_piece_a_word_and_sop_pairs_of_its_sentences(tmp_path):
    # The original's rule (_is_start_piece_sp): a piece holding a character outside a-z and punctuation is a
    # word by itself, so n-gram masks in these scripts count pieces, while an English word's pieces stay one.
    from albert_tf.text import spm_training

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(line for doc in UNSPACED_DOCUMENTS for line in doc * 30) + "\n", "utf-8")
    spm_training.train(
        [str(corpus)], str(tmp_path / "m"), vocab_size=140, keep_accents=True, character_coverage=1.0
    )
    tokenizer = AlbertTokenizer(tmp_path / "m.model", keep_accents=True)
    vocab = Vocabulary.from_sentencepiece(tokenizer.sp)
    documents = [[tokenizer.encode(line) for line in doc] for doc in UNSPACED_DOCUMENTS]
    for ids in (ids for doc in documents for ids in doc):
        for piece, start in ((tokenizer.sp.id_to_piece(i), vocab.word_start[i]) for i in ids):
            letters = piece.lstrip("▁")
            assert start == (piece.startswith("▁") or not letters.isascii() or not letters.isalpha()), piece
    options = InstanceOptions(max_seq_length=160, max_predictions_per_seq=20)  # no truncation
    maker, stats = InstanceMaker(options, vocab), collections.Counter()
    rng = random.Random(5)
    make = maker.document_instances
    records = [r for _ in range(10) for i in range(3) for r in make(documents, i, rng, stats)]
    texts = [[t for sentence in doc for t in sentence] for doc in documents]  # each document's ids in order
    labels = collections.Counter()
    for example in (_parse(r, options) for r in records):
        ids = list(example["input_ids"])
        masked = (example[name] for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"))
        for p, original, weight in zip(*masked, strict=True):
            if weight:
                ids[p] = original
                # A masked piece of these scripts is a word alone.
                if not tokenizer.sp.id_to_piece(original).lstrip("▁").isascii():
                    assert example["token_boundary"][p] == 1
        a, b, label = _pairs({**example, "input_ids": ids})
        # A and B are whole sentences of one document, in order (label 0) or swapped (label 1).
        first, second = (a, b) if label == 0 else (b, a)
        run = first + second
        assert (
            a
            and b
            and any(text[k : k + len(run)] == run for text in texts for k in range(len(text) - len(run) + 1))
        ), label
        labels[label] += 1
    assert labels[0] and labels[1] and stats["masked"] > 0
