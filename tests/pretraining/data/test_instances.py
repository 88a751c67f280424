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
    documents = [
        [[rng.randrange(5, 1000) for _ in range(rng.randint(5, 15))] for _ in range(8)] for _ in range(30)
    ]
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
