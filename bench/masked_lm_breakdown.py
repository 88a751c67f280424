"""Where a pretrained model's masked-LM accuracy comes from: held-out accuracy split by what the input showed
at the masked position ([MASK], the target kept, a random token), against what context alone could give.

    python bench/masked_lm_breakdown.py --model_dir=runs/study/pretrain/sop \
        --records=runs/study/records/sop/eval-00000-of-00001 \
        --train_records=runs/study/records/sop/train-00000-of-00004

Prints, on the held-out records: accuracy at [MASK] inputs beside the most frequent target's share there (a
model that learned no context gets that share), accuracy where the input was the target kept (copying), and
where it was a random token; then the accuracy at [MASK] inputs of bigram tables counted on --train_records
(the most frequent next piece after the left neighbour, and before the right one, where that neighbour is not
masked too): a floor for what the context offers.
"""

import argparse
import json
import os

import numpy as np
import tensorflow as tf

from albert_tf.features import PRETRAINER_INPUTS
from albert_tf.models import model_dir
from albert_tf.pretraining.dataset import pretraining_dataset
from albert_tf.text.tokenizer import MASK, SPECIAL_IDS

MASK_ID = SPECIAL_IDS[MASK]


def split_by_input(predictions, vocab_size):
    """(batch, predicted ids int [B, P]) pairs → ({input kind: [hits, positions]}, the most frequent target's
    share at [MASK] inputs). Kinds: what the input showed at the masked position ([MASK], the target kept, a
    random token)."""
    found = {"[MASK]": [0, 0], "kept": [0, 0], "random": [0, 0]}
    targets_at_mask = np.zeros(vocab_size)
    for batch, predicted in predictions:
        targets = batch["masked_lm_ids"].numpy()
        used = batch["masked_lm_weights"].numpy() > 0
        shown = np.take_along_axis(batch["input_word_ids"].numpy(), batch["masked_lm_positions"].numpy(), 1)
        kinds = {"[MASK]": shown == MASK_ID, "kept": shown == targets}
        kinds["random"] = ~kinds["[MASK]"] & ~kinds["kept"]
        for kind, where in kinds.items():
            found[kind][0] += int((predicted == targets)[used & where].sum())
            found[kind][1] += int((used & where).sum())
        np.add.at(targets_at_mask, targets[used & kinds["[MASK]"]], 1)
    return found, targets_at_mask.max() / max(found["[MASK]"][1], 1)


def record_shape(records):
    """{max_seq_length, max_predictions_per_seq} of create_pretraining_data's records, from the manifest
    beside them: records `DIR/eval-00000-of-00001` or `DIR/eval-*` have `DIR/eval.manifest.json`."""
    folder, name = os.path.split(records)
    path = os.path.join(folder, f"{name.split('-')[0]}.manifest.json")
    try:
        with open(path, encoding="utf-8") as file:
            options = json.load(file)["settings"]["options"]
    except FileNotFoundError:
        raise SystemExit(
            f"{records}: no manifest {path} beside them (create_pretraining_data writes one)"
        ) from None
    return {key: options[key] for key in ("max_seq_length", "max_predictions_per_seq")}


def held_out_batches(records, batches):
    """The first `batches` batches of 64 of held-out records, in file order."""
    dataset = pretraining_dataset(records, batch_size=64, is_training=False, **record_shape(records))
    return list(dataset.take(batches))


def records_of(path, limit):
    """(input ids with the masked targets put back, masked positions, targets, weights) per record."""
    for raw in tf.data.TFRecordDataset(path).take(limit):
        feature = tf.train.Example.FromString(raw.numpy()).features.feature
        ids = np.array(feature["input_ids"].int64_list.value)
        positions = np.array(feature["masked_lm_positions"].int64_list.value)
        targets = np.array(feature["masked_lm_ids"].int64_list.value)
        weights = np.array(feature["masked_lm_weights"].float_list.value)
        yield ids, positions, targets, weights


def bigram_accuracy(train_path, held_out_path, vocab_size, train_limit, held_out_limit):
    """Accuracy at [MASK] inputs of the most frequent piece after the left neighbour and before the right one
    (counted on the training records' text), over all [MASK] inputs (a masked neighbour counts as a miss)."""
    after = np.zeros((vocab_size, vocab_size), np.int32)  # after[left, piece]
    for ids, positions, targets, weights in records_of(train_path, train_limit):
        text = ids.copy()
        text[positions[weights > 0]] = targets[weights > 0]
        np.add.at(after, (text[:-1], text[1:]), 1)
    next_piece, previous_piece = after.argmax(axis=1), after.argmax(axis=0)
    hits, total = {"left": 0, "right": 0}, 0
    for ids, positions, targets, weights in records_of(held_out_path, held_out_limit):
        for position, target, weight in zip(positions, targets, weights, strict=True):
            if weight == 0 or ids[position] != MASK_ID:
                continue
            total += 1
            left, right = ids[position - 1], ids[min(position + 1, len(ids) - 1)]
            hits["left"] += left != MASK_ID and next_piece[left] == target
            hits["right"] += right not in (MASK_ID, 0) and previous_piece[right] == target
    return {side: count / max(total, 1) for side, count in hits.items()}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--records", required=True, help="held-out records (one TFRecord file)")
    parser.add_argument("--train_records", required=True, help="a training shard, for the bigram tables")
    parser.add_argument("--batches", type=int, default=50, help="held-out batches of 64")
    parser.add_argument("--train_limit", type=int, default=40_000)
    args = parser.parse_args()
    model = model_dir.load_pretrainer(args.model_dir)
    vocab_size = model.encoder.config.vocab_size
    predictions = (
        (batch, np.argmax(model({name: batch[name] for name in PRETRAINER_INPUTS})["mlm_logits"], axis=-1))
        for batch in held_out_batches(args.records, args.batches)
    )
    found, baseline = split_by_input(predictions, vocab_size)
    for kind, (hits, count) in found.items():
        print(f"input {kind:8} {count:7,} positions  accuracy {hits / max(count, 1):.4f}")
    print(f"most frequent target at [MASK] inputs: {baseline:.4f}")
    bigram = bigram_accuracy(
        args.train_records, args.records, vocab_size, args.train_limit, args.batches * 64
    )
    print(f"bigram table at [MASK] inputs: left neighbour {bigram['left']:.4f}, right {bigram['right']:.4f}")


if __name__ == "__main__":
    main()
