"""Parameter counts of a built pretrainer, by part, from its real variables."""

import math

from albert_tf.models.pretrainer import AlbertPretrainer


def _count(weights) -> int:
    return sum(math.prod(weight.shape) for weight in weights)


def parameter_counts(pretrainer: AlbertPretrainer) -> dict[str, int]:
    """Counts the distinct weights of each part; a shared block counts once.

    Returns a dict with `embeddings` (tables, LayerNorm and the E→H projection), `embedding_projection`
    (the projection alone), `transformer_blocks`, `pooler`, `encoder` (the three parts together: what
    the paper's Table 1 counts), `masked_lm_head` (the tied table not counted again), `sentence_order_head`
    and `total`.
    """
    encoder = pretrainer.encoder
    projection = encoder.embeddings.projection
    counts = {
        "embeddings": _count(encoder.embeddings.weights),
        "embedding_projection": _count(projection.weights) if projection is not None else 0,
        # Keras deduplicates weights reached through several blocks (shared sub-layers).
        "transformer_blocks": _count({id(w): w for b in encoder.blocks for w in b.weights}.values()),
        "pooler": _count(encoder.pooler.weights),
        "encoder": _count(encoder.weights),
        "masked_lm_head": _count(
            w for w in pretrainer.masked_lm.weights if w is not encoder.embeddings.word_embeddings.embeddings
        ),
        "sentence_order_head": _count(pretrainer.sentence_order.weights),
        "total": _count(pretrainer.weights),
    }
    parts = counts["embeddings"] + counts["transformer_blocks"] + counts["pooler"]
    if parts != counts["encoder"]:
        raise AssertionError(f"encoder parts add up to {parts}, but the encoder holds {counts['encoder']}")
    return counts
