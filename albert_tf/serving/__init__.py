"""Serving: SavedModels with in-graph tokenization for TF Serving (see export.py), and loading them back
through TensorFlow's C++ loader (servable.py).

May import: models, layers, text, finetuning.span_decoding (a span export's answers are fine-tuning's) and
the top-level modules.
"""
