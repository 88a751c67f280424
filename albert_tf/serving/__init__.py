"""Serving: SavedModels with in-graph tokenization for TF Serving (see export.py), and loading them back
through TensorFlow's C++ loader (servable.py).

May import: models, layers, text and the top-level modules.
"""
