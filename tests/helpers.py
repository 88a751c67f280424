"""Tiny configs and inputs for tests: odd sizes so that a swapped axis fails loudly."""

import pathlib

import numpy as np

from albert_tf.config import AlbertConfig

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def tiny_config(**changes) -> AlbertConfig:
    """V 97, E 5, H 14, 2 heads, FFN 19, 3 layers, 16 positions."""
    values = dict(
        vocab_size=97,
        embedding_size=5,
        hidden_size=14,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=19,
        max_position_embeddings=16,
    )
    values.update(changes)
    return AlbertConfig(**values)


def random_features(config: AlbertConfig, batch_size=2, length=7, predictions=3, seed=0, padded=True):
    """Encoder inputs plus `masked_lm_positions`; with `padded`, the last sequence ends in 2 pads."""
    rng = np.random.default_rng(seed)
    word_ids = rng.integers(5, config.vocab_size, size=(batch_size, length)).astype(np.int32)
    mask = np.ones((batch_size, length), np.int32)
    if padded:
        mask[-1, length - 2 :] = 0
        word_ids[-1, length - 2 :] = 0
    type_ids = (np.arange(length)[None, :] >= length // 2).astype(np.int32).repeat(batch_size, 0) * mask
    positions = rng.integers(0, max(1, length - 2), size=(batch_size, predictions)).astype(np.int32)
    return {
        "input_word_ids": word_ids,
        "input_mask": mask,
        "input_type_ids": type_ids,
        "masked_lm_positions": positions,
    }


def encoder_inputs(features):
    return {name: features[name] for name in ENCODER_INPUTS}


REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = REPO / "data" / "sample" / "sample_corpus.txt"
SAMPLE_SPM = REPO / "data" / "sample" / "spm_8k.model"
