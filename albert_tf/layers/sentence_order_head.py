"""`SentenceOrderHead`: the 2-way sentence-order (or next-sentence) classifier on the pooled output."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_tf")
class SentenceOrderHead(keras.layers.Layer):
    """A dense layer from the pooled output to 2 logits, the original's `cls/seq_relationship`.

    Label 0 means the two segments are in their original order (or, for NSP, B follows A); label 1 means
    swapped (or random). No dropout, as in the original. Logits are float32 under any dtype policy.

    Args:
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.

    Call args:
        pooled_output: float [batch, H].

    Returns:
        float32 [batch, 2].

    Example:
        >>> SentenceOrderHead()(ops.ones((2, 14))).shape
        (2, 2)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, pooled_output_shape):
        self.dense = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense.build(pooled_output_shape)

    def call(self, pooled_output):
        return ops.cast(self.dense(pooled_output), "float32")

    def compute_output_shape(self, pooled_output_shape):
        return (*pooled_output_shape[:-1], 2)

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
