"""Builds MLM + SOP pretraining TFRecords from a text corpus: globally shuffled shards and a manifest.

    python -m albert_tf.create_pretraining_data --input_file='corpus/*.txt' \
        --output_file=records/train@16 --spm_model_file=spm/albert.model \
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=10

writes records/train-00000-of-00016 ... and records/train.manifest.json (making records/). Corpus: one
sentence per line, a blank line between documents. The flags and defaults are the original
google-research/albert builder's, plus runner, beam_pipeline_options, num_workers, manifest_file,
sort_memory_mb, gzip and errors. The same inputs, flags and seed give the same bytes with either runner and
any number of workers. See albert_tf/pretraining/data/units.py.
"""

import dataclasses
import itertools
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Input text files: comma-separated globs.")
flags.DEFINE_string(
    "output_file",
    None,
    "Output shards, comma-separated, in key order; PREFIX@N stands for N shards PREFIX-00000-of-0000N... "
    "Missing folders are made. A count that leaves a shard empty is refused, naming the largest that works.",
)
flags.DEFINE_string("spm_model_file", None, "SentencePiece model (python -m albert_tf.train_tokenizer).")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Lowercase the text. Default: as the SentencePiece model was trained (train_tokenizer's "
    "PREFIX.tokenizer.json beside it; true without one); a value that contradicts that file is refused. The "
    "manifest records it; a model pretrained on the records keeps it in its directory (tokenizer.json), and "
    "fine-tuning and the export tokenize by it.",
)  # fmt: skip
flags.DEFINE_bool(
    "keep_accents", None,
    "Keep combining marks (no NFKD, no mark removal); --nokeep_accents drops them as the original does. "
    "Default: as the SentencePiece model was trained (train_tokenizer's PREFIX.tokenizer.json beside it; a "
    "value that contradicts it is refused); for a model without one, the command measures the corpus first "
    "and stops when marks carry meaning in it. The manifest records it, and a model pretrained on the "
    "records keeps it (tokenizer.json).",
)  # fmt: skip
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words rather than single pieces.")
flags.DEFINE_integer("max_seq_length", 512, "Tokens per instance, [CLS] and [SEP]s included.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked tokens per instance.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Share of tokens to mask.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
flags.DEFINE_integer("dupe_factor", 40, "Passes over each document, each with different masks and pairs.")
flags.DEFINE_integer("ngram", 3, "Longest n-gram (in words) masked as one span.")
flags.DEFINE_bool("favor_shorter_ngram", True, "p(n) ∝ 1/n; otherwise reversed (longer favoured).")
flags.DEFINE_bool("random_next_sentence", False, "BERT's next-sentence prediction instead of sentence order.")
flags.DEFINE_integer("random_seed", 12345, "Seed of every random choice and of the output order.")
flags.DEFINE_enum("runner", "local", ["local", "beam"], "Local worker processes, or an Apache Beam pipeline.")
flags.DEFINE_string(
    "beam_pipeline_options",
    "",
    "--runner=beam: Beam options, comma-separated (runner=DataflowRunner,project=...,region=...); "
    "without a runner, --num_workers local processes.",
)
flags.DEFINE_integer(
    "num_workers", os.cpu_count(), "Local worker processes; the output does not depend on it."
)
flags.DEFINE_string(
    "manifest_file", None, "Manifest path (default: the first shard's, less -NNNNN-of-NNNNN)."
)
flags.DEFINE_integer("sort_memory_mb", 256, "A worker sorts a larger shard in runs of this size, from disk.")
flags.DEFINE_bool("gzip", False, "Write GZIP-compressed TFRecords.")
flags.DEFINE_enum("errors", "strict", ["strict", "replace"], "Invalid UTF-8: stop, or replace and count.")
flags.mark_flags_as_required(["input_file", "output_file", "spm_model_file"])


def as_trained(lower, keep_accents, path, trained):
    """(do_lower_case, keep_accents or None) from the flags (None: not given), the ones not given as the
    SentencePiece model was trained (train_tokenizer's PREFIX.tokenizer.json at path, trained None when the
    model has none); ValueError when a flag given contradicts it."""
    given = {"do_lower_case": lower, "keep_accents": keep_accents}
    if trained is None:
        return (True if lower is None else lower), keep_accents
    for name, value in given.items():
        if value is not None and value != trained[name]:
            raise ValueError(
                f"--{'' if value else 'no'}{name} contradicts {path}: the SentencePiece model was trained "
                f"with {name}={str(trained[name]).lower()} (train_tokenizer). Drop the flag to tokenize as "
                "it was trained, or train a model with the setting you want"
            )
    return tuple(trained[name] if value is None else value for name, value in given.items())


def main(argv):
    del argv
    from albert_tf import model_files, tf_startup
    from albert_tf.file_systems import BeamFiles, LocalFiles
    from albert_tf.pretraining.data import manifest, units
    from albert_tf.pretraining.data.instances import InstanceOptions
    from albert_tf.text import corpus, marks

    tf_startup.import_tensorflow_quietly_for([FLAGS.spm_model_file])  # read here (the rest by the runner)

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
        lower, keep_accents = as_trained(
            FLAGS.do_lower_case if FLAGS["do_lower_case"].present else None,
            FLAGS.keep_accents,
            *model_files.trained_settings(FLAGS.spm_model_file),
        )
        settings = units.BuildSettings(
            spm_model_file=FLAGS.spm_model_file,
            do_lower_case=lower,
            options=options,
            dupe_factor=FLAGS.dupe_factor,
            random_seed=FLAGS.random_seed,
            gzip=FLAGS.gzip,
            errors=FLAGS.errors,
        )
        files = BeamFiles() if FLAGS.runner == "beam" else LocalFiles
        remote = [flag for flag in ("input_file", "output_file", "spm_model_file", "manifest_file")
                  if "://" in (FLAGS[flag].value or "")]  # fmt: skip
        if remote and FLAGS.runner == "local":
            raise ValueError(
                f"--{remote[0]}={FLAGS[remote[0]].value}: --runner=local reads and writes this machine's "
                "disks (its workers import no TensorFlow); for gs:// and other file systems use "
                "--runner=beam "
                '(pip install -e ".[beam]"), locally or on a cluster'
            )
        inputs = corpus.expand_patterns(FLAGS.input_file, files=files)
        # Before anything is written: whether the corpus's marks carry meaning (the flag given, or measured).
        lines = corpus.LineReader(inputs, errors=FLAGS.errors, files=files).files()
        keep_accents, said = marks.decide(
            itertools.chain.from_iterable(lines), keep_accents, f"--input_file={FLAGS.input_file}"
        )
        settings = dataclasses.replace(settings, keep_accents=keep_accents)
        if said:
            progress(said)
        outputs = manifest.output_paths(FLAGS.output_file)
        common = dict(manifest_file=FLAGS.manifest_file, sort_memory_bytes=FLAGS.sort_memory_mb << 20)
        if FLAGS.runner == "beam":
            from albert_tf.pretraining.data import beam

            summary = beam.build(
                inputs,
                outputs,
                settings,
                pipeline_options=FLAGS.beam_pipeline_options,
                num_workers=FLAGS.num_workers,
                **common,
            )
        else:
            from albert_tf.pretraining.data import local

            summary = local.build(
                inputs, outputs, settings, num_workers=FLAGS.num_workers, progress=progress, **common
            )
    except ValueError as error:  # CorpusError, BuildError, TokenizerError and bad flag values
        sys.exit(f"create_pretraining_data: error: {error}")
    print(summary)


if __name__ == "__main__":
    app.run(main)
