"""Fine-tunes ALBERT for sequence classification or regression: GLUE tasks or a CSV/JSONL dataset.

    python -m albert_tf.run_classifier --flagfile=sst-2 --data_dir=glue_data/SST-2 \
        --model_dir=runs/tiny --output_dir=runs/sst-2

Writes to --output_dir a model directory with the best evaluation's classifier (task_model.keras, ready for
`python -m albert_tf.export_saved_model --task=classifier`), eval_results.json and, with --do_predict,
test_results.tsv. See albert_tf/finetuning/classifier.py.

Several values of --seed, --learning_rate, --train_batch_size or --train_step run a sweep: each setting once
per seed, in its own folder under --output_dir, summarized by its median (albert_tf/finetuning/sweep.py).
"""

import sys

from absl import app, flags

from albert_tf import shipped
from albert_tf.finetuning import command_line
from albert_tf.finetuning.settings import ClassifierSettings

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "task_name", None, "A GLUE task (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) or text."
)
flags.DEFINE_string("data_dir", None, "GLUE: the task's folder of TSV files.")
flags.DEFINE_string("train_file", None, "text: training CSV (header) or JSONL with text[, label] fields.")
flags.DEFINE_string("dev_file", None, "text: evaluation file.")
flags.DEFINE_string("test_file", None, "text: prediction file.")
flags.DEFINE_list(
    "labels", None,
    "text: the label set in index order (default: a fine-tuned --model_dir's, else the sorted labels of "
    "the data).",
)  # fmt: skip
flags.mark_flag_as_required("task_name")


def main(argv, command="run_classifier"):
    del argv
    return command_line.main(
        ClassifierSettings, command, convert={"labels": lambda labels: tuple(labels) if labels else None}
    )


if __name__ == "__main__":
    app.run(main, argv=shipped.expand_recipe_names(sys.argv, "run_classifier"))
