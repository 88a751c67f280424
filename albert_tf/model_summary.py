r"""Prints the parameter counts of an ALBERT (or BERT) model built from a config file.

    python -m albert_tf.model_summary --albert_config_file=albert_base
    python -m albert_tf.model_summary --albert_config_file=albert_base \
        --sharing=attention --embedding_size=256 --json

Counts come from the variables of a real model: embeddings (with the E→H projection), the distinct
transformer blocks, the pooler, the encoder as a whole (what the paper's Table 1 counts), and the
pretraining heads. `--json` prints one line; its `parameters` key is the encoder count.
"""

import json
import sys

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
    from albert_tf.models import AlbertEncoder, AlbertPretrainer, parameter_counts

    counts = parameter_counts(AlbertPretrainer(AlbertEncoder(config)))
    return {
        "parameters": counts["encoder"],
        **counts,
        "vocab_size": config.vocab_size,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "layout": _layout(config),
    }


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


def main(argv):
    del argv
    tf_startup.import_tensorflow_quietly()
    try:
        config = AlbertConfig.from_json_file(shipped.resolve("albert_config_file", FLAGS.albert_config_file))
        changes = {}
        if FLAGS.sharing is not None:
            changes.update(sharing=FLAGS.sharing, num_hidden_groups=1)
        if FLAGS.embedding_size is not None:
            changes.update(embedding_size=FLAGS.embedding_size)
        config = config.replace(**changes)
    except (OSError, ValueError) as error:
        sys.exit(f"model_summary: error: {error}")
    summary = summarize(config)
    if FLAGS.json:
        print(json.dumps({"albert_config_file": FLAGS.albert_config_file, **summary}))
    else:
        print(format_table(FLAGS.albert_config_file, summary))


if __name__ == "__main__":
    app.run(main)
