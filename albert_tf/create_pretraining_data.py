"""Builds MLM + SOP pretraining TFRecords from a text corpus.

    python -m albert_tf.create_pretraining_data --input_file='corpus/*.txt' \
        --output_file=data/train-0.tfrecord,data/train-1.tfrecord --spm_model_file=spm/albert.model \
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=10

Corpus: one sentence per line, a blank line between documents. The flags and defaults are the original
google-research/albert builder's, plus num_workers, gzip, errors and shuffle_buffer_size. The same inputs,
flags and seed give the same bytes whatever num_workers is. See albert_tf/data/pretraining_builder.py.
"""

import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Input text files: comma-separated globs.")
flags.DEFINE_string("output_file", None, "Output TFRecord files, comma-separated; instances go round-robin.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model (python -m albert_tf.train_tokenizer).")
flags.DEFINE_bool("do_lower_case", True, "Lowercase the text (match the SentencePiece model).")
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words rather than single pieces.")
flags.DEFINE_integer("max_seq_length", 512, "Tokens per instance, [CLS] and [SEP]s included.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked tokens per instance.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Share of tokens to mask.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
flags.DEFINE_integer("dupe_factor", 40, "Passes over each document, each with different masks and pairs.")
flags.DEFINE_integer("ngram", 3, "Longest n-gram (in words) masked as one span.")
flags.DEFINE_bool("favor_shorter_ngram", True, "p(n) ∝ 1/n; otherwise reversed (longer favoured).")
flags.DEFINE_bool("random_next_sentence", False, "BERT's next-sentence prediction instead of sentence order.")
flags.DEFINE_integer("random_seed", 12345, "Seed of every random choice.")
flags.DEFINE_integer("num_workers", os.cpu_count(), "Worker processes; the output does not depend on it.")
flags.DEFINE_bool("gzip", False, "Write GZIP-compressed TFRecords.")
flags.DEFINE_enum("errors", "strict", ["strict", "replace"], "Invalid UTF-8: stop, or replace and count.")
flags.DEFINE_integer("shuffle_buffer_size", 10_000, "Instances mixed across blocks before writing.")
flags.mark_flags_as_required(["input_file", "output_file", "spm_model_file"])


def main(argv):
    del argv
    from albert_tf.data import corpus, pretraining_builder
    from albert_tf.data.pretraining_instances import InstanceOptions
    from albert_tf.data.tokenizer import TokenizerError

    def progress(line):
        print(f"create_pretraining_data: {line}", file=sys.stderr, flush=True)

    try:
        options = InstanceOptions(
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob,
            short_seq_prob=FLAGS.short_seq_prob,
            do_whole_word_mask=FLAGS.do_whole_word_mask,
            ngram=FLAGS.ngram,
            favor_shorter_ngram=FLAGS.favor_shorter_ngram,
            random_next_sentence=FLAGS.random_next_sentence,
        )
        settings = pretraining_builder.BuildSettings(
            spm_model_file=FLAGS.spm_model_file,
            do_lower_case=FLAGS.do_lower_case,
            options=options,
            dupe_factor=FLAGS.dupe_factor,
            random_seed=FLAGS.random_seed,
            shuffle_buffer_size=FLAGS.shuffle_buffer_size,
        )
        summary = pretraining_builder.build(
            corpus.expand_patterns(FLAGS.input_file),
            [path.strip() for path in FLAGS.output_file.split(",") if path.strip()],
            settings,
            num_workers=FLAGS.num_workers,
            gzip=FLAGS.gzip,
            errors=FLAGS.errors,
            progress=progress,
        )
    except (ValueError, corpus.CorpusError, pretraining_builder.BuildError, TokenizerError) as error:
        sys.exit(f"create_pretraining_data: error: {error}")
    print(summary)


if __name__ == "__main__":
    app.run(main)
