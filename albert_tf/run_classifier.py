"""Fine-tunes ALBERT for sequence classification or regression: GLUE tasks or a CSV/JSONL dataset.

    python -m albert_tf.run_classifier --flagfile=configs/finetune/sst-2.flags --data_dir=glue_data/SST-2 \
        --model_dir=runs/tiny --output_dir=runs/sst-2

Writes to --output_dir a model directory with the best evaluation's classifier (task_model.keras, ready for
`python -m albert_tf.export_saved_model --task=classifier`), eval_results.json and, with --do_predict,
test_results.tsv. See albert_tf/training/classifier_finetuning.py.
"""

import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "task_name", None, "A GLUE task (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) or text."
)
flags.DEFINE_string("data_dir", None, "GLUE: the task's folder of TSV files.")
flags.DEFINE_string("train_file", None, "text: training CSV (header) or JSONL with text[, label] fields.")
flags.DEFINE_string("dev_file", None, "text: evaluation file.")
flags.DEFINE_string("test_file", None, "text: prediction file.")
flags.DEFINE_list("labels", None, "text: the label set in index order (default: sorted labels of the data).")
flags.DEFINE_string("model_dir", None, "The pretrained model directory to start from.")
flags.DEFINE_string("output_dir", None, "Where the fine-tuned model directory and results go.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example; longer pairs are truncated.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Evaluation batch size.")
flags.DEFINE_float("learning_rate", 2e-5, "Peak learning rate (AdamW, warmup then linear decay).")
flags.DEFINE_integer("train_step", 1000, "Training steps.")
flags.DEFINE_integer("warmup_step", 100, "Warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 200, "Steps between evaluations; the best one is kept.")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the classifier.")
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", True, "Evaluate on the dev set and write eval_results.json.")
flags.DEFINE_bool("do_predict", False, "Predict the test set into test_results.tsv.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"], "Compute dtype.")
flags.DEFINE_bool("jit_compile", False, "Compile training steps with XLA.")
flags.DEFINE_integer("seed", 12345, "Seed of initialization, shuffling and dropout.")
flags.mark_flags_as_required(["task_name", "model_dir", "output_dir"])


def main(argv, run=None):
    """Parses the flags into settings and runs `run` (default: classifier fine-tuning)."""
    del argv
    from albert_tf.data.glue import DataError
    from albert_tf.training import classifier_finetuning

    run = run or classifier_finetuning.run

    fields = classifier_finetuning.ClassifierSettings.__dataclass_fields__
    values = {name: FLAGS[name].value for name in fields}
    values["labels"] = tuple(values["labels"]) if values["labels"] else None
    try:
        run(classifier_finetuning.ClassifierSettings(**values))
    except (DataError, ValueError, FileNotFoundError) as error:
        print(f"{sys.argv[0].rsplit('/', 1)[-1].removesuffix('.py')}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    app.run(main)
