"""Transformer blocks compiled with XLA inside an export, at a few shapes (buckets).

XLA compiles a function once per input shape, and a server sees every batch size and length. So a compiled
export pads each block's input [rows, width, hidden] up to a bucket of rows and one of width, runs the
compiled block there and slices the real rows and positions back: a few shapes are ever compiled, all of them
by the export's warm-up requests (warmup.py) when the server loads the version, none at a user's request.

    rows    powers of two up to the export's rows per sub-batch, and that count: 1, 2, 4, 8 for 8
            (times num_choices for multiple choice, whose model rows are question x choice);
    width   multiples of 16 up to 128, then each octave in 8 steps (160, 192, 224, 256, 320, ...), the last
            one max_seq_length: at most 1/8 more positions than the sub-batch's longest row past 128
            (a block's compute is about linear in width), 8 widths at 128 tokens, 14 at 384.

A block padded so computes the same outputs for its real rows and positions: padded keys get the attention
bias of padding (-10000, a softmax weight of exactly 0 in float32), padded rows and positions are dropped.
A shape past the last bucket (only `serve_token_ids` can send one: ids wider than max_seq_length) runs the
same block uncompiled at its own shape, the plain export's path: no request ever waits for a compilation.

Why blocks and not the whole encoder and head as one compiled function: the blocks are nearly all of the
compute, and ALBERT's shared block is one function whichever layer calls it, so each shape compiles one
block, not every layer unrolled. Measured on ALBERT-base through the C++ loader (2 AVX2 cores): each
compiled shape added about 2 MB to the served process and 0.6 s to its load as blocks, 12 MB and 2.3 s as
the whole model, at the same speed within that machine's noise.
"""

import tensorflow as tf

# The smallest width bucket, and the step of the widths up to 128.
WIDTH_STEP = 16
# The attention bias of a padded key (what the encoder gives input_mask 0: models/encoder.py).
PADDING_BIAS = -10000.0


def row_buckets(rows):
    """The row counts a sub-batch of at most `rows` rows is padded to: powers of two below it, then it."""
    buckets = [1]
    while buckets[-1] * 2 < rows:
        buckets.append(buckets[-1] * 2)
    return buckets if buckets[-1] == rows else [*buckets, rows]


def width_buckets(max_seq_length):
    """The widths a sub-batch is padded to: multiples of WIDTH_STEP up to 128, then 1/8 of the next power of
    two apart (160, 192, ..., 256, 320, ...), the last one max_seq_length."""
    buckets = []
    while not buckets or buckets[-1] < max_seq_length:
        width = buckets[-1] if buckets else 0
        step = max(WIDTH_STEP, (1 << width.bit_length()) // 8)  # 1 << bit_length: the power of two above
        buckets.append(min(width + step, max_seq_length))
    return buckets


def _bucket(ladder, size):
    """The index in ladder (int32 [n], ascending) of the smallest bucket >= size; n when none is."""
    return tf.searchsorted(ladder, tf.reshape(size, [1]), side="left")[0]


def compile_blocks(blocks, hidden_size, rows, widths):
    """Each block's call as its compiled function on bucketed shapes; returns a function that restores them.

    Args:
      blocks: the encoder's distinct TransformerBlocks (encoder.blocks). Each becomes one compiled function
        and one uncompiled one, each stored once in the graph and called by every layer that runs the block.
      hidden_size: the encoder's hidden size (the blocks' last axis).
      rows: row buckets of the blocks' input (model rows: sub-batch rows x choices), ascending.
      widths: width buckets, ascending.

    Returns:
      A function of no arguments that gives the blocks their class's call again.
    """
    for block in blocks:
        block.call = _bucketed_call(block, hidden_size, rows, widths)

    def restore():
        for block in blocks:
            del block.call  # the instance attribute set above: the class's call again

    return restore


def _bucketed_call(block, hidden_size, rows, widths):
    """block's call at inference: x float [batch, width, hidden_size], attention bias float [batch, 1, 1,
    width] → float [batch, width, hidden_size], through the compiled block at the bucket that holds
    (batch, width), or the uncompiled one past the buckets."""
    # Keras casts both inputs to the block's compute dtype before its call.
    specs = [
        tf.TensorSpec([None, None, hidden_size], block.compute_dtype),
        tf.TensorSpec([None, 1, 1, None], block.compute_dtype),
    ]

    def inference(x, attention_bias):
        return block.__class__.call(block, x, attention_bias, training=False)

    # One input signature: every signature of the export calls the same two functions (one compilation per
    # shape, whichever signature asks first), and _noinline keeps each one function in the graph.
    compiled = tf.function(
        inference, input_signature=specs, jit_compile=True, autograph=False,
        experimental_attributes={"_noinline": True},
    )  # fmt: skip
    plain = tf.function(
        inference, input_signature=specs, autograph=False, experimental_attributes={"_noinline": True}
    )

    @tf.function(input_signature=specs, autograph=False, experimental_attributes={"_noinline": True})
    def bucketed(x, attention_bias):
        row_ladder, width_ladder = tf.constant(rows, tf.int32), tf.constant(widths, tf.int32)
        shape = tf.shape(x)
        row_index, width_index = _bucket(row_ladder, shape[0]), _bucket(width_ladder, shape[1])

        def padded():
            extra_rows = tf.gather(row_ladder, row_index) - shape[0]
            extra_width = tf.gather(width_ladder, width_index) - shape[1]
            padded_x = tf.pad(x, [[0, extra_rows], [0, extra_width], [0, 0]])
            padded_bias = tf.pad(
                attention_bias,
                [[0, extra_rows], [0, 0], [0, 0], [0, extra_width]],
                constant_values=PADDING_BIAS,
            )
            return compiled(padded_x, padded_bias)[: shape[0], : shape[1]]

        inside = (row_index < len(rows)) & (width_index < len(widths))
        return tf.cond(inside, padded, lambda: plain(x, attention_bias))

    def call(x, attention_bias, training=None):
        del training  # exports run inference only
        return bucketed(x, attention_bias)

    return call
