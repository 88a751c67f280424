r"""The pretraining study's models trained far past a 2-core CPU's hour, on a GPU: how many steps sentence
order needs, and whether the paper's Table 5 then shows in both directions.

    python bench/pretraining_study.py         # its stages 1-3 build the records (TensorFlow)
    python bench/study_on_gpu.py pack --work_dir=runs/study --max_train_records=200000     # TensorFlow
    KERAS_BACKEND=jax python bench/study_on_gpu.py train --steps=40000 --eval_every=2000 \
        --output=gpu-40000.json               # on the GPU, under JAX: runs/study/gpu_records.npz.xz
    python bench/study_on_gpu.py plot --results=gpu-40000.json --output=bench/study/gpu-40000.png

`pack` reads the study's TFRecords (SOP and NSP training records, held-out records of both kinds) into
compact numpy arrays, checking that every feature is recovered exactly from them, and checks that this
script's optimizer update equals the library's `AdamWeightDecay` (TensorFlow).

`train` runs where TensorFlow is not installed (the lent GPU machine has only JAX): the same tiny model
(`albert_tf.models.AlbertPretrainer`), the same loss and metrics (`albert_tf.pretraining.losses`), the
same learning-rate schedule (`albert_tf.training.schedules`) and the original's AdamW (no bias correction,
decoupled weight decay 0.01 except LayerNorm and bias, the summed gradient clipped to norm 1.0) written here
in keras.ops, since the library's optimizer is TensorFlow-specific. The records sit on the GPU; `lax.scan`
runs CHUNK steps per call; batches are drawn without replacement, a new permutation every epoch. Each model
is evaluated every --eval_every steps on all held-out records of both kinds, and the results file is
rewritten after each evaluation, so a run cut short keeps its curve.
"""

import argparse
import io
import json
import lzma
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OBJECTIVES = ("sop", "nsp")
CHUNK = 500  # steps per compiled call; --eval_every is a multiple of it


# pack (TensorFlow) -------------------------------------------------------------------------------------


def read_records(pattern, seq, predictions):
    """Every record of the files matching pattern, in file order, as {feature: int64/float32 array [N, L]}."""
    import tensorflow as tf

    from albert_tf.pretraining.dataset import expand_file_patterns, parse_spec, record_compression

    spec = parse_spec(seq, predictions)
    files = expand_file_patterns(pattern, flag="pack --work_dir")
    dataset = tf.data.TFRecordDataset(files, compression_type=record_compression(files[0]))
    batches = dataset.map(lambda x: tf.io.parse_single_example(x, spec)).batch(4096)
    parts = [{k: v.numpy() for k, v in batch.items()} for batch in batches]
    return {name: np.concatenate([p[name] for p in parts]) for name in spec}


def compact(records):
    """The records as a few small arrays; the full features are rebuilt by `features` and must match."""
    lengths = records["input_mask"].sum(1)
    segment_b = np.where(records["segment_ids"].any(1), records["segment_ids"].argmax(1), lengths)
    packed = {
        "input_ids": records["input_ids"].astype(np.uint16),
        "length": lengths.astype(np.uint8),
        "segment_b": segment_b.astype(np.uint8),
        "positions": records["masked_lm_positions"].astype(np.uint8),
        "targets": records["masked_lm_ids"].astype(np.uint16),
        "predictions": records["masked_lm_weights"].sum(1).astype(np.uint8),
        "label": records["next_sentence_labels"][:, 0].astype(np.uint8),
    }
    rebuilt = features(np, packed, np.arange(len(lengths)))
    for ours, theirs in (
        ("input_word_ids", "input_ids"),
        ("input_mask", "input_mask"),
        ("input_type_ids", "segment_ids"),
        ("masked_lm_positions", "masked_lm_positions"),
        ("masked_lm_ids", "masked_lm_ids"),
        ("masked_lm_weights", "masked_lm_weights"),
    ):
        if not np.array_equal(rebuilt[ours], records[theirs]):
            raise SystemExit(f"pack: {theirs} is not recovered from the compact arrays")
    if not np.array_equal(rebuilt["sentence_order_label"], records["next_sentence_labels"][:, 0]):
        raise SystemExit("pack: next_sentence_labels is not recovered from the compact arrays")
    return packed


def features(xp, packed, index):
    """The pretrainer's inputs and labels for the records at index (int [B]), from compact arrays, with
    xp = numpy or jax.numpy. The records' shapes are the arrays': input_ids [N, seq], positions
    [N, predictions]."""
    length = packed["length"][index].astype("int32")[:, None]
    positions = xp.arange(packed["input_ids"].shape[1])[None]
    return {
        "input_word_ids": packed["input_ids"][index].astype("int32"),
        "input_mask": (positions < length).astype("int32"),
        "input_type_ids": (
            (positions >= packed["segment_b"][index].astype("int32")[:, None]) & (positions < length)
        ).astype("int32"),
        "masked_lm_positions": packed["positions"][index].astype("int32"),
        "masked_lm_ids": packed["targets"][index].astype("int32"),
        "masked_lm_weights": (
            xp.arange(packed["positions"].shape[1])[None]
            < packed["predictions"][index].astype("int32")[:, None]
        ).astype("float32"),
        "sentence_order_label": packed["label"][index].astype("int32"),
    }


def pack(args):
    from albert_tf.pretraining.data.manifest import Manifest
    from albert_tf.training.optimizers import EXCLUDE_FROM_WEIGHT_DECAY

    arrays = {}
    for objective in OBJECTIVES:
        folder = os.path.join(args.work_dir, "records", objective)
        for split in ("train", "eval"):
            # the shapes the builder wrote, from its manifest
            options = Manifest.load(os.path.join(folder, f"{split}.manifest.json")).settings["options"]
            records = read_records(os.path.join(folder, f"{split}-*-of-*"), options["max_seq_length"],
                                   options["max_predictions_per_seq"])  # fmt: skip
            packed = compact(records)
            if split == "train" and args.max_train_records:  # the shards are shuffled: a random subset
                packed = {name: value[: args.max_train_records] for name, value in packed.items()}
            print(f"{objective} {split}: {len(packed['label'])} records", flush=True)
            arrays.update({f"{objective}_{split}_{name}": value for name, value in packed.items()})
    with open(os.path.join(args.work_dir, "albert_config.json"), encoding="utf-8") as file:
        config = json.load(file)
    model = pretrainer(config, seed=0)
    # Which variables get weight decay: the library's rule, applied here where the library imports.
    decayed = [
        not any(re.search(p, v.path) for p in EXCLUDE_FROM_WEIGHT_DECAY) for v in model.trainable_variables
    ]
    check_update_against_the_library(config, decayed)
    arrays["config"] = np.array(json.dumps(config))
    arrays["decayed"] = np.array(decayed)
    # xz: a third smaller than np.savez_compressed's zlib, which matters where the upload is limited.
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output + ".tmp", "wb") as file:
        file.write(lzma.compress(buffer.getvalue(), preset=6))
    os.replace(args.output + ".tmp", args.output)
    print(f"{args.output}: {os.path.getsize(args.output) / 2**20:.1f} MiB", flush=True)


def load(path):
    """The arrays `pack` wrote: {name: array}."""
    with open(path, "rb") as file:
        return dict(np.load(io.BytesIO(lzma.decompress(file.read()))))


def check_update_against_the_library(config, decayed):
    """Five steps of `adamw` and of the library's AdamWeightDecay, each from the same weights on the same
    batch, give the same weights (weight decay 0.5 so that a variable decayed by one and not the other
    shows; gradients of norm 2 or so, so that the clip acts)."""
    import keras
    import tensorflow as tf

    from albert_tf.features import PRETRAINER_INPUTS
    from albert_tf.pretraining.losses import pretraining_loss, pretraining_sums
    from albert_tf.training.optimizers import AdamWeightDecay
    from albert_tf.training.schedules import WarmupPolynomialDecay

    schedule = WarmupPolynomialDecay(0.01, num_train_steps=10, num_warmup_steps=2)
    library, ours = pretrainer(config, seed=1), pretrainer(config, seed=2)
    ours.set_weights(library.get_weights())
    optimizer = AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.5)
    params = [v.value for v in ours.trainable_variables]
    moments = [keras.ops.zeros_like(p) for p in params], [keras.ops.zeros_like(p) for p in params]
    rng = np.random.default_rng(0)
    largest_norm = worst = 0.0
    seq, predictions = 128, 20  # random records of any shape do for this check
    for step in range(5):
        packed = {
            "input_ids": rng.integers(5, config["vocab_size"], (8, seq)),
            "length": rng.integers(20, seq + 1, 8),
            "segment_b": np.full(8, 10),
            "positions": rng.integers(1, 20, (8, predictions)),
            "targets": rng.integers(5, config["vocab_size"], (8, predictions)),
            "predictions": rng.integers(1, predictions + 1, 8),
            "label": rng.integers(0, 2, 8),
        }
        batch = features(np, packed, np.arange(8))
        grads = []
        for model in (library, ours):
            with tf.GradientTape() as tape:
                outputs = model({name: batch[name] for name in PRETRAINER_INPUTS}, training=True)
                sums = pretraining_sums(batch, outputs)
                loss = pretraining_loss(sums, sums[1], 8)
            grads.append(tape.gradient(loss, model.trainable_variables))
        # Dense gradients, as run_pretraining's trainer passes them (JAX's are dense too): given the word
        # embeddings' IndexedSlices, tf.clip_by_global_norm would measure the parts, not their sum.
        dense = [tf.convert_to_tensor(g) for g in grads[0]]
        largest_norm = max(largest_norm, float(tf.linalg.global_norm(dense)))
        optimizer.apply(dense, library.trainable_variables)
        params, *moments = adamw(params, [tf.convert_to_tensor(g) for g in grads[1]], *moments,
                                 schedule(step), decayed, weight_decay_rate=0.5)  # fmt: skip
        worst = max(worst, max(
            float(np.max(np.abs(a.numpy() - np.asarray(b))))
            for a, b in zip(library.trainable_variables, params, strict=True)
        ))  # fmt: skip
        # Both continue from the library's weights: otherwise a last-bit difference in one step's sums
        # (1.2e-7 after step 2 at 2 layers) grows through the next steps' gradients, a difference of
        # training dynamics rather than of the update rule.
        params = [keras.ops.convert_to_tensor(v.numpy()) for v in library.trainable_variables]
        for variable, value in zip(ours.trainable_variables, params, strict=True):
            variable.assign(value)
    if largest_norm <= 1.0:
        raise SystemExit("pack: the check's gradients never reached the clip (global norm 1.0)")
    if worst > 1e-6:
        raise SystemExit(f"pack: this script's AdamW differs from the library's by {worst:.2e}")
    print(
        f"AdamW checked against the library's AdamWeightDecay: max |difference| {worst:.1e} "
        f"(largest gradient norm {largest_norm:.2f}, clipped to 1.0)",
        flush=True,
    )


# train (any backend's model code; the loop is JAX) -----------------------------------------------------


def pretrainer(config, seed):
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder, AlbertPretrainer

    keras.utils.set_random_seed(seed)
    return AlbertPretrainer(AlbertEncoder(AlbertConfig.from_dict(config)))


def adamw(params, grads, m, v, learning_rate, decayed, weight_decay_rate=0.01, clip=1.0):
    """The original's AdamWeightDecayOptimizer (albert_tf.training.optimizers.AdamWeightDecay) on lists of
    arrays: the gradient clipped to global norm `clip`, m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g²,
    w ← w − lr·(m / (√v + ε) + wd·w) with wd only where decayed. Returns (params, m, v)."""
    from keras import ops

    norm = ops.sqrt(sum(ops.sum(ops.square(g)) for g in grads))
    scale = clip / ops.maximum(norm, clip)
    new_params, new_m, new_v = [], [], []
    for w, g, m_, v_, decay in zip(params, grads, m, v, decayed, strict=True):
        g = g * scale
        m_ = 0.9 * m_ + 0.1 * g
        v_ = 0.999 * v_ + 0.001 * ops.square(g)
        update = m_ / (ops.sqrt(v_) + 1e-6)
        if decay:
            update = update + weight_decay_rate * w
        new_params.append(w - learning_rate * update)
        new_m.append(m_)
        new_v.append(v_)
    return new_params, new_m, new_v


def train(args):
    import jax
    import jax.numpy as jnp
    import keras

    from albert_tf.features import PRETRAINER_INPUTS
    from albert_tf.pretraining.losses import metrics, pretraining_loss, pretraining_sums, target_counts
    from albert_tf.training.schedules import WarmupPolynomialDecay

    if keras.backend.backend() != "jax":
        raise SystemExit("train: run it with KERAS_BACKEND=jax")
    if args.eval_every % CHUNK or args.steps % args.eval_every:
        raise SystemExit(f"train: --eval_every must be a multiple of {CHUNK} and divide --steps")
    data = load(args.data)
    config = json.loads(str(data["config"]))
    for setting in args.set:  # a wider or deeper model: the same variables, other shapes
        key, _, value = setting.partition("=")
        if key not in config:
            raise SystemExit(f"train: --set {setting}: the config has no entry {key!r} ({sorted(config)})")
        config[key] = type(config[key])(value)
    decayed = [bool(d) for d in data["decayed"]]
    # Every array on the device once; jitted functions take them as arguments (not as baked-in constants).
    on_device = {}
    for key in data:
        if key.split("_")[0] in OBJECTIVES:
            kind, split, name = key.split("_", 2)
            on_device.setdefault(f"{kind}_{split}", {})[name] = jnp.asarray(data[key])
    evaluated = {kind: len(data[f"{kind}_eval_label"]) // args.batch * args.batch for kind in OBJECTIVES}
    results = {
        "recipe": dict(
            steps=args.steps,
            warmup=args.warmup,
            batch=args.batch,
            learning_rate=args.learning_rate,
            eval_every=args.eval_every,
            seed=args.seed,
            optimizer="adamw (the original's)",
            config=config,
        ),
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d"),
        "device": str(jax.devices()[0].device_kind),
        "backend": f"keras {keras.__version__} on jax {jax.__version__}",
        "records": {key: len(part["label"]) for key, part in on_device.items()},
        # of the evaluated held-out records: the accuracy of always answering 1
        "label_1_share": {
            kind: round(float(np.mean(data[f"{kind}_eval_label"][: evaluated[kind]])), 4)
            for kind in OBJECTIVES
        },
        "models": {},
    }
    eval_batches = {
        kind: jnp.arange(evaluated[kind], dtype="int32").reshape(-1, args.batch) for kind in OBJECTIVES
    }

    for objective in args.objectives.split(","):
        model = pretrainer(config, args.seed)
        schedule = WarmupPolynomialDecay(args.learning_rate, args.steps, args.warmup)

        def outputs_of(trainable, non_trainable, batch, training, model=model):
            inputs = {name: batch[name] for name in PRETRAINER_INPUTS}
            return model.stateless_call(trainable, non_trainable, inputs, training=training)

        def loss_of(trainable, non_trainable, batch, outputs_of=outputs_of):
            outputs, non_trainable = outputs_of(trainable, non_trainable, batch, True)
            sums = pretraining_sums(batch, outputs)
            return pretraining_loss(sums, sums[1], args.batch), (non_trainable, sums)

        @jax.jit
        def train_chunk(state, records, indices, loss_of=loss_of, schedule=schedule):
            """CHUNK steps, one a row of indices int [CHUNK, batch]; returns the state and summed sums."""
            gradient = jax.value_and_grad(loss_of, has_aux=True)

            def one_step(state, index):
                trainable, non_trainable, m, v, step = state
                (_, (non_trainable, sums)), grads = gradient(trainable, non_trainable,
                                                             features(jnp, records, index))  # fmt: skip
                trainable, m, v = adamw(trainable, grads, m, v, schedule(step), decayed)
                return (trainable, non_trainable, m, v, step + 1), sums

            state, sums = jax.lax.scan(one_step, state, indices)
            return state, jnp.sum(sums, axis=0)

        @jax.jit
        def evaluate_kind(trainable, non_trainable, records, indices, outputs_of=outputs_of):
            """Summed metric sums and target counts over batches, one a row of indices int [N, batch]."""

            def one_batch(totals, index):
                batch = features(jnp, records, index)
                outputs, _ = outputs_of(trainable, non_trainable, batch, False)
                sums = pretraining_sums(batch, outputs)
                return (totals[0] + sums, totals[1] + target_counts(batch, config["vocab_size"])), None

            start = (jnp.zeros(7, "float32"), jnp.zeros((2, config["vocab_size"]), "float32"))
            return jax.lax.scan(one_batch, start, indices)[0]

        def evaluate(state):
            by_kind = {}
            for kind in OBJECTIVES:
                sums, counts = evaluate_kind(
                    state[0], state[1], on_device[f"{kind}_eval"], eval_batches[kind]
                )
                by_kind[kind] = {
                    k: round(v, 5) for k, v in metrics(np.asarray(sums), np.asarray(counts)).items()
                }
                by_kind[kind]["examples"] = int(eval_batches[kind].size)
            return by_kind

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]
        state = (trainable, non_trainable, [jnp.zeros_like(p) for p in trainable],
                 [jnp.zeros_like(p) for p in trainable], jnp.zeros((), "int32"))  # fmt: skip
        records = on_device[f"{objective}_train"]
        count = len(records["label"])
        rng = np.random.default_rng(args.seed)
        order = np.empty(0, np.int64)
        curve = [{"step": 0, **evaluate(state)}]
        began, train_seconds = time.perf_counter(), 0.0
        for done in range(0, args.steps, CHUNK):
            while len(order) < CHUNK * args.batch:  # a new permutation each epoch, no replacement within it
                order = np.concatenate([order, rng.permutation(count)])
            indices, order = (
                order[: CHUNK * args.batch].reshape(CHUNK, args.batch),
                order[CHUNK * args.batch :],
            )
            tick = time.perf_counter()
            state, sums = train_chunk(state, records, jnp.asarray(indices, "int32"))
            sums = np.asarray(sums)  # waits for the device
            if done:  # the first chunk compiles
                train_seconds += time.perf_counter() - tick
            else:
                first_chunk_seconds = time.perf_counter() - tick
            if (done + CHUNK) % args.eval_every:
                continue
            # "train": the metrics of the last CHUNK training batches; then the held-out records of each kind.
            entry = {"step": done + CHUNK, "train": {k: round(v, 5) for k, v in metrics(sums).items()},
                     **evaluate(state)}  # fmt: skip
            curve.append(entry)
            scores = "; ".join(
                f"on {kind}: MLM {entry[kind]['masked_lm_accuracy']:.4f} (most frequent "
                f"{entry[kind]['masked_lm_baseline_accuracy']:.4f}), "
                f"pairs {entry[kind]['sentence_order_accuracy']:.4f}"
                for kind in OBJECTIVES
            )
            print(
                f"{objective} model, step {entry['step']}: {scores}; {time.perf_counter() - began:.0f} s",
                flush=True,
            )
            results["models"][objective] = {
                "curve": curve,
                "first_chunk_seconds": round(first_chunk_seconds, 1),  # compilation included
                "step_ms": round(1e3 * train_seconds / max(done, 1), 2),  # the steps after the first chunk
                "seconds": round(time.perf_counter() - began, 1),
            }
            with open(args.output + ".tmp", "w", encoding="utf-8") as file:
                json.dump(results, file, indent=1)
            os.replace(args.output + ".tmp", args.output)


# plot --------------------------------------------------------------------------------------------------


def plot(args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = {"models": {}}
    for path in args.results.split(","):  # one file per model, or one with both
        with open(path, encoding="utf-8") as file:
            part = json.load(file)
        results.update({k: v for k, v in part.items() if k != "models"})
        results["models"].update(part["models"])
    figure, (mlm, order) = plt.subplots(1, 2, figsize=(11, 4))
    # A line's colour says the model's objective, its style the records'.
    colours = {"sop": "tab:blue", "nsp": "tab:orange"}
    for model, run in results["models"].items():
        steps = [entry["step"] for entry in run["curve"]]
        for kind, style in zip(OBJECTIVES, ("-", "--"), strict=True):
            label = f"{model.upper()}-trained, on {kind.upper()} records"
            if kind == model:
                mlm.plot(steps, [e[kind]["masked_lm_accuracy"] for e in run["curve"]], style,
                         color=colours[model], label=label)  # fmt: skip
            order.plot(steps, [e[kind]["sentence_order_accuracy"] for e in run["curve"]], style,
                       color=colours[model], label=label)  # fmt: skip
    first = results["models"][next(iter(results["models"]))]["curve"][0]
    mlm.axhline(
        first["sop"]["masked_lm_baseline_accuracy"], color="gray", linestyle=":", label="most frequent token"
    )
    order.axhline(0.65, color="gray", linestyle=":", label="0.65 (the study's SOP target)")
    label_shares = {kind: results.get("label_1_share", {}).get(kind) for kind in OBJECTIVES}
    if label_shares["nsp"]:
        order.axhline(label_shares["nsp"], color="gray", linestyle="--", linewidth=0.8,
                      label=f"NSP records' majority class ({label_shares['nsp']:.3f})")  # fmt: skip
    mlm.set(title="held-out masked-LM accuracy", xlabel="step")
    order.set(title="held-out sentence-pair accuracy", xlabel="step")
    for axes in (mlm, order):
        axes.legend(fontsize=7)
        axes.grid(alpha=0.3)
    config = results["recipe"]["config"]
    recipe = results["recipe"]
    shape = f"H{config['hidden_size']} E{config['embedding_size']} x{config['num_hidden_layers']} layers"
    figure.suptitle(
        f"ALBERT {shape}, batch {recipe['batch']}, AdamW {recipe['learning_rate']}; "
        f"{results['device']}, Keras' JAX backend",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(args.output, dpi=90)
    print(args.output)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="the study's records as compact arrays (TensorFlow)")
    p.add_argument("--work_dir", default="runs/study")
    p.add_argument("--output", default="runs/study/gpu_records.npz.xz")
    p.add_argument("--max_train_records", type=int, default=0, help="the first N of each kind (0: all)")
    t = commands.add_parser("train", help="pretrain and evaluate (KERAS_BACKEND=jax)")
    t.add_argument("--data", default="runs/study/gpu_records.npz.xz")
    t.add_argument("--output", required=True)
    t.add_argument("--objectives", default="sop,nsp")
    t.add_argument("--steps", type=int, default=4000)
    t.add_argument("--warmup", type=int, default=400)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--learning_rate", type=float, default=0.001)
    t.add_argument("--eval_every", type=int, default=500)
    t.add_argument("--seed", type=int, default=12345)
    t.add_argument("--set", action="append", default=[], help="KEY=VALUE: a model config entry overridden")
    g = commands.add_parser("plot", help="the curves of a train run's results")
    g.add_argument("--results", required=True, help="comma-separated results files")
    g.add_argument("--output", required=True)
    args = parser.parse_args()
    {"pack": pack, "train": train, "plot": plot}[args.command](args)


if __name__ == "__main__":
    main()
