r"""Fine-tuning throughput: albert_tf's AlbertClassifier.fit against keras-hub's AlbertTextClassifier.fit,
same data, same truncation length, in one run.

    pip install -e ".[bench]"
    python bench/finetune.py                       # ALBERT-base, seq 128, batch 16, sentence pairs
    python bench/finetune.py --rounds=2 --steps=2  # a quick look

Both fine-tune a 2-class classifier on the ALBERT-base architecture (random weights) from raw sentence pairs
of the sample corpus, tokenized in tf.data and truncated to 128 tokens: ours with
`glue.classification_dataset` (each batch padded to its longest pair, rounded up to a multiple of 32) and the
original AdamW, keras-hub with its `AlbertTextClassifierPreprocessor` (every batch padded to 128) and its
default compile (Adam, jit_compile "auto"). After a warm-up, rounds of `--steps` steps alternate between the
two; the best round of each is reported.
"""

import argparse
import os
import sys

import albert_tf  # noqa: F401  (before TensorFlow: albert_tf's CPU defaults apply at its import)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from rounds import best_round_seconds  # noqa: E402
from serving import SEQ, SPM, base_config, keras_hub_parts, sample_pairs  # noqa: E402  (loads SentencePiece first)


def ours(pairs, batch_size):
    import keras

    from albert_tf.finetuning import glue
    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.training.optimizers import AdamWeightDecay

    examples = [glue.Example(a, b, i % 2) for i, (a, b) in enumerate(zip(*pairs, strict=True))]
    dataset = glue.classification_dataset(examples, SPM, SEQ, batch_size, is_training=True).repeat()
    model = AlbertClassifier(AlbertEncoder(base_config()), num_classes=2)
    model.compile(
        optimizer=AdamWeightDecay(2e-5), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return lambda steps: model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)


def keras_hub_peer(pairs, batch_size):
    import keras_hub
    import tensorflow as tf

    backbone, preprocessor = keras_hub_parts()
    model = keras_hub.models.AlbertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    labels = [i % 2 for i in range(len(pairs[0]))]
    dataset = (
        tf.data.Dataset.from_tensor_slices(((list(pairs[0]), list(pairs[1])), labels))
        .shuffle(len(labels), seed=1)
        .batch(batch_size, drop_remainder=True)
        .repeat()
    )
    return lambda steps: model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3, help="Training steps per timed round.")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pairs = sample_pairs(512)
    runners = {"albert_tf": ours(pairs, args.batch_size), "keras_hub": keras_hub_peer(pairs, args.batch_size)}
    best = best_round_seconds(runners, args.rounds, args.steps)
    rates = {name: args.steps * args.batch_size / seconds for name, seconds in best.items()}
    print(f"ALBERT-base classifier fine-tuning, seq {SEQ}, batch {args.batch_size}, float32, CPU")
    for name, rate in rates.items():
        print(f"{name:<12}{rate:>10.2f} examples/s{best[name] / args.steps:>8.2f} s/step")
    print(f"ratio albert_tf / keras_hub: {rates['albert_tf'] / rates['keras_hub']:.2f}x (target 1.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
