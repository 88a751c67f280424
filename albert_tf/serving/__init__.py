"""Serving: SavedModels with in-graph tokenization for TF Serving (see export.py)."""
