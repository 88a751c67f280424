"""Fine-tuning on SQuAD v1.1 / v2.0: `AlbertSpanLabeler` on windowed features, scored as the official scripts.

`run(settings)` does what `python -m albert_tf.run_squad` does (what every task shares:
albert_tf/finetuning/task.py).
Training minimizes the mean of the start and end cross-entropies (the original's loss) and, for v2.0, half
the answerability head's binary cross-entropy (whether a window holds the answer; the original v2.0
weight). Evaluation predicts `predict_file`, maps the best spans back to context text and reports
`exact_match` and `f1` (percent, the official definitions). In `output_dir`: the best evaluation's model
directory (task_model.keras, which keeps this run's windows and decoding: `export_saved_model --task=span`
and the model's `predict` on raw text answer as this run does), eval_results.json, and with
do_predict predictions.json (question id → answer text, "" for no answer) plus, for v2.0, null_odds.json
(question id → the probability of no answer, for the official evaluate-v2.0.py --na-prob-file).
"""

import json
import math

import keras

from albert_tf.finetuning import metrics, squad, task, task_data
from albert_tf.finetuning.settings import SquadSettings
from albert_tf.models import AlbertSpanLabeler
from albert_tf.text import span_settings
from albert_tf.text.tokenizer import AlbertTokenizer


class SquadTask(task.FineTuningTask):
    """SQuAD: train on train_file, evaluate and predict predict_file."""

    name = "run_squad"
    metric_names = ("f1", "exact_match")

    def _prepare(self, splits):
        """{"train": SpanFeatures, "dev"/"test": (examples, SpanFeatures)}: the questions' windows."""
        s = self.settings
        tokenizer = AlbertTokenizer(
            self.spm, do_lower_case=self.do_lower_case, keep_accents=self.keep_accents
        )
        windows = {"seq_length": s.max_seq_length, "doc_stride": s.doc_stride,
                   "max_query_length": s.max_query_length}  # fmt: skip
        prepared = {}
        if "train" in splits:
            prepared["train"] = squad.squad_features(splits["train"], tokenizer, **windows)
        predicted = splits.get("dev") or splits.get("test")  # one list of questions: windowed once
        if predicted:
            windowed = (predicted, squad.squad_features(predicted, tokenizer, **windows))
            prepared.update({split: windowed for split in ("dev", "test") if split in splits})
        return prepared

    def _build_model(self):
        s = self.settings
        return AlbertSpanLabeler.from_model_dir(
            s.model_dir, answerability=s.version_2_with_negative, dropout_rate=s.dropout_rate,
            max_seq_length=s.max_seq_length, text_pair=True,
        )  # fmt: skip

    @property
    def chance_loss(self):
        # A uniform guess of the start and of the end among the window's positions, and of answerability.
        positions = math.log(self.settings.max_seq_length)
        return positions + (0.5 * math.log(2) if self.settings.version_2_with_negative else 0.0)

    def _example_losses(self, targets, outputs):
        """The mean of the start and end cross-entropies, plus half the answerability cross-entropy."""
        span = keras.losses.sparse_categorical_crossentropy
        loss = 0.5 * (
            span(targets["start_logits"], outputs["start_logits"], from_logits=True)
            + span(targets["end_logits"], outputs["end_logits"], from_logits=True)
        )
        if self.settings.version_2_with_negative:
            answerable = keras.losses.binary_crossentropy(
                targets["answerable_logits"][:, None], outputs["answerable_logits"][:, None], from_logits=True
            )
            loss += 0.5 * answerable
        return loss

    def _dataset(self, split, is_training=False, start=None):
        s = self.settings
        features = self.splits[split] if is_training else self.splits[split][1]
        batch = s.train_batch_size if is_training else s.eval_batch_size
        return squad.span_dataset(
            features, batch, is_training=is_training, answerability=s.version_2_with_negative, seed=s.seed,
            start=start,
        )  # fmt: skip

    def _answers(self, split):
        s = self.settings
        examples, features = self.splits[split]
        outputs = self.model.predict(self._dataset(split), verbose=0)
        return squad.answer_texts(
            examples, features, outputs,
            n_best_size=s.n_best_size, max_answer_length=s.max_answer_length,
            null_score_threshold=s.null_score_threshold,
        )  # fmt: skip

    def _save(self, directory, step, rollbacks):
        """The model directory; the model keeps this run's windows and decoding, so its `predict` on raw text
        and its export answer as this run does."""
        s = self.settings
        self.model.span_settings = span_settings.SpanSettings(
            max_seq_length=s.max_seq_length, doc_stride=s.doc_stride, max_query_length=s.max_query_length,
            n_best_size=s.n_best_size, max_answer_length=s.max_answer_length,
            null_score_threshold=s.null_score_threshold,
        ).decoding()  # fmt: skip
        super()._save(directory, step, rollbacks)

    def _evaluate(self):
        examples, _ = self.splits["dev"]
        answers, _ = self._answers("dev")
        gold = {example.qas_id: list(example.answers) for example in examples}
        return metrics.squad_scores(answers, gold, self.settings.version_2_with_negative)

    def predict(self):
        answers, no_answer = self._answers("test")
        outputs = {"predictions.json": answers, "null_odds.json": no_answer}
        for name, values in outputs.items():
            if values is not None:
                self.write(name, json.dumps(values, indent=2, ensure_ascii=False) + "\n")


def constant_baseline(settings, data):
    """{metric: value} on the dev split of a model that never answers (every prediction ""): what a sweep
    (albert_tf/finetuning/sweep.py) calls a failed run's score: on v2.0 the unanswerable share, on v1.1 that
    of the gold answers of no words (nearly 0)."""
    gold = {example.qas_id: list(example.answers) for example in data.splits["dev"]}
    scores = metrics.squad_scores({}, gold, settings.version_2_with_negative)
    return {name: scores[name] for name in SquadTask.metric_names}


def run(settings: SquadSettings, data: task_data.TaskData | None = None):
    """data: what task_data.read read (None: read it now)."""
    return task.run(settings, SquadTask, data)
