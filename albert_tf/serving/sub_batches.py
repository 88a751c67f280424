"""A batch run as sub-batches of texts of similar length, each padded only to its own longest.

A server batch mixes short and long texts; padded to its longest, most of a CPU's work goes to padding
(sentence pairs of the sample corpus: 53 tokens on average, 100 in the longest of 32). Sorted by length and
cut into sub-batches of a few rows, the batch computes about the tokens it holds, while each sub-batch stays
large enough for efficient matrix products. Real tokens' outputs do not depend on how far a row is padded
(attention masks padding), so the results are the whole batch's, in the request's order.

Only TensorFlow core ops (argsort, while loop, TensorArray): what the model server's loader runs.
"""

import tensorflow as tf


def run_by_length(run, features, lengths, rows, outputs, token_features, per_token=()):
    """`run(features)` on sub-batches of `rows` rows in order of length; outputs in the request's order.

    Args:
      run: features dict → dict of float tensors [rows, ...] (the names in `outputs`).
      features: dict of tensors [batch, ...]; those named in `token_features` have tokens on their last
        axis ([batch, width] or [batch, choices, width]) and are cut to each sub-batch's width.
      lengths: int32 [batch], the tokens each row needs (its last real token + 1).
      rows: rows per sub-batch; 0: the whole batch at once (one sub-batch padded to its longest).
      outputs: names of run's outputs.
      per_token: outputs with tokens on axis 1 ([rows, width, ...]): padded back to the batch's width
        with zeros.

    Returns:
      dict name → float32 [batch, ...]. A batch of 0 rows runs once, empty.
    """
    batch = tf.shape(lengths)[0]
    width = tf.shape(features[token_features[0]])[-1]
    order = tf.argsort(lengths, stable=True)
    lengths = tf.gather(lengths, order)
    features = {name: tf.gather(value, order) for name, value in features.items()}
    if not rows:
        rows = tf.maximum(batch, 1)
    count = tf.maximum(1, (batch + rows - 1) // rows)

    def body(index, arrays):
        start = index * rows
        end = tf.minimum(start + rows, batch)
        chunk_width = tf.maximum(1, tf.reduce_max(lengths[start:end]))
        chunk = {
            name: value[start:end, ..., :chunk_width] if name in token_features else value[start:end]
            for name, value in features.items()
        }
        results = run(chunk)
        written = {}
        shapes.update({name: results[name].shape[1:] for name in outputs})
        for name in outputs:
            result = tf.cast(results[name], tf.float32)
            if name in per_token:
                padding = [[0, 0], [0, width - chunk_width]] + [[0, 0]] * (len(result.shape) - 2)
                result = tf.pad(result, padding)
            written[name] = arrays[name].write(index, result)
        return index + 1, written

    shapes = {}  # each output's static shape past the rows, as the loop body traces run
    arrays = {name: tf.TensorArray(tf.float32, size=count, infer_shape=False) for name in outputs}
    # One sub-batch at a time: each already uses every core for its matrix products.
    _, arrays = tf.while_loop(
        lambda index, _: index < count, body, (tf.constant(0), arrays), parallel_iterations=1
    )
    restore = tf.math.invert_permutation(order)
    results = {}
    for name, array in arrays.items():
        shape = shapes[name].as_list()
        if name in per_token:
            shape[0] = None  # the batch's width, not the traced sub-batch's
        # In the graph too (EnsureShape): the loop's concat leaves the rank unknown to graph optimizers.
        results[name] = tf.ensure_shape(tf.gather(array.concat(), restore), [None] + shape)
    return results
