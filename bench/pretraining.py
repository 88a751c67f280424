r"""End-to-end pretraining throughput on CPU: albert_tf's pretraining loop against keras-hub's
`AlbertMaskedLM.fit`, same data, same shapes, in one run.

    pip install -e ".[bench]"
    python bench/pretraining.py                       # ALBERT-base, seq 128, 20 predictions, batch 16
    python bench/pretraining.py --rounds=2 --steps=2  # a quick look

Both read the sample corpus's training records at seq 128 with 20 predictions (built into a scratch folder
by data/sample/make_sample_records.py; ids from the 8k sample vocabulary, valid for the 30k-vocabulary
ALBERT-base) through a tf.data pipeline, input time included.
Ours: `albert_tf.pretraining.run.build` (LAMB, MLM + SOP losses, the loop `run_pretraining` runs).
Peer: keras-hub's `AlbertBackbone` + `AlbertMaskedLM` (masked LM only: keras-hub has no SOP head), compiled
with keras-hub's defaults (AdamW, jit_compile "auto", i.e. XLA) and again with XLA off, fed by our reader
mapped to its input names. `--mixed_precision` sets the global dtype policy both are built under.
After a warm-up (tracing, compilation), rounds of `--steps` steps alternate between the two so that drift
in the machine's speed hits both alike; the best round of each is reported.
"""

import argparse
import os
import sys
import tempfile

import sample_records  # bench/ is on sys.path when a bench script runs
from rounds import best_round_seconds

from albert_tf import shipped  # before TensorFlow: albert_tf's CPU defaults apply at its import

SEQ, PREDICTIONS = 128, 20


def train_step_flops(batch_size):
    """Matrix-multiply FLOPs of one ALBERT-base training step (3x the forward; see bench/train_step.py)."""
    import train_step  # bench/ is on sys.path when a bench script runs

    return train_step.train_step_flops(train_step.albert_base(), batch_size, SEQ, PREDICTIONS)


def ours(records, batch_size, output_dir, mixed_precision, jit_compile):
    """A callable running n training steps of our loop."""

    from albert_tf.pretraining.run import build
    from albert_tf.pretraining.settings import PretrainingSettings

    settings = PretrainingSettings(
        albert_config_file=shipped.config_file("albert_base"),
        input_file=records,
        output_dir=output_dir,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        train_batch_size=batch_size,
        num_train_steps=1000,
        num_warmup_steps=10,
        shuffle_buffer_size=1000,
        mixed_precision=mixed_precision,
        jit_compile=jit_compile,
    )
    run_ = build(settings)
    return lambda steps: run_.engine.run_steps(steps)[0]["sums"].numpy()


def keras_hub_peer(records, batch_size, jit_compile="auto"):
    """A callable running n training steps of keras-hub's AlbertMaskedLM.fit."""
    import keras_hub

    from albert_tf.config import AlbertConfig
    from albert_tf.pretraining.dataset import pretraining_dataset

    config = AlbertConfig.from_json_file(shipped.config_file("albert_base"))
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        embedding_dim=config.embedding_size,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        num_groups=config.num_hidden_groups,
        num_inner_repetitions=config.inner_group_num,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
    )
    model = keras_hub.models.AlbertMaskedLM(backbone, preprocessor=None)
    # keras-hub's defaults (AdamW, sparse cross-entropy from logits), XLA as asked ("auto" is its default).
    model.compile(jit_compile=jit_compile)

    def to_keras_hub(batch):
        inputs = {
            "token_ids": batch["input_word_ids"],
            "padding_mask": batch["input_mask"] > 0,
            "segment_ids": batch["input_type_ids"],
            "mask_positions": batch["masked_lm_positions"],
        }
        return inputs, batch["masked_lm_ids"], batch["masked_lm_weights"]

    dataset = pretraining_dataset(
        records,
        batch_size=batch_size,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        shuffle_buffer_size=1000,
    ).map(to_keras_hub)

    def steps(count):
        model.fit(dataset, steps_per_epoch=count, epochs=1, verbose=0)

    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3, help="Training steps per timed round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--mixed_precision", choices=["float32", "bfloat16"], default="float32", help="For both trainers."
    )
    parser.add_argument("--jit_compile", action="store_true", help="XLA for ours (keras-hub: its 'auto').")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        folder = sample_records.build(os.path.join(scratch, "records"), SEQ, PREDICTIONS)
        records = os.path.join(folder, "train-*")
        output = os.path.join(scratch, "run")
        precision, xla = args.mixed_precision, args.jit_compile
        runners = {"albert_tf": ours(records, args.batch_size, output, precision, xla)}
        # Ours set the global dtype policy (float32 or mixed_bfloat16): keras-hub is built under the same.
        runners["keras_hub"] = keras_hub_peer(records, args.batch_size)
        runners["keras_hub_no_xla"] = keras_hub_peer(records, args.batch_size, jit_compile=False)
        best = best_round_seconds(runners, args.rounds, args.steps)

    rates = {name: args.steps * args.batch_size / seconds for name, seconds in best.items()}
    print(
        f"ALBERT-base, seq {SEQ}, {PREDICTIONS} predictions, batch {args.batch_size}, "
        f"{args.mixed_precision}, jit_compile={args.jit_compile} (ours), CPU"
    )
    print(f"{'trainer':<18}{'examples/s':>12}{'s/step':>10}")
    for name, rate in rates.items():
        print(f"{name:<18}{rate:>12.2f}{best[name] / args.steps:>10.2f}")
    ratio = rates["albert_tf"] / rates["keras_hub"]
    print(f"ratio albert_tf / keras_hub (its default): {ratio:.2f}x (target 1.3x)")
    best_peer = max(rates["keras_hub"], rates["keras_hub_no_xla"])
    print(f"ratio albert_tf / keras_hub (its best): {rates['albert_tf'] / best_peer:.2f}x")
    flops = train_step_flops(args.batch_size)
    for name, seconds in best.items():
        print(f"{name}: {flops / (seconds / args.steps) / 1e9:.0f} GFLOP/s of matrix multiplies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
