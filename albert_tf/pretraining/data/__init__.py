"""The pretraining-data builder: a text corpus → SOP (or NSP) instances → globally shuffled TFRecord shards
and a manifest; the same bytes from processes on this machine (local) or Apache Beam (beam).

units: the work (blocks of input files) shared by both runners; instances: documents → masked instances;
manifest: what a build wrote; shard_sorting: key-sorted shards; records: tf.train.Example bytes and
TFRecord files written without TensorFlow.

May import: text (tokenizer, corpus, normalization) and the top-level features, file_io and file_systems,
and never TensorFlow: the builder's worker processes start without it (importing it costs 600 MB each).
"""
