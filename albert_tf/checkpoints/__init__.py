"""Checkpoint conversion: Google's TF1 releases and Hugging Face directories to model directories and back.

A package (this file) so that `find_packages` puts it in the wheel: `convert_checkpoint` and
`run_pretraining --init_checkpoint` import it.

May import: models, layers and the top-level modules (config, file_io).
"""
