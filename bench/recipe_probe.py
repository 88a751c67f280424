"""A quick comparison of pretraining recipes: trains the tiny ALBERT on built records with one recipe and
prints, every --every steps, held-out masked-LM accuracy overall and at [MASK] inputs (beside the most
frequent target's share there: a model that learned no context gets that share) and sentence-order accuracy.

    python bench/recipe_probe.py --records=runs/study/records/sop           # AdamW 5e-4, 2,000 steps
    python bench/recipe_probe.py --records=runs/study/records/sop --optimizer=keras_adamw --learning_rate=1e-3
    python bench/recipe_probe.py --records=runs/study/records/sop --steps=1500 --set=num_attention_heads=4
    python bench/recipe_probe.py --records=runs/study/records/sop --steps=1500 --epsilon=1e-9

--records is a folder of create_pretraining_data's output (train-* and eval-* shards and their manifests, of
any shape). One process, in memory, no checkpoints: for deciding what a run_pretraining recipe should be, not
for training a model.
"""

import argparse
import json
import time

import keras
import tensorflow as tf
from masked_lm_breakdown import held_out_batches, record_shape, split_by_input  # bench/ is on sys.path

from albert_tf.config import AlbertConfig
from albert_tf.features import PRETRAINER_INPUTS
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.pretraining.dataset import pretraining_dataset
from albert_tf.pretraining.losses import pretraining_loss, pretraining_sums
from albert_tf.training.optimizers import AdamWeightDecay, Lamb
from albert_tf.training.schedules import WarmupPolynomialDecay


def optimizer(args):
    schedule = WarmupPolynomialDecay(args.learning_rate, args.steps, args.warmup)
    if args.optimizer == "adamw":  # the original's: no bias correction
        return AdamWeightDecay(schedule, epsilon=args.epsilon)
    if args.optimizer == "lamb":
        return Lamb(schedule, epsilon=args.epsilon)
    return keras.optimizers.AdamW(schedule, weight_decay=0.01, epsilon=args.epsilon, global_clipnorm=1.0)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", required=True)
    parser.add_argument("--config", default="albert_tf/configs/albert_tiny.json")
    parser.add_argument("--set", default="", help="config changes: key=value,key=value")
    parser.add_argument("--optimizer", choices=("adamw", "lamb", "keras_adamw"), default="adamw")
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--epsilon", type=float, default=1e-6)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--every", type=int, default=500)
    args = parser.parse_args()

    keras.utils.set_random_seed(1)
    with open(args.config, encoding="utf-8") as file:
        values = json.load(file)
    for change in filter(None, args.set.split(",")):
        key, value = change.split("=")
        values[key] = type(values[key])(value)
    model = AlbertPretrainer(AlbertEncoder(AlbertConfig.from_dict(values)))
    update = optimizer(args)
    shapes = record_shape(f"{args.records}/train-*")
    train = iter(pretraining_dataset(f"{args.records}/train-*", batch_size=args.batch, **shapes))
    held_out = held_out_batches(f"{args.records}/eval-*", 20)
    variables = model.trainable_variables

    @tf.function(jit_compile=True)
    def step(batch):
        with tf.GradientTape() as tape:
            sums = pretraining_sums(batch, model({k: batch[k] for k in PRETRAINER_INPUTS}, training=True))
            loss = pretraining_loss(sums, sums[1], args.batch)
        update.apply(tape.gradient(loss, variables), variables)
        return loss

    @tf.function(jit_compile=True)
    def predict(batch):
        outputs = model({k: batch[k] for k in PRETRAINER_INPUTS})
        return tf.argmax(outputs["mlm_logits"], -1, output_type=tf.int32), tf.argmax(
            outputs["sop_logits"], -1
        )

    def evaluate():
        predictions, order, examples = [], 0, 0
        for batch in held_out:
            predicted, predicted_order = (value.numpy() for value in predict(batch))
            predictions.append((batch, predicted))
            order += (predicted_order == batch["sentence_order_label"].numpy()).sum()
            examples += len(predicted_order)
        found, baseline = split_by_input(predictions, model.encoder.config.vocab_size)
        hits, positions = (sum(counts[i] for counts in found.values()) for i in (0, 1))
        at_mask = found["[MASK]"][0] / found["[MASK]"][1]
        return (f"mlm {hits / positions:.4f}, at [MASK] {at_mask:.4f} (most frequent {baseline:.4f}), "
                f"order {order / examples:.4f}")  # fmt: skip

    print(vars(args), flush=True)
    started = time.perf_counter()
    for number in range(1, args.steps + 1):
        loss = step(next(train))
        if number % args.every == 0 or number == args.steps:
            seconds = time.perf_counter() - started
            print(f"step {number}: loss {float(loss):.3f}, {evaluate()}, {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
