"""MLM + SOP training instances from tokenized documents: the original algorithm with its flaws fixed.

Follows google-research/albert `create_pretraining_data.py` (Lan et al. 2020, arXiv:1909.11942), except:
- SOP pairs always come from one document: a chunk of one segment is split inside that segment (at a word
  start where there is one) instead of taking B from another document (original issue #234).
- Every draw, n-gram sizes included, comes from one seeded generator per block (the original drew n from
  NumPy's unseeded global generator, so its output could not be reproduced).
- A word never runs across [SEP] nor across the start of a line (a sentence), even when the SentencePiece
  model puts no word-start mark "▁" before each line (train_tokenizer --noadd_dummy_prefix); random
  replacements never draw <pad>, <unk> or the control pieces.
- Truncation draws how many tokens leave each end at once (same distribution as the original's coin per
  token).
Pure Python, no TensorFlow: it runs in the builder's worker processes.
"""

import bisect
import dataclasses

from albert_tf import features
from albert_tf.pretraining.data.records import serialize_example
from albert_tf.text.tokenizer import truncated_lengths

# Pieces the original treats as a word by themselves (`_is_start_piece_sp`).
_PUNCTUATION = set('!"#$%&"()*+,-./:;?@[\\]^_`{|}~') | {"€", "£"}
_ENGLISH = set("abcdefghijklmnopqrstuvwxyz")


def is_start_piece(piece):
    """Whether a SentencePiece piece starts a word, by the original's rule.

    A piece starts a word when it starts with "▁", is a special piece ("<...>"), is punctuation, or holds a
    character outside a-z and punctuation (digits, other scripts: those pieces are words by themselves).
    """
    return (
        piece.startswith("\u2581")
        or piece.startswith("<")
        or piece in _PUNCTUATION
        or not all(c.lower() in _ENGLISH or c in _PUNCTUATION for c in piece)
    )


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """What instance creation needs to know about the ids.

    Attributes:
      cls_id, sep_id, mask_id: special ids.
      word_start: tuple of 0/1 by id (is_start_piece of the id's piece).
      replacement_ids: ids a masked token may be replaced by (not <pad>, <unk> or control pieces).
    """

    cls_id: int
    sep_id: int
    mask_id: int
    word_start: tuple
    replacement_ids: tuple

    @classmethod
    def from_sentencepiece(cls, processor):
        """From a loaded SentencePieceProcessor with the ALBERT special pieces."""
        size = processor.get_piece_size()
        pieces = [processor.id_to_piece(i) for i in range(size)]
        ordinary = [
            i for i in range(size) if not (processor.is_control(i) or processor.is_unknown(i) or i == 0)
        ]
        return cls(
            cls_id=processor.piece_to_id("[CLS]"),
            sep_id=processor.piece_to_id("[SEP]"),
            mask_id=processor.piece_to_id("[MASK]"),
            word_start=tuple(int(is_start_piece(p)) for p in pieces),
            replacement_ids=tuple(ordinary),
        )


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    """The original's flags that shape instances (defaults are the original's)."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = True
    ngram: int = 3
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length must be at least 5, got {self.max_seq_length}")
        if not 0 <= self.masked_lm_prob <= 1:
            raise ValueError(f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        if self.max_predictions_per_seq < 1:
            raise ValueError(
                f"max_predictions_per_seq must be at least 1, got {self.max_predictions_per_seq}"
            )
        if not 0 <= self.short_seq_prob <= 1:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be at least 1, got {self.ngram}")

    def ngram_cumulative(self):
        """Cumulative probabilities of n = 1..ngram: p(n) ∝ 1/n, or reversed, p(n) ∝ 1/(ngram + 1 - n), when
        not favor_shorter_ngram (the original's `pvals[::-1]`)."""
        weights = [1 / n for n in range(1, self.ngram + 1)]
        if not self.favor_shorter_ngram:
            weights.reverse()
        total, running, out = sum(weights), 0.0, []
        for weight in weights:
            running += weight / total
            out.append(running)
        out[-1] = 1.0
        return out


class InstanceMaker:
    """Turns tokenized documents into serialized tf.Examples.

    Args:
      options: InstanceOptions.
      vocab: Vocabulary.
    """

    def __init__(self, options, vocab):
        self.options = options
        self.vocab = vocab
        self._ngram_cumulative = options.ngram_cumulative()

    def document_instances(self, documents, index, rng, stats):
        """Instances of documents[index], a list of segments (lists of ids); others serve NSP only.

        Returns:
          list of serialized tf.Example bytes. stats (a Counter) gets instances, tokens, masked tokens,
          how masked tokens were replaced, and SOP labels added.
        """
        options = self.options
        document = documents[index]
        max_num_tokens = options.max_seq_length - 3
        target_length = max_num_tokens
        if rng.random() < options.short_seq_prob:
            target_length = rng.randint(2, max_num_tokens)
        out = []
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target_length:
                pair = self._pair(chunk, documents, index, target_length, rng)
                if pair is not None:
                    (tokens_a, lines_a), (tokens_b, lines_b), label, unused = pair
                    i -= unused
                    lines_a, lines_b = self._truncate(
                        tokens_a, tokens_b, lines_a, lines_b, max_num_tokens, rng
                    )
                    lines = [1 + p for p in lines_a] + [len(tokens_a) + 2 + p for p in lines_b]
                    out.append(self._example(tokens_a, tokens_b, label, lines, rng, stats))
                chunk, chunk_length = [], 0
            i += 1
        return out

    def _pair(self, chunk, documents, index, target_length, rng):
        """((A, its line starts), (B, its line starts), label, segments to give back) from a chunk, or None
        when it cannot make a pair. A side's line starts: where each of its lines begins in it."""
        if self.options.random_next_sentence:
            return self._nsp_pair(chunk, documents, index, target_length, rng)
        if len(chunk) >= 2:
            a_end = rng.randint(1, len(chunk) - 1)
            side_a, side_b = _joined(chunk[:a_end]), _joined(chunk[a_end:])
        else:
            segment = chunk[0]
            if len(segment) < 2:
                return None
            starts = [p for p in range(1, len(segment)) if self.vocab.word_start[segment[p]]]
            split = rng.choice(starts) if starts else rng.randint(1, len(segment) - 1)
            side_a, side_b = (list(segment[:split]), [0]), (list(segment[split:]), [])  # B: mid-line
        if rng.random() < 0.5:
            return side_b, side_a, 1, 0
        return side_a, side_b, 0, 0

    def _nsp_pair(self, chunk, documents, index, target_length, rng):
        """BERT's next-sentence pairs: B from another document half of the time (label 1)."""
        a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
        side_a = _joined(chunk[:a_end])
        if (len(chunk) == 1 or rng.random() < 0.5) and len(documents) > 1:
            other = rng.randrange(len(documents) - 1)
            other = other + 1 if other >= index else other
            random_document = documents[other]
            tokens_b, lines_b = [], []
            for segment in random_document[rng.randrange(len(random_document)) :]:
                lines_b.append(len(tokens_b))
                tokens_b.extend(segment)
                if len(tokens_b) >= target_length - len(side_a[0]):
                    break
            return side_a, (tokens_b, lines_b), 1, len(chunk) - a_end
        side_b = _joined(chunk[a_end:])
        if not side_b[0]:
            return None
        return side_a, side_b, 0, 0

    @staticmethod
    def _truncate(tokens_a, tokens_b, lines_a, lines_b, max_num_tokens, rng):
        """Trims the longer segment first (ties trim B), each removed token from a random end.

        Returns:
          (lines_a, lines_b): the line starts that remain, at their positions in the trimmed sides.
        """
        keep_a, keep_b = truncated_lengths(len(tokens_a), len(tokens_b), max_num_tokens)
        kept = []
        for tokens, lines, keep in ((tokens_a, lines_a, keep_a), (tokens_b, lines_b, keep_b)):
            removed = len(tokens) - keep
            front = 0
            if removed:
                front = bin(rng.getrandbits(removed)).count("1")  # Binomial(removed, 1/2)
                del tokens[len(tokens) - (removed - front) :]
                del tokens[:front]
            kept.append([p - front for p in lines if front <= p < front + keep])
        return tuple(kept)

    def _example(self, tokens_a, tokens_b, label, lines, rng, stats):
        """The serialized tf.Example of `[CLS] A [SEP] B [SEP]`; lines: where lines start in it."""
        vocab, options = self.vocab, self.options
        tokens = [vocab.cls_id, *tokens_a, vocab.sep_id, *tokens_b, vocab.sep_id]
        segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        positions, labels, boundary = self._mask(tokens, len(tokens_a) + 1, lines, rng, stats)
        length, padding = len(tokens), options.max_seq_length - len(tokens)
        predictions = options.max_predictions_per_seq - len(positions)
        stats["instances"] += 1
        stats["tokens"] += length
        stats["masked"] += len(positions)
        stats[f"label_{label}"] += 1
        return serialize_example(
            {
                features.INPUT_IDS: tokens + [0] * padding,
                features.INPUT_MASK: [1] * length + [0] * padding,
                features.SEGMENT_IDS: segment_ids + [0] * padding,
                features.TOKEN_BOUNDARY: boundary + [0] * padding,
                features.MASKED_LM_POSITIONS: positions + [0] * predictions,
                features.MASKED_LM_IDS: labels + [0] * predictions,
                features.NEXT_SENTENCE_LABELS: [label],
            },
            {features.MASKED_LM_WEIGHTS: [1.0] * len(positions) + [0.0] * predictions},
        )

    def _mask(self, tokens, sep_a, lines, rng, stats):
        """Whole-word n-gram masking, in place on tokens, `[CLS] A [SEP] B [SEP]` with A's [SEP] at sep_a;
        a word starts at each of the positions lines (where a line starts).

        Returns:
          (positions, original ids at those positions, token_boundary), positions ascending.
        """
        vocab, options = self.vocab, self.options
        word_start = vocab.word_start
        last = len(tokens) - 1
        boundary = [word_start[t] for t in tokens]
        boundary[0] = boundary[sep_a] = boundary[last] = 1
        for p in lines:
            boundary[p] = 1
        # Words as [start, end) token ranges: a word starts at a word-start piece, a line's start or right
        # after a special token, and ends at the next word start or special token.
        if options.do_whole_word_mask:
            marks = [p for p, b in enumerate(boundary) if b]
            marks.extend(p for p in (1, sep_a + 1) if not boundary[p])
            marks.sort()
        else:
            marks = list(range(len(tokens)))
        middle = bisect.bisect_left(marks, sep_a)  # marks[0], marks[middle], marks[-1]: the special tokens
        starts = marks[1:middle] + marks[middle + 1 : -1]
        ends = marks[2 : middle + 1] + marks[middle + 2 :]
        if options.masked_lm_prob == 0 or not starts:
            return [], [], boundary
        words = len(starts)
        # sizes[k]: tokens in words before word k (the words tile A and B, so: non-special tokens before it).
        sizes = [s - 1 if s < sep_a else s - 2 for s in starts]
        sizes.append(last - 2)
        budget = min(
            options.max_predictions_per_seq, max(1, int(round(len(tokens) * options.masked_lm_prob)))
        )
        covered = set()  # word indexes
        order = list(range(words))
        chosen = 0
        randrange, random, cumulative = rng.randrange, rng.random, self._ngram_cumulative
        for k in range(words):  # A lazy Fisher-Yates shuffle: stop as soon as the budget is spent.
            if chosen >= budget:
                break
            j = randrange(k, words)
            order[k], order[j] = order[j], order[k]
            first = order[k]
            n = bisect.bisect_right(cumulative, random()) + 1
            while n > 0 and chosen + sizes[min(first + n, words)] - sizes[first] > budget:
                n -= 1
            end_word = min(first + n, words)
            if n == 0 or not covered.isdisjoint(range(first, end_word)):
                continue
            covered.update(range(first, end_word))
            chosen += sizes[end_word] - sizes[first]
        positions = [p for w in sorted(covered) for p in range(starts[w], ends[w])]
        labels = [tokens[p] for p in positions]
        mask_id, replacements = vocab.mask_id, vocab.replacement_ids
        kept = replaced = 0
        for p in positions:
            if random() < 0.8:
                tokens[p] = mask_id
            elif random() < 0.5:
                kept += 1
            else:
                tokens[p] = replacements[randrange(len(replacements))]
                replaced += 1
        stats["masked_as_mask"] += len(positions) - kept - replaced
        stats["masked_kept"] += kept
        stats["masked_random"] += replaced
        return positions, labels, boundary


def _joined(segments):
    """(the segments' ids one after another, the position where each segment starts in them)."""
    tokens, starts = [], []
    for segment in segments:
        starts.append(len(tokens))
        tokens.extend(segment)
    return tokens, starts
