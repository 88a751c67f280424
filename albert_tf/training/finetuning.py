"""The fine-tuning loop of run_classifier, run_race and run_squad: Keras `fit`, keeping the best evaluation.

A task subclasses `FineTuningRun` and says how to read its data (`_read`), build its model (`_build_model`),
make batches (`_dataset`), what loss to train (`_losses`), how to score (`evaluate`, `metric_names`) and
what to predict (`predict`). The loop: the original's AdamW (no bias correction, weight decay 0.01,
clipping 1.0) with warmup + linear decay, evaluation every `save_checkpoints_steps`, and in `output_dir` a
model directory whose `task_model.keras` is the best evaluation's model (ready for `export_saved_model`)
and `eval_results.json` (metrics by name, from the best evaluation, and its `global_step`).
"""

import dataclasses
import json
import os
import sys

import keras

from albert_tf.file_io import write_atomically
from albert_tf.models import model_dir
from albert_tf.training import distribution
from albert_tf.training.optimizers import AdamWeightDecay
from albert_tf.training.schedules import WarmupPolynomialDecay


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningSettings:
    """The flags every fine-tuning entry point takes."""

    model_dir: str
    output_dir: str
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


class FineTuningRun:
    """Reads the data, builds and compiles the model; `train()`, `evaluate()`, `predict()`."""

    name = "fine-tuning"  # the entry point, in progress lines

    def __init__(self, settings: FineTuningSettings):
        self.settings = s = settings
        keras.utils.set_random_seed(s.seed)
        distribution.set_precision(s.mixed_precision)
        self.spm = model_dir.spm_model_file(s.model_dir)
        if not self.spm:
            raise FileNotFoundError(f"{s.model_dir} has no spm.model")
        positions = model_dir.load_config(s.model_dir).max_position_embeddings
        if s.max_seq_length > positions:
            raise ValueError(
                f"--max_seq_length={s.max_seq_length} exceeds the model's max_position_embeddings={positions}"
            )
        self.splits = self._read()
        self.model = self._build_model()
        schedule = WarmupPolynomialDecay(s.learning_rate, s.train_step, s.warmup_step)
        self.model.compile(optimizer=AdamWeightDecay(schedule), jit_compile=s.jit_compile, **self._losses())

    @property
    def metric_names(self):
        """The metrics `evaluate` returns; the first picks the best evaluation."""
        raise NotImplementedError

    def _read(self):
        """{split name: data} for the splits the settings ask for ("train", "dev", "test")."""
        raise NotImplementedError

    def _build_model(self):
        raise NotImplementedError

    def _losses(self):
        """`compile` arguments: loss (and loss_weights)."""
        raise NotImplementedError

    def _dataset(self, split, is_training=False):
        """tf.data batches of a split: (inputs, targets) when training, inputs alone may do otherwise."""
        raise NotImplementedError

    def evaluate(self):
        """{metric name: value} on the dev split."""
        raise NotImplementedError

    def predict(self):
        """Writes the test split's predictions to output_dir."""
        raise NotImplementedError

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
            log(f"{self.name}: {line}")
        return best

    def save(self):
        """The model directory (pretrained files copied from model_dir) with this task model."""
        s = self.settings
        model_dir.copy_config_and_spm(s.model_dir, s.output_dir)
        model_dir.save_task_model(self.model, s.output_dir)


def run(settings: FineTuningSettings, job_class):
    """Trains (do_train), evaluates (do_eval: eval_results.json) and predicts (do_predict)."""
    job = job_class(settings)
    os.makedirs(settings.output_dir, exist_ok=True)
    best = None
    if settings.do_train:
        best = job.train(log=lambda line: print(line, file=sys.stderr, flush=True))
        if best is not None:
            job.model = model_dir.load_task_model(settings.output_dir)  # the best evaluation's model
    results = None
    if settings.do_eval:
        results = best or {**job.evaluate(), "global_step": 0}
        path = os.path.join(settings.output_dir, "eval_results.json")
        write_atomically(path, (json.dumps(results, indent=2, sort_keys=True) + "\n").encode())
    if settings.do_predict:
        job.predict()
    return results
