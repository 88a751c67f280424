"""Fine-tuning a classifier (GLUE or a CSV/JSONL dataset), keeping the best evaluation.

`run(settings)` does what `python -m albert_tf.run_classifier` does (what every task shares:
albert_tf/finetuning/task.py): AlbertClassifier from a model directory, trained with cross-entropy (mean
squared error for regression), evaluated on the dev set with the task's GLUE metrics (MNLI: on both dev
sets, matched and mismatched); in `output_dir` a model directory whose `task_model.keras` is the best
evaluation's model (ready for `export_saved_model --task=classifier`), `eval_results.json` and, with
do_predict, `test_results.tsv` (MNLI: and `test_mismatched_results.tsv`).
"""

import math

import keras
import numpy as np

from albert_tf.finetuning import glue, metrics, task, task_data
from albert_tf.finetuning.settings import ClassifierSettings
from albert_tf.models import AlbertClassifier

# The metrics GLUE reports per task; the first one picks the best evaluation.
TASK_METRICS = {
    "cola": ("matthews_corrcoef", "accuracy"),
    "mrpc": ("f1", "accuracy"),
    "qqp": ("f1", "accuracy"),
    "sts-b": ("pearson", "spearman"),
}
DEFAULT_METRICS = ("accuracy",)
FUNCTIONS = {
    "accuracy": metrics.accuracy,
    "f1": metrics.f1,
    "matthews_corrcoef": metrics.matthews_correlation,
    "pearson": metrics.pearson,
    "spearman": metrics.spearman,
}


def _reported(task_name, regression):
    """[(dev split, the metric's reported name, its function's name)], in the order reported. MNLI is
    reported on its matched dev set, then its mismatched one, whose metrics' names end in "_mismatched"."""
    names = ("pearson", "spearman") if regression else TASK_METRICS.get(task_name.lower(), DEFAULT_METRICS)
    return [
        (split, name + split.removeprefix("dev"), name)
        for split in glue.reported_splits(task_name, "dev")
        for name in names
    ]


def metric_names(task_name, regression):
    """The metrics a task reports; the first picks the best evaluation (and a sweep's setting)."""
    return tuple(reported for _, reported, _ in _reported(task_name, regression))


def scores(task_name, regression, answers):
    """{metric: value}, in metric_names' order, from answers: {dev split: (labels, predictions)} (class
    indices, or scores for regression)."""
    reported = _reported(task_name, regression)
    return {metric: FUNCTIONS[name](*answers[split]) for split, metric, name in reported}


def constant_baseline(settings, data):
    """{metric: value} on the dev split(s) of a model that gives one answer whatever the text: per metric,
    the best score any one label (each label of the task; a regression's mean training score) gets when
    predicted for every example. A sweep (albert_tf/finetuning/sweep.py) calls a run that ends at or below
    it failed: a collapsed model settles on some label, not always the most frequent."""
    regression = data.labels is None
    if regression:
        constants = [float(np.mean([example.label for example in data.splits["train"]]))]
    else:
        constants = range(len(data.labels))
    dev = {
        split: [example.label for example in data.splits[split]]
        for split in glue.reported_splits(settings.task_name, "dev")
    }
    answered = [
        {split: (labels, [constant] * len(labels)) for split, labels in dev.items()} for constant in constants
    ]
    every = [scores(settings.task_name, regression, answers) for answers in answered]
    return {name: max(score[name] for score in every) for name in every[0]}


class ClassifierTask(task.FineTuningTask):
    """GLUE or CSV/JSONL classification (regression when the task has no label set)."""

    name = "run_classifier"

    def __init__(self, settings: ClassifierSettings, data: task_data.TaskData | None = None):
        self.task_name = settings.task_name.lower()
        self._prediction_inputs = {}  # split → its batches without labels, built once (_predictions)
        super().__init__(settings, data)

    @property
    def regression(self):
        return self.labels is None

    @property
    def metric_names(self):
        return metric_names(self.task_name, self.regression)

    @property
    def chance_loss(self):
        if not self.regression:
            return math.log(self.model.num_classes)
        # A model that has learned nothing predicts the mean score: the scores' variance.
        scores = [example.label for example in self.splits.get("train", [])]
        return float(np.var(scores)) if scores else None

    def _example_losses(self, labels, logits):
        """Cross-entropy, or for regression the squared error of the score."""
        if self.regression:
            return keras.ops.square(keras.ops.cast(logits[:, 0], "float32") - labels)
        return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)

    def _build_model(self):
        s = self.settings
        examples = next(iter(self.splits.values()), None)  # a fine-tuned model must take what they hold
        pair = None if not examples else examples[0].text_b is not None
        arguments = dict(max_seq_length=s.max_seq_length, text_pair=pair, dropout_rate=s.dropout_rate)
        if self.regression:
            return AlbertClassifier.from_model_dir(s.model_dir, num_classes=1, **arguments)
        return AlbertClassifier.from_model_dir(
            s.model_dir, num_classes=len(self.labels), labels=self.labels, **arguments
        )

    def _dataset(self, split, is_training=False, start=None):
        s = self.settings
        batch = s.train_batch_size if is_training else s.eval_batch_size
        return glue.classification_dataset(
            self.splits[split], self.spm, s.max_seq_length, batch, is_training=is_training, seed=s.seed,
            do_lower_case=self.do_lower_case, keep_accents=self.keep_accents, start=start,
        )  # fmt: skip

    def _predictions(self, split):
        # Built once a split and reused by every evaluation: building the dataset traces its tokenizing map
        # again, about a second each time (2-core CPU), more than predicting a small dev set takes.
        if split not in self._prediction_inputs:
            dataset = self._dataset(split)
            if self.splits[split][0].label is not None:
                dataset = dataset.map(_features_only)
            self._prediction_inputs[split] = dataset
        outputs = self.model.predict(self._prediction_inputs[split], verbose=0)
        return outputs[:, 0] if self.regression else np.argmax(outputs, axis=-1)

    def _evaluate(self):
        answers = {
            split: ([example.label for example in self.splits[split]], self._predictions(split))
            for split in glue.reported_splits(self.task_name, "dev")
        }
        return scores(self.task_name, self.regression, answers)

    def predict(self):
        """test_results.tsv (MNLI: and test_mismatched_results.tsv): index and the predicted label (or
        score)."""
        for split in glue.reported_splits(self.task_name, "test"):
            predictions = self._predictions(split)
            names = predictions if self.regression else [self.labels[i] for i in predictions]
            rows = ["index\tprediction"] + [f"{i}\t{value}" for i, value in enumerate(names)]
            self.write(f"{split}_results.tsv", "\n".join(rows) + "\n")


def _features_only(features, label):
    del label
    return features


def run(settings: ClassifierSettings, data: task_data.TaskData | None = None):
    """data: what task_data.read read (None: read it now)."""
    return task.run(settings, ClassifierTask, data)
