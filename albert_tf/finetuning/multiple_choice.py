"""Fine-tuning on RACE: `AlbertMultipleChoice` over the four options, the classifier's task otherwise.

`run(settings)` does what `python -m albert_tf.run_race` does; settings are `ClassifierSettings` with
task_name "race" and data_dir the RACE folder (train/dev/test, each with high/ and middle/). The output
directory gets the best evaluation's model (task_model.keras), eval_results.json (accuracy) and, with
do_predict, test_results.tsv (the predicted letters).
"""

import math

from albert_tf.finetuning import classifier, race, task, task_data
from albert_tf.models import AlbertMultipleChoice


class RaceTask(classifier.ClassifierTask):
    """The classifier run with RACE's reader, pipeline and multiple-choice model."""

    name = "run_race"

    @property
    def chance_loss(self):
        return math.log(len(race.LETTERS))

    def _build_model(self):
        s = self.settings
        return AlbertMultipleChoice.from_model_dir(
            s.model_dir, num_choices=len(race.LETTERS), dropout_rate=s.dropout_rate,
            max_seq_length=s.max_seq_length, text_pair=True,
        )  # fmt: skip

    def _dataset(self, split, is_training=False, start=None):
        s = self.settings
        batch = s.train_batch_size if is_training else s.eval_batch_size
        return race.multiple_choice_dataset(
            self.splits[split], self.spm, s.max_seq_length, batch, is_training=is_training, seed=s.seed,
            do_lower_case=self.do_lower_case, keep_accents=self.keep_accents, start=start,
        )  # fmt: skip


constant_baseline = classifier.constant_baseline  # the best of the answer letters given to every question


def run(settings, data: task_data.TaskData | None = None):
    """data: what task_data.read read (None: read it now)."""
    return task.run(settings, RaceTask, data)
