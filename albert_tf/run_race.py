"""Fine-tunes ALBERT on RACE (multiple-choice reading comprehension).

    python -m albert_tf.run_race --flagfile=race --data_dir=RACE \
        --model_dir=models/albert_base --output_dir=runs/race

The flags are run_classifier's (task_name defaults to race); --data_dir holds RACE's train/, dev/ and test/
folders, each with high/ and middle/. See albert_tf/finetuning/multiple_choice.py.
"""

import sys

from absl import app, flags

from albert_tf import run_classifier, shipped  # run_classifier defines the flags

FLAGS = flags.FLAGS
FLAGS.set_default("task_name", "race")


def main(argv):
    return run_classifier.main(argv, command="run_race")


if __name__ == "__main__":
    app.run(main, argv=shipped.expand_recipe_names(sys.argv, "run_race"))
