"""Fine-tuning a classifier (GLUE or a CSV/JSONL dataset) with Keras `fit`, keeping the best evaluation.

`run(settings)` does what `python -m albert_tf.run_classifier` does: AlbertClassifier from a model directory,
the original's AdamW (no bias correction, weight decay 0.01, clipping 1.0) with warmup + linear decay,
evaluation on the dev set every `save_checkpoints_steps`, and, in `output_dir`: a model directory whose
`task_model.keras` is the best evaluation's model (ready for `export_saved_model --task=classifier`),
`eval_results.json` (the task's metrics by name, from the best evaluation) and, with do_predict,
`test_results.tsv`.
"""

import dataclasses
import json
import os
import sys

import keras
import numpy as np

from albert_tf.atomic_file import write_atomically
from albert_tf.data import glue
from albert_tf.models import AlbertClassifier, model_dir
from albert_tf.training import distribution, metrics
from albert_tf.training.optimizers import AdamWeightDecay
from albert_tf.training.schedules import WarmupPolynomialDecay

# The metrics GLUE reports per task; the first one picks the best evaluation.
TASK_METRICS = {
    "cola": ("matthews_corrcoef", "accuracy"),
    "mrpc": ("f1", "accuracy"),
    "qqp": ("f1", "accuracy"),
    "sts-b": ("pearson", "spearman"),
}
DEFAULT_METRICS = ("accuracy",)


@dataclasses.dataclass(frozen=True)
class ClassifierSettings:
    """The `run_classifier` flags."""

    task_name: str
    model_dir: str
    output_dir: str
    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    labels: tuple | None = None
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 2e-5
    train_step: int = 1000
    warmup_step: int = 100
    save_checkpoints_steps: int = 200
    dropout_rate: float = 0.1
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    mixed_precision: str = "float32"
    jit_compile: bool = False
    seed: int = 12345


def evaluate(labels, predictions, names):
    """The named metrics of predictions (class indices, or scores for regression)."""
    functions = {
        "accuracy": metrics.accuracy,
        "f1": metrics.f1,
        "matthews_corrcoef": metrics.matthews_correlation,
        "pearson": metrics.pearson,
        "spearman": metrics.spearman,
    }
    return {name: functions[name](labels, predictions) for name in names}


class ClassifierRun:
    """Reads the data, builds the model; `train()`, `evaluate()`, `predict()`."""

    def __init__(self, settings: ClassifierSettings):
        self.settings = s = settings
        keras.utils.set_random_seed(s.seed)
        distribution.set_precision(s.mixed_precision)
        self.task = s.task_name.lower()
        self.labels, self.splits = self._read()
        self.regression = self.labels is None
        self.metric_names = (
            ("pearson", "spearman") if self.regression else TASK_METRICS.get(self.task, DEFAULT_METRICS)
        )
        self.spm = model_dir.spm_model_file(s.model_dir)
        if not self.spm:
            raise FileNotFoundError(f"{s.model_dir} has no spm.model")
        positions = model_dir.load_config(s.model_dir).max_position_embeddings
        if s.max_seq_length > positions:
            raise ValueError(
                f"--max_seq_length={s.max_seq_length} exceeds the model's max_position_embeddings={positions}"
            )
        self.model = self._build_model()
        schedule = WarmupPolynomialDecay(s.learning_rate, s.train_step, s.warmup_step)
        if self.regression:
            loss = keras.losses.MeanSquaredError()
        else:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.model.compile(optimizer=AdamWeightDecay(schedule), loss=loss, jit_compile=s.jit_compile)

    def _build_model(self):
        num_classes = 1 if self.regression else len(self.labels)
        return AlbertClassifier.from_model_dir(
            self.settings.model_dir, num_classes=num_classes, dropout_rate=self.settings.dropout_rate
        )

    def _read(self):
        s = self.settings
        if self.task in glue.TASKS:
            if not s.data_dir:
                raise ValueError(f"--data_dir is required for the GLUE task {self.task}")
            task = glue.TASKS[self.task]
            splits = {}
            for split in ("train", "dev", "test"):
                wanted = {"train": s.do_train, "dev": s.do_eval, "test": s.do_predict}[split]
                if wanted:
                    splits[split] = glue.read_glue(s.data_dir, self.task, split)
            return task.labels, splits
        if self.task != "text":
            raise ValueError(
                f"--task_name must be a GLUE task ({', '.join(glue.TASKS)}) or 'text', got {self.task!r}"
            )
        files = {"train": s.train_file, "dev": s.dev_file, "test": s.test_file}
        labels, splits = s.labels, {}
        for split, path in files.items():
            if path and split == "test" and s.do_predict:
                splits[split], _ = glue.read_text_classification(path, labels=labels, label=None)
            elif path and split != "test":
                splits[split], labels = glue.read_text_classification(path, labels=labels)
        return labels, splits

    def _dataset(self, split, is_training=False):
        s = self.settings
        batch = s.train_batch_size if is_training else s.eval_batch_size
        return glue.classification_dataset(
            self.splits[split], self.spm, s.max_seq_length, batch, is_training=is_training, seed=s.seed
        )

    def _predictions(self, split):
        dataset = self._dataset(split)
        if self.splits[split][0].label is not None:
            dataset = dataset.map(_features_only)
        outputs = self.model.predict(dataset, verbose=0)
        return outputs[:, 0] if self.regression else np.argmax(outputs, axis=-1)

    def evaluate(self):
        labels = [example.label for example in self.splits["dev"]]
        return evaluate(labels, self._predictions("dev"), self.metric_names)

    def train(self, log=print):
        """Trains train_step steps; evaluates every save_checkpoints_steps; keeps the best model."""
        s = self.settings
        dataset = self._dataset("train", is_training=True).repeat()
        best, done = None, 0
        while done < s.train_step:
            steps = min(s.save_checkpoints_steps, s.train_step - done)
            history = self.model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
            done += steps
            line = f"step {done}/{s.train_step} | loss {history.history['loss'][-1]:.4f}"
            if "dev" in self.splits:
                results = self.evaluate()
                line += " | " + " | ".join(f"{k} {v:.4f}" for k, v in results.items())
                if best is None or results[self.metric_names[0]] > best[self.metric_names[0]]:
                    best = {**results, "global_step": done}
                    self.save()
            else:
                self.save()
            log(f"run_classifier: {line}")
        return best

    def save(self):
        """The model directory (pretrained files copied from model_dir) with this task model."""
        s = self.settings
        os.makedirs(s.output_dir, exist_ok=True)
        model_dir.copy_config_and_spm(s.model_dir, s.output_dir)
        model_dir.save_task_model(self.model, s.output_dir)

    def predict(self):
        """test_results.tsv: index and the predicted label (or score)."""
        predictions = self._predictions("test")
        names = predictions if self.regression else [self.labels[i] for i in predictions]
        rows = ["index\tprediction"] + [f"{i}\t{value}" for i, value in enumerate(names)]
        write_atomically(
            os.path.join(self.settings.output_dir, "test_results.tsv"), ("\n".join(rows) + "\n").encode()
        )


def _features_only(features, label):
    del label
    return features


def run(settings: ClassifierSettings, job_class=ClassifierRun):
    """Trains (do_train), evaluates (do_eval: eval_results.json) and predicts (do_predict)."""
    job = job_class(settings)
    best = job.train(log=lambda line: print(line, file=sys.stderr, flush=True)) if settings.do_train else None
    results = None
    if settings.do_eval:
        if best is None:
            results = {**job.evaluate(), "global_step": 0}
        else:
            job.model = model_dir.load_task_model(settings.output_dir)  # the best evaluation's model
            results = best
        path = os.path.join(settings.output_dir, "eval_results.json")
        os.makedirs(settings.output_dir, exist_ok=True)
        write_atomically(path, (json.dumps(results, indent=2, sort_keys=True) + "\n").encode())
    if settings.do_predict:
        job.predict()
    return results
