"""Fine-tunes ALBERT for SQuAD v1.1 or v2.0 question answering.

    python -m albert_tf.run_squad --flagfile=squad-v1.1 \
        --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
        --model_dir=models/albert_base --output_dir=runs/squad

Writes to --output_dir a model directory with the best evaluation's span labeler (task_model.keras, ready for
`python -m albert_tf.export_saved_model --task=span`), eval_results.json (exact_match, f1) and, with
--do_predict, predictions.json (and null_odds.json for v2.0) in the official evaluation scripts' formats.
See albert_tf/finetuning/span.py.

Several values of --seed, --learning_rate, --train_batch_size or --train_step run a sweep: each setting once
per seed, in its own folder under --output_dir, summarized by its median (albert_tf/finetuning/sweep.py).
"""

import sys

from absl import app, flags

from albert_tf import shipped
from albert_tf.finetuning import command_line
from albert_tf.finetuning.settings import SquadSettings

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on (train-v1.1.json, train-v2.0.json).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to evaluate (with answers) and predict.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0: questions may have no answer.")
flags.DEFINE_integer("doc_stride", 128, "Tokens between the starts of a context's windows.")
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept (the rest is cut).")
flags.DEFINE_integer("n_best_size", 20, "Top start and end positions considered per window.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
flags.DEFINE_float(
    "null_score_threshold", 0.0, "v2.0: answer only when the answerability logit is at least this."
)
FLAGS.set_default("max_seq_length", 384)
FLAGS.set_default("learning_rate", 5e-5)


def main(argv):
    del argv
    return command_line.main(SquadSettings, "run_squad")


if __name__ == "__main__":
    app.run(main, argv=shipped.expand_recipe_names(sys.argv, "run_squad"))
