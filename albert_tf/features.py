"""The one place feature names and dtypes live: TFRecord features and the model's inputs and labels.

TFRecord names are the original `create_pretraining_data.py`'s, so records from either builder read the same.
Pure Python: the builder's worker processes import it without TensorFlow.
"""

# Pretraining TFRecord features: name → (dtype, length key). Length keys: "seq" = max_seq_length,
# "predictions" = max_predictions_per_seq, 1 = one value.
INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
TOKEN_BOUNDARY = "token_boundary"
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"

PRETRAINING_FEATURES = {
    INPUT_IDS: ("int64", "seq"),
    INPUT_MASK: ("int64", "seq"),
    SEGMENT_IDS: ("int64", "seq"),
    TOKEN_BOUNDARY: ("int64", "seq"),
    MASKED_LM_POSITIONS: ("int64", "predictions"),
    MASKED_LM_IDS: ("int64", "predictions"),
    MASKED_LM_WEIGHTS: ("float32", "predictions"),
    NEXT_SENTENCE_LABELS: ("int64", 1),
}
MASK_FEATURES = (MASKED_LM_POSITIONS, MASKED_LM_IDS, MASKED_LM_WEIGHTS)

# Model side (encoder inputs follow the TF Hub names; see models/encoder.py and models/pretrainer.py).
INPUT_WORD_IDS = "input_word_ids"
INPUT_TYPE_IDS = "input_type_ids"
SENTENCE_ORDER_LABEL = "sentence_order_label"

# TFRecord name → model name, for what the reader hands to the pretrainer.
RECORD_TO_MODEL = {
    INPUT_IDS: INPUT_WORD_IDS,
    INPUT_MASK: INPUT_MASK,
    SEGMENT_IDS: INPUT_TYPE_IDS,
    MASKED_LM_POSITIONS: MASKED_LM_POSITIONS,
    MASKED_LM_IDS: MASKED_LM_IDS,
    MASKED_LM_WEIGHTS: MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS: SENTENCE_ORDER_LABEL,
}
ENCODER_INPUTS = (INPUT_WORD_IDS, INPUT_MASK, INPUT_TYPE_IDS)  # every model's, the exports' token inputs
PRETRAINER_INPUTS = (*ENCODER_INPUTS, MASKED_LM_POSITIONS)
PRETRAINER_LABELS = (MASKED_LM_IDS, MASKED_LM_WEIGHTS, SENTENCE_ORDER_LABEL)


def feature_lengths(max_seq_length, max_predictions_per_seq):
    """name → (dtype, length) of the pretraining TFRecord features."""
    sizes = {"seq": max_seq_length, "predictions": max_predictions_per_seq, 1: 1}
    return {name: (dtype, sizes[length]) for name, (dtype, length) in PRETRAINING_FEATURES.items()}
