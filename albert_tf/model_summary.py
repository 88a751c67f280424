r"""Prints the parameter counts of an ALBERT (or BERT) model built from a config file, and with --memory
what training and serving it will take before a run.

    python -m albert_tf.model_summary --albert_config_file=albert_base
    python -m albert_tf.model_summary --albert_config_file=albert_base \
        --sharing=attention --embedding_size=256 --json
    python -m albert_tf.model_summary --albert_config_file=albert_large --memory \
        --batch_size=8 --max_seq_length=512 --remat --memory_gb=16

Counts come from the variables of a real model: embeddings (with the E→H projection), the distinct
transformer blocks, the pooler, the encoder as a whole (what the paper's Table 1 counts), and the
pretraining heads. `--json` prints one line; its `parameters` key is the encoder count.

`--memory` adds the estimate of `albert_tf.models.memory_estimate`: parameters, optimizer state, gradients,
activations and the peak of a pretraining step, the weights, activations and peak of a served batch, on the
device that runs them (a CPU process adds TensorFlow's runtime, shown apart), and with --memory_gb the
largest batch that fits.
"""

import json
import sys
from concurrent import futures

from absl import app, flags

from albert_tf import shipped, tf_startup
from albert_tf.config import SHARING_STRATEGIES, AlbertConfig

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "albert_config_file",
    None,
    "An albert_config.json (ours or a released one), or a shipped config's name: "
    + ", ".join(shipped.config_names())
    + ".",
)
flags.DEFINE_enum(
    "sharing",
    None,
    list(SHARING_STRATEGIES),
    "Override the config's layout with a sharing strategy of the paper (Table 4).",
)
flags.DEFINE_integer("embedding_size", None, "Override E, the factorized embedding width (Table 3).")
flags.DEFINE_bool("json", False, "Print one JSON line instead of a table.")
flags.DEFINE_bool("memory", False, "Also estimate the memory of training and serving (the flags below).")
flags.DEFINE_integer("batch_size", 8, "--memory: sequences in a training step or a served batch.")
flags.DEFINE_integer("max_seq_length", 512, "--memory: tokens a sequence.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "--memory: masked positions a sequence.")
# Literal choices: importing albert_tf.models here would start TensorFlow before main() silences its notices.
flags.DEFINE_enum("precision", "float32", ["float32", "bfloat16", "float16"], "--memory: compute dtype.")
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "--memory: the optimizer.")
flags.DEFINE_bool("remat", False, "--memory: training with --remat (each layer recomputed).")
flags.DEFINE_float(
    "memory_gb", None, "--memory: the device's memory in GB (10^9 bytes); prints the largest batch that fits."
)
flags.DEFINE_enum(
    "device", "cpu", ["cpu", "accelerator"],
    "--memory: where the step runs; on a CPU the process's runtime counts against --memory_gb.",
)  # fmt: skip
flags.mark_flag_as_required("albert_config_file")


def _layout(config: AlbertConfig) -> str:
    if config.sharing is not None:
        return f"sharing={config.sharing}, {config.inner_group_num} inner block(s) per layer"
    return (
        f"{config.num_hidden_groups} group(s) x {config.inner_group_num} inner block(s) "
        f"over {config.num_hidden_layers} layers"
    )


def summarize(config: AlbertConfig) -> dict:
    """Builds the pretrainer for `config` and returns its parameter counts with the model's shape."""
    counts = _counts_of_weights_without_values(config)
    return {
        "parameters": counts["encoder"],
        **counts,
        "vocab_size": config.vocab_size,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "layout": _layout(config),
    }


def _counts_of_weights_without_values(config: AlbertConfig) -> dict:
    """parameter_counts of the pretrainer for `config`, its weights created with their shapes but no values:
    drawing the initial values takes seconds for the larger models (334 M for bert_large) and a count needs
    none. Keras leaves a weight made in a StatelessScope uninitialized, and remembers it in thread-local state
    to initialize when a scope is next left; made in a thread of their own, the weights go with the thread.
    """
    import keras

    from albert_tf.models import AlbertEncoder, AlbertPretrainer, parameter_counts

    def count():
        with keras.StatelessScope(initialize_variables=False):
            return parameter_counts(AlbertPretrainer(AlbertEncoder(config)))

    with futures.ThreadPoolExecutor(max_workers=1) as thread:  # its thread ends when the block does
        return thread.submit(count).result()  # an error in the build is raised here


def format_table(name: str, summary: dict) -> str:
    rows = [
        ("embeddings", summary["embeddings"]),
        ("  of which E->H projection", summary["embedding_projection"]),
        ("transformer blocks (distinct)", summary["transformer_blocks"]),
        ("pooler", summary["pooler"]),
        ("encoder", summary["encoder"]),
        ("masked-LM head (tied table not counted)", summary["masked_lm_head"]),
        ("sentence-order head", summary["sentence_order_head"]),
        ("total with pretraining heads", summary["total"]),
    ]
    lines = [
        f"{name}: V={summary['vocab_size']} E={summary['embedding_size']} H={summary['hidden_size']} "
        f"L={summary['num_hidden_layers']}; {summary['layout']}"
    ]
    for label, count in rows:
        lines.append(f"  {label:<42}{count:>14,}  {count / 1e6:8.2f}M")
    return "\n".join(lines)


def memory_summary(config: AlbertConfig, counts: dict, settings, memory_gb=None, on_cpu=True) -> dict:
    """The estimate in bytes, the CPU runtime when on_cpu, and the largest batch for memory_gb."""
    from albert_tf.models import memory_estimate

    summary = dict(memory_estimate.estimate(config, counts, settings))
    runtime = memory_estimate.CPU_RUNTIME_BYTES if on_cpu else 0
    summary["runtime"] = runtime
    if memory_gb is not None:
        room = int(memory_gb * 1e9) - runtime
        summary["largest_batch"] = memory_estimate.largest_batch(config, counts, settings, room)
    return summary


def format_memory(settings, summary: dict) -> str:
    s = settings
    remat = ", remat" if s.remat else ""
    shape = f"batch {s.batch_size} x {s.max_seq_length} tokens"
    lines = [f"memory estimate: {shape}, {s.precision}, {s.optimizer}{remat}"]
    rows = [
        ("training: parameters", summary["parameters"]),
        ("training: optimizer state", summary["optimizer_state"]),
        ("training: gradients", summary["gradients"]),
        ("training: activations", summary["activations"]),
        ("training: peak", summary["training_peak"]),
        ("serving: weights", summary["serving_weights"]),
        ("serving: activations of a batch", summary["serving_activations"]),
        ("serving: peak", summary["serving_peak"]),
    ]
    if summary["runtime"]:
        rows.append(("a CPU process adds TensorFlow's runtime", summary["runtime"]))
    for label, value in rows:
        lines.append(f"  {label:<42}{value / 1e9:10.2f} GB")
    if "largest_batch" in summary:
        lines.append(f"  {'largest training batch that fits':<42}{summary['largest_batch']:>10}")
    return "\n".join(lines)


def main(argv):
    del argv
    try:  # before TensorFlow starts: a mistyped config is named at once
        config = AlbertConfig.from_json_file(shipped.resolve("albert_config_file", FLAGS.albert_config_file))
        changes = {}
        if FLAGS.sharing is not None:
            changes.update(sharing=FLAGS.sharing, num_hidden_groups=1)
        if FLAGS.embedding_size is not None:
            changes.update(embedding_size=FLAGS.embedding_size)
        config = config.replace(**changes)
    except (OSError, ValueError) as error:
        sys.exit(f"model_summary: error: {error}")
    tf_startup.import_tensorflow_quietly()
    summary = summarize(config)
    memory = None
    if FLAGS.memory:
        from albert_tf.models import memory_estimate

        settings = memory_estimate.MemorySettings(
            batch_size=FLAGS.batch_size, max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq, precision=FLAGS.precision,
            optimizer=FLAGS.optimizer, remat=FLAGS.remat,
        )  # fmt: skip
        try:  # the estimate checks the settings, naming the flag of the first that cannot work
            memory = memory_summary(config, summary, settings, FLAGS.memory_gb, on_cpu=FLAGS.device == "cpu")
        except ValueError as error:
            sys.exit(f"model_summary: error: --{error}")
    if FLAGS.json:
        extra = {"memory": memory} if memory else {}
        print(json.dumps({"albert_config_file": FLAGS.albert_config_file, **summary, **extra}))
    else:
        print(format_table(FLAGS.albert_config_file, summary))
        if memory:
            print(format_memory(settings, memory))


if __name__ == "__main__":
    app.run(main)
