"""The input pipelines the toolkit trains and evaluates from run without tf.data's autotuning thread, whose
deletion can wait seconds to a minute on busy cores (albert_tf/input_options.py): pretraining records (with a
manifest or globs), classification and multiple-choice text, SQuAD windows; training and evaluation alike."""

import numpy as np

from albert_tf.finetuning import glue, race, squad
from albert_tf.pretraining.dataset import manifest_dataset, pretraining_dataset
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import REPO, SAMPLE_SPM

RECORDS = REPO / "albert_tf" / "sample" / "records"  # the quick start's: 64 tokens, 10 predictions
SHAPES = {"max_seq_length": 64, "max_predictions_per_seq": 10}


def autotuned(dataset):
    """Whether iterating dataset starts tf.data's autotuning thread (its default: an unset option)."""
    return dataset.options().autotune.enabled is not False


def test_training_and_evaluation_inputs_run_without_the_autotuning_thread():
    inputs = [
        manifest_dataset(str(RECORDS / "train.manifest.json"), global_batch_size=4, batch_size=4, **SHAPES),
        *(
            pretraining_dataset(str(RECORDS / "eval-*"), batch_size=4, is_training=training, **SHAPES)
            for training in (True, False)
        ),
    ]
    spm = str(SAMPLE_SPM)
    texts = [glue.Example("A fine film.", None, 1), glue.Example("Dull.", None, 0)]
    questions = [race.ChoiceExample("q1", "An article.", ("q a", "q b", "q c", "q d"), 2)] * 2
    squad_example = squad.SquadExample("q1", "What is it?", "It is a cat.", ("a cat",), 6, False)
    windows = squad.squad_features([squad_example], AlbertTokenizer(spm), seq_length=32, doc_stride=16)
    for training in (True, False):
        inputs += [
            glue.classification_dataset(texts, spm, seq_length=16, batch_size=2, is_training=training),
            race.multiple_choice_dataset(questions, spm, seq_length=16, batch_size=2, is_training=training),
            squad.span_dataset(windows, batch_size=1, is_training=training),
        ]
    assert not [dataset for dataset in inputs if autotuned(dataset)]
    # What the option leaves alone: each input still gives its batches.
    assert all(next(iter(dataset)) is not None for dataset in inputs)
    assert np.asarray(next(iter(inputs[0]))["input_word_ids"]).shape == (4, 64)
