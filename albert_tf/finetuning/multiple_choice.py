"""Fine-tuning on RACE: `AlbertMultipleChoice` over the four options, the classifier's task otherwise.

`run(settings)` does what `python -m albert_tf.run_race` does; settings are `ClassifierSettings` with
task_name "race" and data_dir the RACE folder (train/dev/test, each with high/ and middle/). The output
directory gets the best evaluation's model (task_model.keras), eval_results.json (accuracy) and, with
do_predict, test_results.tsv (the predicted letters).
"""

from albert_tf.finetuning import classifier, race, task
from albert_tf.models import AlbertMultipleChoice


class RaceTask(classifier.ClassifierTask):
    """The classifier run with RACE's reader, pipeline and multiple-choice model."""

    name = "run_race"

    def _read(self):
        s = self.settings
        if not s.data_dir:
            raise ValueError("--data_dir is required: the RACE folder with train/, dev/ and test/")
        self.labels = tuple(race.LETTERS)
        wanted = {"train": s.do_train, "dev": s.do_eval, "test": s.do_predict}
        splits = [split for split, on in wanted.items() if on]
        return {split: race.read_race(s.data_dir, split, errors=s.errors) for split in splits}

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
            do_lower_case=self.do_lower_case, start=start,
        )  # fmt: skip


def run(settings):
    return task.run(settings, RaceTask)
