"""What a model costs in memory before it runs: training and serving, from its config and parameter counts.

Shape classes (B batch, T tokens, H hidden, I intermediate, N heads; P masked positions, V vocabulary):
    BTH   a layer's hidden states, [B, T, H]
    BTI   the feed-forward's inner activations, [B, T, I]
    BNTT  the attention probabilities, [B, N, T, T]

A training step holds the weights, the optimizer's slots, the gradients and what the backward pass needs of
the forward pass. The last grows with B x T (BNTT with T squared) and dominates long sequences. What one
layer keeps is counted from the traced training step (distinct buffers the gradient ops read; a reshape
shares its input's buffer), per precision; `tests/models/test_memory_estimate.py` counts them again on a
tiny model, so a change to the layers that changes them fails there. With remat a layer keeps only its
input, and one layer is recomputed at a time; then ALBERT pays a term BERT does not: each recomputed call
of a shared block returns its own gradient of the shared weights, all held until they are summed.
"""

import dataclasses

from albert_tf.config import AlbertConfig
from albert_tf.models.sharing import block_schedule

# Bytes per element of each shape class that one layer keeps for the backward pass. float32: 10 BTH tensors
# (the attention's input, queries, keys, values, context, the residual sums and LayerNorm's normalized
# values), 5 BTI (the tanh GELU's pre-activation and its intermediate products) and the softmax output.
# Under mixed precision 6 of the BTH are float32 (LayerNorm and residuals) and 4 bfloat16; the BTI are
# bfloat16; the attention probabilities are kept in float32 (the softmax output) and bfloat16 (the cast the
# context product reads); and the block's six weight matrices ("W": 4 H^2 + 2 H I elements), cast to bfloat16
# at each call for its products, are kept once per call (in float32 the products read the variables).
KEPT_BYTES_PER_LAYER = {
    "float32": {"BTH": 10 * 4, "BTI": 5 * 4, "BNTT": 4},
    "mixed": {"BTH": 6 * 4 + 4 * 2, "BTI": 5 * 2, "BNTT": 4 + 2, "W": 2},
}
# With remat a layer keeps its input only: float32, or the compute dtype under mixed precision.
REMAT_BYTES_PER_LAYER = {"float32": {"BTH": 4}, "mixed": {"BTH": 2}}
# The backward pass of a layer holds the gradients of its largest tensors while it runs: one BNTT (float32,
# the softmax's gradient), two BTI and two BTH.
IN_FLIGHT = {"BNTT": 1, "BTI": 2, "BTH": 2}
OPTIMIZER_SLOTS = {"lamb": 2, "adamw": 2}
PRECISIONS = ("float32", "bfloat16", "float16")
# What a CPU process running TensorFlow holds besides the model: the runtime, Keras, the traced step (about
# 640 MiB: bench/README.md, "Rematerialization", the "held" column less weights and optimizer slots) and,
# at the first step, the graph optimizer's copies of the step (about 300 MiB at any size and length there).
CPU_RUNTIME_BYTES = 940 * 2**20


@dataclasses.dataclass(frozen=True)
class MemorySettings:
    """What a run sets that changes its memory."""

    batch_size: int = 8
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20  # masked positions a sequence (pretraining)
    precision: str = "float32"
    optimizer: str = "lamb"
    remat: bool = False

    def check(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision={self.precision}: expected one of {', '.join(PRECISIONS)}")
        if self.optimizer not in OPTIMIZER_SLOTS:
            raise ValueError(f"optimizer={self.optimizer}: expected one of {', '.join(OPTIMIZER_SLOTS)}")
        for name in ("batch_size", "max_seq_length", "max_predictions_per_seq"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1")


def _sizes(config: AlbertConfig, batch_size: int, seq_length: int) -> dict[str, int]:
    """Elements of each shape class."""
    b, t, h, i = batch_size, seq_length, config.hidden_size, config.intermediate_size
    return {
        "BTH": b * t * h,
        "BTI": b * t * i,
        "BNTT": b * config.num_attention_heads * t * t,
        "W": 4 * h * h + 2 * h * i,
    }


def _bytes(sizes, bytes_per_element):
    return sum(sizes[name] * per for name, per in bytes_per_element.items())


def _shared_gradient_bytes(config: AlbertConfig) -> int:
    """float32 bytes of the extra gradient contributions of shared sub-layers under remat: a sub-layer
    called k times contributes k gradients of its weights (k - 1 more than an unshared one)."""
    h, i = config.hidden_size, config.intermediate_size
    attention = 4 * (h * h + h) + 2 * h
    feed_forward = 2 * h * i + i + h + 2 * h
    schedule = block_schedule(config)
    extra = 0
    for index, size in ((0, attention), (1, feed_forward)):
        calls = {}
        for pair in schedule:
            calls[pair[index]] = calls.get(pair[index], 0) + 1
        extra += sum(count - 1 for count in calls.values()) * size
    return 4 * extra


def estimate(config: AlbertConfig, counts: dict, settings: MemorySettings) -> dict[str, int]:
    """Bytes of each part of a pretraining step's and a served batch's memory, on the device that runs them.

    Args:
        config: the model's AlbertConfig.
        counts: `parameter_counts` of its pretrainer (`total`, `encoder`).
        settings: MemorySettings.

    Returns:
        {"parameters", "optimizer_state", "gradients", "activations", "training_peak",
         "serving_weights", "serving_activations", "serving_peak"}, in bytes. The peaks are of the device;
        a CPU process adds `CPU_RUNTIME_BYTES`.
    """
    s = settings
    s.check()
    kind = "float32" if s.precision == "float32" else "mixed"
    compute_bytes = 4 if s.precision == "float32" else 2
    sizes = _sizes(config, s.batch_size, s.max_seq_length)
    layers = config.num_hidden_layers * config.inner_group_num  # block calls
    parameters = 4 * counts["total"]  # variables stay float32 under mixed precision
    optimizer_state = OPTIMIZER_SLOTS[s.optimizer] * parameters
    # Without remat the contributions of a shared block's calls are summed as the backward pass goes; with
    # remat each recomputed layer returns its own, and they are all held until the end.
    gradients = parameters + (_shared_gradient_bytes(config) if s.remat else 0)
    one_layer = _bytes(sizes, KEPT_BYTES_PER_LAYER[kind])
    in_flight = 4 * sizes["BNTT"] + compute_bytes * (2 * sizes["BTI"] + 2 * sizes["BTH"])
    # The masked-LM logits (float32), their softmax and its gradient.
    heads = 3 * 4 * s.batch_size * s.max_predictions_per_seq * config.vocab_size
    embeddings = 2 * compute_bytes * sizes["BTH"]
    # With remat: each layer's input, and one layer recomputed at a time.
    kept = layers * _bytes(sizes, REMAT_BYTES_PER_LAYER[kind]) + one_layer if s.remat else layers * one_layer
    activations = kept + in_flight + heads + embeddings
    # Inference keeps nothing for a backward pass: a layer's scores and probabilities (float32), its inner
    # activations and a few hidden states are alive at once.
    serving_activations = 2 * 4 * sizes["BNTT"] + compute_bytes * (2 * sizes["BTI"] + 4 * sizes["BTH"])
    serving_weights = compute_bytes * counts["encoder"]  # an export stores its precision's weights
    return {
        "parameters": parameters,
        "optimizer_state": optimizer_state,
        "gradients": gradients,
        "activations": activations,
        "training_peak": parameters + optimizer_state + gradients + activations,
        "serving_weights": serving_weights,
        "serving_activations": serving_activations,
        "serving_peak": serving_weights + serving_activations,
    }


def largest_batch(config: AlbertConfig, counts: dict, settings: MemorySettings, memory_bytes: int) -> int:
    """The largest batch whose training peak fits in memory_bytes (0: not one sequence). The peak grows
    linearly with the batch: a fixed part (weights, slots, gradients) and a part per sequence."""
    one, two = (
        estimate(config, counts, dataclasses.replace(settings, batch_size=b))["training_peak"] for b in (1, 2)
    )
    per_sequence = two - one
    return max(0, (memory_bytes - (one - per_sequence)) // per_sequence)
