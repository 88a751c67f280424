"""Does pretraining learn? SOP vs NSP on a real corpus, and fine-tuning from pretraining vs random init.

    pip install -e ".[bench]" && python bench/pretraining_study.py   # under an hour on 2 cores
    python bench/pretraining_study.py --quick --work_dir=runs/study_quick    # the same stages in minutes

Stages, each skipped when its output exists (so a stopped study resumes; run_pretraining resumes itself):
  1. corpus     data/study/make_study_corpus.py: English prose of Debian documentation packages, split by
                page into pretrain / heldout / downstream text.
  2. tokenizer  python -m albert_tf.train_tokenizer on the pretraining text.
  3. records    python -m albert_tf.create_pretraining_data, from the same text and seed, with sentence-order
                pairs (SOP) and with BERT's random next sentences (NSP, --random_next_sentence); held-out
                records of both kinds from the held-out pages.
  4. pretrain   python -m albert_tf.run_pretraining, one tiny ALBERT per objective, the same recipe; the
                two runs side by side, each on half the cores.
  5. curves     every checkpoint of both models evaluated on the held-out records of *both* kinds (the
                paper's Table 5: a model trained on one objective, tested on the other), beside the
                most-frequent-token baseline of masked LM; on its own kind, what the run itself evaluated.
  6. downstream each pretrained model and the same model randomly initialized (one random encoder, so
                that every init varies by its fine-tuning seed only), fine-tuned on doc_topics
                (data/doc_topics) and on `doc_source` (which package's documentation a held-out sentence
                comes from, built from the downstream pages): a sweep of 3 seeds each
                (albert_tf/finetuning/sweep.py), reported as the median over the seeds with the failed runs
                counted; one evaluation after the last step, on the dev split, nothing chosen by it.
  7. continued  with --continue_steps=N only, outside the hour: both models trained N more steps from their
                last weights (the same recipe: a new warm-up and decay), evaluated on both kinds as in 5.
Outputs in --work_dir: results.json, curves.png, downstream.png (continued.png with 7), and the table printed
at the end.
"""

import argparse
import contextlib
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import time

from machine import describe  # bench/ is on sys.path: scripts run as python bench/NAME.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OBJECTIVES = ("sop", "nsp")
INITS = ("sop", "nsp", "random")
SEEDS = (1, 2, 3)

# One tiny recipe for both objectives, never tuned on a downstream dev split. The learning rate was chosen on
# held-out *pretraining* records (bench/recipe_probe.py): on these records at batch 64, 1e-3 reaches a higher
# held-out masked-LM accuracy than 5e-4 (bench/README.md); only the quick start's 1.5 MB sample at batch 32
# collapses to the most frequent token at 1e-3. The shape was chosen on the held-out SOP records too: the
# study's documents are short sections (about 11 sentences), and at 64 tokens the tiny model of
# albert_tiny (2 layers) steps 3.5x as fast as at 4 layers and 128 tokens, leaves chance on
# sentence order within 2,000 steps (4 layers at 128 stayed at chance for 4,000) and passes 3x the most
# frequent token on masked LM by 4,000 (bench/README.md, "Pretraining study").
FULL = dict(
    corpus_mb=None,  # all of it
    vocab_size=8000,
    num_hidden_layers=2,  # albert_tf/configs/albert_tiny.json's
    max_seq_length=64,
    max_predictions_per_seq=10,  # 15% of 64, rounded up, as the original's 20 for 128
    dupe_factor=2,
    train_batch_size=64,
    num_train_steps=10000,
    num_warmup_steps=400,
    eval_every_steps=1000,
    learning_rate=0.001,
    optimizer="adamw",
    # 100 batches of 64: 6,400 held-out pairs, a standard error of about 0.006 on sentence order near 0.65.
    max_eval_steps=100,
    finetune_steps=300,
)
# The study's earlier recipe (4 layers at 128 tokens; its runs are in bench/results/), kept so that
# --earlier_recipe reproduces those results.
EARLIER = dict(
    FULL,
    num_hidden_layers=4,
    max_seq_length=128,
    max_predictions_per_seq=20,
    num_train_steps=4000,
    eval_every_steps=500,
    max_eval_steps=50,
)
# The quick mode checks that every stage runs, not the findings: its models end at or just above the
# most-frequent-token baseline of masked LM and 60 fine-tuning steps leave every init at or near chance.
QUICK = dict(
    FULL,
    corpus_mb=6,
    num_train_steps=300,
    num_warmup_steps=30,
    eval_every_steps=100,
    max_eval_steps=10,
    finetune_steps=60,
)
DOC_SOURCE_PER_LABEL = {"train": 400, "dev": 100}


def log(text):
    print(f"study: {text}", file=sys.stderr, flush=True)


def run(command, log_file=None):
    """Runs a command from the repository root (output to log_file, else the terminal); raises on failure."""
    return run_together([command], [log_file])


def run_together(commands, log_files, environment=None):
    """Runs the commands at once from the repository root (each one's output to its log file, or the
    terminal where that is None), with `environment` beside the caller's; seconds until the last one ends.
    Raises, naming the command, when one fails (after all have ended)."""
    started = time.perf_counter()
    env = {**os.environ, **(environment or {})}
    with contextlib.ExitStack() as files:
        processes = []
        for command, log_file in zip(commands, log_files, strict=True):
            log(" ".join(command))
            out = files.enter_context(open(log_file, "a", encoding="utf-8")) if log_file else None
            stderr = subprocess.STDOUT if out else None
            processes.append(subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=stderr, env=env))
        codes = [process.wait() for process in processes]
    failed = [
        f"study: failed ({code}): {' '.join(command)}" + (f"; see {log_file}" if log_file else "")
        for code, command, log_file in zip(codes, commands, log_files, strict=True)
        if code
    ]
    if failed:
        raise SystemExit("\n".join(failed))
    return time.perf_counter() - started


# 1-3: text, tokenizer, records ------------------------------------------------------------------------


def build_corpus(work, recipe):
    corpus = os.path.join(work, "corpus")
    if not os.path.exists(os.path.join(corpus, "pretrain.txt")):
        run([sys.executable, "data/study/make_study_corpus.py", f"--output_dir={corpus}"])
    if recipe["corpus_mb"] is None:
        return corpus
    # --quick: the first corpus_mb megabytes of each split, cut at a document boundary.
    small = os.path.join(work, "corpus_small")
    if not os.path.exists(os.path.join(small, "pretrain.txt")):
        os.makedirs(small, exist_ok=True)
        for name in ("pretrain.txt", "heldout.txt"):
            limit = recipe["corpus_mb"] * 1_000_000 // (1 if name == "pretrain.txt" else 10)
            with open(os.path.join(corpus, name), encoding="utf-8") as source:
                text = source.read(limit)
            cut = text.rfind("\n\n")
            with open(os.path.join(small, name), "w", encoding="utf-8") as target:
                target.write(text[: cut + 1] if cut > 0 else text)
        for name in ("downstream.txt", "downstream_labels.tsv"):
            shutil.copy(os.path.join(corpus, name), os.path.join(small, name))
    return small


def train_tokenizer(work, corpus, recipe):
    prefix = os.path.join(work, "spm", "study")
    if not os.path.exists(prefix + ".model"):
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        run(
            [
                sys.executable,
                "-m",
                "albert_tf.train_tokenizer",
                f"--input={corpus}/pretrain.txt",
                f"--model_prefix={prefix}",
                f"--vocab_size={recipe['vocab_size']}",
                "--input_sentence_size=2000000",
            ]
        )
    return prefix + ".model"


def build_records(work, corpus, spm, recipe):
    """{objective: {"train": manifest, "eval": manifest}}; the builds that are missing run at once (each is
    one Python process)."""
    records, commands, log_files = {}, [], []
    for objective in OBJECTIVES:
        folder = os.path.join(work, "records", objective)
        records[objective] = {}
        for split, text, dupe, shards in (
            ("train", "pretrain.txt", recipe["dupe_factor"], 4),
            ("eval", "heldout.txt", 1, 1),
        ):
            manifest = os.path.join(folder, f"{split}.manifest.json")
            records[objective][split] = manifest
            if os.path.exists(manifest):  # a work dir from before recipe.json: its records' shapes must fit
                from albert_tf.pretraining.data.manifest import Manifest

                options = Manifest.load(manifest).settings["options"]
                built = options["max_seq_length"], options["max_predictions_per_seq"]
                wanted = recipe["max_seq_length"], recipe["max_predictions_per_seq"]
                if built != wanted:
                    raise SystemExit(
                        f"study: {manifest} holds records of seq {built[0]} with {built[1]} predictions, "
                        f"the recipe asks for seq {wanted[0]} with {wanted[1]}; give another --work_dir"
                    )
                continue
            os.makedirs(folder, exist_ok=True)
            commands.append(
                [
                    sys.executable,
                    "-m",
                    "albert_tf.create_pretraining_data",
                    f"--input_file={corpus}/{text}",
                    f"--spm_model_file={spm}",
                    f"--output_file={folder}/{split}@{shards}",
                    f"--max_seq_length={recipe['max_seq_length']}",
                    f"--max_predictions_per_seq={recipe['max_predictions_per_seq']}",
                    f"--dupe_factor={dupe}",
                    f"--random_next_sentence={objective == 'nsp'}",
                    "--random_seed=12345",
                ]
            )
            log_files.append(os.path.join(work, f"records_{objective}_{split}.log"))
    if commands:
        run_together(commands, log_files)
    return records


# 4-5: pretraining and its curves ------------------------------------------------------------------------


def write_config(work, recipe):
    """The tiny ALBERT (albert_tf/configs/albert_tiny.json) with the study's vocabulary and depth."""
    from albert_tf import shipped  # here: this process's TensorFlow keeps its own oneDNN default

    with open(shipped.config_file("albert_tiny"), encoding="utf-8") as file:
        config = json.load(file)
    config["vocab_size"] = recipe["vocab_size"]
    config["num_hidden_layers"] = recipe["num_hidden_layers"]
    path = os.path.join(work, "albert_config.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(config, file, indent=2, sort_keys=True)
    return path


def pretrain(work, config, spm, records, recipe, folder="pretrain", init_checkpoint=None):
    """{objective: work/FOLDER/OBJECTIVE}: the tiny model pretrained with the recipe once per objective, from
    random weights or from init_checkpoint[objective] (weights only: a new run, its own warm-up and decay,
    steps counted from 0).

    The runs go at once, each on half the cores (TF_NUM_INTRAOP_THREADS): the tiny model's matrices are 128
    wide, too small to keep two cores busy in one step, so two runs side by side finish both sooner than one
    after the other (bench/README.md, "Pretraining study", has the rates).
    """
    outputs = {o: os.path.join(work, folder, o) for o in OBJECTIVES}
    todo = [o for o in OBJECTIVES if not os.path.exists(os.path.join(outputs[o], "eval_results.json"))]
    r = recipe
    commands = []
    for objective in todo:
        os.makedirs(outputs[objective], exist_ok=True)
        start = [f"--init_checkpoint={init_checkpoint[objective]}"] if init_checkpoint else []
        commands.append(
            [
                sys.executable,
                "-m",
                "albert_tf.run_pretraining",
                f"--albert_config_file={config}",
                f"--input_file={records[objective]['train']}",
                f"--eval_input_file={records[objective]['eval']}",
                f"--spm_model_file={spm}",
                f"--output_dir={outputs[objective]}",
                f"--max_seq_length={r['max_seq_length']}",
                f"--max_predictions_per_seq={r['max_predictions_per_seq']}",
                f"--train_batch_size={r['train_batch_size']}",
                "--eval_batch_size=64",
                f"--optimizer={r['optimizer']}",
                f"--learning_rate={r['learning_rate']}",
                f"--num_train_steps={r['num_train_steps']}",
                f"--num_warmup_steps={r['num_warmup_steps']}",
                f"--eval_every_steps={r['eval_every_steps']}",
                f"--save_checkpoints_steps={r['eval_every_steps']}",
                f"--keep_checkpoint_max={r['num_train_steps'] // r['eval_every_steps'] + 1}",
                f"--max_eval_steps={r['max_eval_steps']}",
                "--log_every_steps=100",
                "--steps_per_loop=100",
                "--jit_compile",
                *start,
            ]
        )
    if commands:
        threads = max(1, (os.cpu_count() or 1) // len(commands))
        seconds = run_together(
            commands,
            [os.path.join(work, f"{folder}_{objective}.log") for objective in todo],
            {"TF_NUM_INTRAOP_THREADS": str(threads)},
        )
        log(f"{folder}: {' and '.join(todo)} side by side in {seconds / 60:.1f} min")
    return outputs


def curves(work, records, recipe, folder="pretrain", first_step=0):
    """{model objective: {eval objective: [evaluation results by step]}}: every checkpoint on both kinds.

    A model on its own kind of records is what its run already evaluated at each checkpoint's step
    (eval_history.jsonl: the same records, batches and weights); only the other kind, and step 0, are
    evaluated here. Runs continued from the first ones (first_step > 0, the steps before them) have no step
    0 of their own: their start is the first runs' last checkpoint, and their steps count on from it.
    """
    path = os.path.join(work, "curves.json" if folder == "pretrain" else f"{folder}_curves.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    import tensorflow as tf

    from albert_tf.pretraining.run import build
    from albert_tf.pretraining.settings import PretrainingSettings

    results = {}
    for model in OBJECTIVES:
        output = os.path.join(work, folder, model)
        prefixes = tf.train.get_checkpoint_state(
            os.path.join(output, "checkpoints")
        ).all_model_checkpoint_paths
        steps = [int(prefix.rsplit("-", 1)[1]) for prefix in prefixes]
        own = _history_by_step(output)
        results[model] = {}
        for kind in OBJECTIVES:
            settings = PretrainingSettings(
                albert_config_file=os.path.join(output, "albert_config.json"),
                input_file=records[kind]["eval"],
                eval_input_file=records[kind]["eval"],
                output_dir=os.path.join(work, f"{folder}_evaluations", model, kind),
                init_checkpoint=output,
                do_train=False,
                max_seq_length=recipe["max_seq_length"],
                max_predictions_per_seq=recipe["max_predictions_per_seq"],
                eval_batch_size=64,
                max_eval_steps=recipe["max_eval_steps"],
                jit_compile=True,
            )
            run_ = build(settings)  # the evaluator is traced once; each checkpoint is restored into it
            history = []
            if not first_step:
                history.append({**_random_init_evaluation(run_, settings), "global_step": 0})
            for prefix, step in zip(prefixes, steps, strict=True):
                if kind == model and step in own:
                    history.append({**own[step], "global_step": first_step + step})
                else:
                    tf.train.Checkpoint(model=run_.model).restore(prefix).expect_partial()
                    history.append({**run_.task.evaluator.evaluate(), "global_step": first_step + step})
                log(f"{model} model, step {first_step + step}, on {kind}: " + _summary(history[-1]))
            results[model][kind] = history
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)
    os.replace(path + ".tmp", path)
    return results


def _history_by_step(output):
    """{global step: evaluation} from a run's eval_history.jsonl; a resumed run's later entry wins."""
    from albert_tf.training.engine import EVAL_HISTORY_FILE

    with open(os.path.join(output, EVAL_HISTORY_FILE), encoding="utf-8") as file:
        return {entry["global_step"]: entry for entry in map(json.loads, file)}


def _random_init_evaluation(run_, settings):
    """Step 0 is the model before training: the same initialization as the run (its seed)."""
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder, AlbertPretrainer

    keras.utils.set_random_seed(settings.seed)
    fresh = AlbertPretrainer(AlbertEncoder(AlbertConfig.from_json_file(settings.albert_config_file)))
    run_.model.set_weights(fresh.get_weights())
    return run_.task.evaluator.evaluate()


def _summary(result):
    return (
        f"mlm {result['masked_lm_accuracy']:.3f} (baseline {result['masked_lm_baseline_accuracy']:.3f}, "
        f"without context {result['masked_lm_context_free_accuracy']:.3f}), "
        f"order {result['sentence_order_accuracy']:.3f}"
    )


# 6: downstream -------------------------------------------------------------------------------------------


def doc_source_task(work, corpus):
    """Which package's documentation a sentence comes from: sentences of the downstream pages (never seen in
    pretraining), balanced over the packages with enough text, train and dev from different documents."""
    folder = os.path.join(work, "tasks", "doc_source")
    if os.path.exists(os.path.join(folder, "dev.csv")):
        return folder
    with open(os.path.join(corpus, "downstream_labels.tsv"), encoding="utf-8", newline="") as file:
        labels = [row["package"] for row in csv.DictReader(file, delimiter="\t")]
    with open(os.path.join(corpus, "downstream.txt"), encoding="utf-8") as file:
        documents = [block.split("\n") for block in file.read().split("\n\n") if block.strip()]
    if len(documents) != len(labels):
        raise SystemExit(f"study: {len(documents)} downstream documents but {len(labels)} labels")
    rng = random.Random(12345)
    by_label = {}
    for document, label in zip(documents, labels, strict=True):
        by_label.setdefault(label, []).append([s for s in document if 5 <= len(s.split()) <= 60])
    rows = {"train": [], "dev": []}
    need = DOC_SOURCE_PER_LABEL["train"] + DOC_SOURCE_PER_LABEL["dev"]
    for label in sorted(by_label):
        docs = by_label[label]
        if sum(len(d) for d in docs) < 2 * need:
            continue  # too little text for a balanced label
        rng.shuffle(docs)
        # Documents go whole to dev until it is full, then to train: no document is in both.
        dev = [s for d in docs[: _documents_for(docs, DOC_SOURCE_PER_LABEL["dev"])] for s in d]
        train = [s for d in docs[_documents_for(docs, DOC_SOURCE_PER_LABEL["dev"]) :] for s in d]
        rows["dev"] += [(s, label) for s in rng.sample(dev, DOC_SOURCE_PER_LABEL["dev"])]
        rows["train"] += [(s, label) for s in rng.sample(train, DOC_SOURCE_PER_LABEL["train"])]
    os.makedirs(folder, exist_ok=True)
    for split, split_rows in rows.items():
        rng.shuffle(split_rows)
        with open(os.path.join(folder, f"{split}.csv"), "w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(split_rows)
    return folder


def _documents_for(docs, sentences):
    """How many of the first documents hold at least `sentences` sentences."""
    total = 0
    for index, document in enumerate(docs):
        total += len(document)
        if total >= 2 * sentences:  # twice: dev samples from a pool, not the whole pool
            return index + 1
    return len(docs)


def downstream(work, config, spm, tasks, recipe):
    """{task: {init: the sweep's summary}}: each init fine-tuned with SEEDS as one sweep, which goes on
    where it stopped when the study is started again."""
    import keras

    from albert_tf import model_files
    from albert_tf.config import AlbertConfig
    from albert_tf.finetuning import sweep, task_data
    from albert_tf.finetuning.settings import ClassifierSettings
    from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir

    random_init = os.path.join(work, "random_init")
    if not model_files.is_model_dir(random_init):
        keras.utils.set_random_seed(SEEDS[0])
        fresh = AlbertPretrainer(AlbertEncoder(AlbertConfig.from_json_file(config)))
        model_dir.save_model_dir(fresh, random_init, spm_model=spm)
    scores = {}
    for task, folder in tasks.items():
        for init in INITS:
            settings = ClassifierSettings(
                task_name="text",
                train_file=os.path.join(folder, "train.csv"),
                dev_file=os.path.join(folder, "dev.csv"),
                model_dir=random_init if init == "random" else os.path.join(work, "pretrain", init),
                output_dir=os.path.join(work, "finetune", task, init),
                max_seq_length=64,
                learning_rate=2e-4,
                train_step=recipe["finetune_steps"],
                warmup_step=recipe["finetune_steps"] // 10,
                save_checkpoints_steps=recipe["finetune_steps"],
                seed=SEEDS[0],
                jit_compile=True,
            )
            grid = {**{name: (getattr(settings, name),) for name in sweep.GRID}, "seed": SEEDS}
            data = task_data.read(settings, "run_classifier")
            summary = sweep.run(settings, grid, data, "run_classifier")
            scores.setdefault(task, {})[init] = summary
            figures = summary["settings"][0]["figures"]["accuracy"]
            log(f"{task}/{init}: dev accuracy median {figures['median']:.3f} over {len(SEEDS)} seeds")
    return scores


def _accuracies(summary):
    """The dev accuracy of each seed of a one-setting sweep's summary, in seed order."""
    return [run["accuracy"] for run in summary["settings"][0]["runs"]]


# Report --------------------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(path, curve_results, restart=None):
    """Held-out masked-LM accuracy and sentence-pair accuracy (each model on both kinds) by step; a dotted
    line at `restart`, the step where continued runs took over."""
    plt = _pyplot()
    figure, (mlm, order) = plt.subplots(1, 2, figsize=(11, 4))
    for model, style in zip(OBJECTIVES, ("-", "--"), strict=True):
        own = curve_results[model][model]
        steps = [entry["global_step"] for entry in own]
        mlm.plot(steps, [e["masked_lm_accuracy"] for e in own], style, label=f"{model.upper()}-trained")
        for kind, marker in zip(OBJECTIVES, ("o", "s"), strict=True):
            entries = curve_results[model][kind]
            order.plot(
                [e["global_step"] for e in entries],
                [e["sentence_order_accuracy"] for e in entries],
                style,
                marker=marker,
                markersize=3,
                label=f"{model.upper()}-trained, tested on {kind.upper()}",
            )
    baseline = curve_results["sop"]["sop"][-1]["masked_lm_baseline_accuracy"]
    mlm.axhline(baseline, color="grey", linewidth=0.8, label="most frequent token")
    context_free = curve_results["sop"]["sop"][-1]["masked_lm_context_free_accuracy"]
    mlm.axhline(context_free, color="grey", linestyle=":", linewidth=0.8, label="without context")
    order.axhline(0.5, color="grey", linewidth=0.8, label="chance")
    if restart:
        for axis in (mlm, order):
            axis.axvline(restart, color="black", linestyle=":", linewidth=0.8, label="continued from here")
    mlm.set(title="Held-out masked-LM accuracy", xlabel="step")
    order.set(title="Held-out sentence-pair accuracy", xlabel="step")
    mlm.legend(fontsize=8)
    order.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_downstream(path, scores):
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(scores), figsize=(5 * len(scores), 3.6))
    for axis, (task, by_init) in zip(axes, scores.items(), strict=True):
        for x, init in enumerate(INITS):
            values = _accuracies(by_init[init])
            axis.bar(
                x, by_init[init]["settings"][0]["figures"]["accuracy"]["median"], color="#9ab", width=0.6
            )
            axis.plot([x] * len(values), values, "k.", markersize=6)
        axis.set_xticks(
            range(len(INITS)), [f"{i.upper()}-pretrained" if i != "random" else "random init" for i in INITS]
        )
        axis.set(title=f"{task}: dev accuracy, {len(SEEDS)} seeds (bar: median)", ylim=(0, 1))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def curves_table(curve_results):
    """Markdown: each model's last evaluation, on both kinds of records."""
    lines = [
        "| model | held-out MLM acc | baseline | ratio | without context | tested on SOP | tested on NSP |",
        "|---|---|---|---|---|---|---|",
    ]
    for model in OBJECTIVES:
        own = curve_results[model][model][-1]
        mlm, base = own["masked_lm_accuracy"], own["masked_lm_baseline_accuracy"]
        sop, nsp = (curve_results[model][kind][-1]["sentence_order_accuracy"] for kind in OBJECTIVES)
        free = own["masked_lm_context_free_accuracy"]
        cells = (f"{mlm:.3f}", f"{base:.3f}", f"{mlm / base:.2f}x", f"{free:.3f}", f"{sop:.3f}", f"{nsp:.3f}")
        lines.append(f"| {model.upper()}-trained | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def downstream_table(scores):
    """Markdown: dev accuracy per task and init, the median over the seeds with their range, and the runs
    that failed (at or below the constant prediction, or stopped: albert_tf/finetuning/sweep_summary.py)."""
    seeds = len(SEEDS)
    lines = [
        "| task | " + " | ".join(f"{i} (median [min, max], {seeds} seeds)" for i in INITS) + " |",
        "|---|---|---|---|",
    ]
    for task, by_init in scores.items():
        cells = []
        for init in INITS:
            setting = by_init[init]["settings"][0]
            figures = setting["figures"]["accuracy"]
            failed = f", {setting['failed']} failed" if setting["failed"] else ""
            cells.append(f"{figures['median']:.3f} [{figures['min']:.3f}, {figures['max']:.3f}]{failed}")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def check_recipe(work, recipe):
    """Stages skip what exists, so a work dir serves one recipe: the first run records it (recipe.json) and a
    run with another recipe stops before mixing its outputs with the other's. (A work dir from before
    recipe.json is checked by its records' shapes: build_records.)"""
    path = os.path.join(work, "recipe.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            before = json.load(file)
        changed = sorted(key for key in recipe.keys() | before.keys() if recipe.get(key) != before.get(key))
        if changed:
            raise SystemExit(
                f"study: {work} holds a study of another recipe ({', '.join(changed)} differ: {path}); "
                "give another --work_dir"
            )


def record_recipe(work, recipe):
    """recipe.json, once the records are known to be the recipe's (check_recipe reads it)."""
    path = os.path.join(work, "recipe.json")
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(recipe, file, indent=1)
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work_dir", default=os.path.join(ROOT, "runs", "study"))
    parser.add_argument("--quick", action="store_true", help="A small corpus and few steps: minutes.")
    parser.add_argument(
        "--earlier_recipe",
        action="store_true",
        help="The earlier recipe (4 layers, 128 tokens, 4,000 steps), to reproduce its results "
        "(bench/results/). Use its own --work_dir: the records differ.",
    )
    parser.add_argument(
        "--continue_steps",
        type=int,
        default=0,
        help="After the study, train both models this many more steps (a new warm-up and decay from their "
        "last weights) and evaluate them on both kinds again: how far sentence order gets with more steps. "
        "Outside the study's hour: 4000 costs about as much as the first pretraining.",
    )
    args = parser.parse_args()
    if args.quick and args.earlier_recipe:
        raise SystemExit("study: --quick and --earlier_recipe: choose one")
    recipe = QUICK if args.quick else EARLIER if args.earlier_recipe else FULL
    try:  # the plots come last: say so now rather than after an hour
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit('study: the plots need matplotlib: pip install -e ".[bench]"') from None
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    check_recipe(work, recipe)
    started = time.perf_counter()
    stage_seconds = {}  # this invocation's time per stage (0 where a stage's output existed)

    def timed(stage, function, *args):
        begun = time.perf_counter()
        value = function(*args)
        stage_seconds[stage] = round(time.perf_counter() - begun, 1)
        return value

    log(f"machine: {describe()}")
    corpus = timed("corpus", build_corpus, work, recipe)
    spm = timed("tokenizer", train_tokenizer, work, corpus, recipe)
    records = timed("records", build_records, work, corpus, spm, recipe)
    record_recipe(work, recipe)
    config = write_config(work, recipe)
    timed("pretrain", pretrain, work, config, spm, records, recipe)
    curve_results = timed("curves", curves, work, records, recipe)
    tasks = {
        "doc_topics": os.path.join(ROOT, "data", "doc_topics"),
        "doc_source": doc_source_task(work, corpus),
    }
    scores = timed("downstream", downstream, work, config, spm, tasks, recipe)
    plot_curves(os.path.join(work, "curves.png"), curve_results)
    plot_downstream(os.path.join(work, "downstream.png"), scores)
    text = curves_table(curve_results) + "\n\n" + downstream_table(scores)
    results = {
        "recipe": recipe,
        "machine": describe(),
        "date": time.strftime("%Y-%m-%d"),
        "curves": curve_results,
        "downstream": scores,
        "stage_seconds_this_invocation": stage_seconds,
    }
    if args.continue_steps:
        continued = dict(recipe, num_train_steps=args.continue_steps)
        starts = {objective: os.path.join(work, "pretrain", objective) for objective in OBJECTIVES}
        timed("continued", pretrain, work, config, spm, records, continued, "continued", starts)
        first_step = recipe["num_train_steps"]
        results["continued"] = timed("continued_curves", curves, work, records, continued, "continued",
                                     first_step)  # fmt: skip
        joined = {
            model: {
                kind: curve_results[model][kind] + results["continued"][model][kind] for kind in OBJECTIVES
            }
            for model in OBJECTIVES
        }
        plot_curves(os.path.join(work, "continued.png"), joined, restart=first_step)
        text += f"\n\nAfter {first_step + args.continue_steps} steps:\n" + curves_table(results["continued"])
    results["seconds_this_invocation"] = time.perf_counter() - started
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)
    print(text)
    minutes = (time.perf_counter() - started) / 60
    log(f"done in {minutes:.1f} min; {work}/results.json, curves.png, downstream.png")


if __name__ == "__main__":
    main()
