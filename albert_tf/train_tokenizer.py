"""Trains an ALBERT SentencePiece model on a corpus.

    python -m albert_tf.train_tokenizer --input=corpus/*.txt --model_prefix=spm/albert --vocab_size=30000

The recipe of the released models: unigram, <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 (control symbols),
no BOS/EOS, character coverage 0.99995, user-defined symbols ( ) " - . – £ €. Each line is normalized the way
the tokenizer normalizes it (whitespace, quotes, accents, case) before SentencePiece sees it, so training and
tokenization agree. Writes PREFIX.model and PREFIX.vocab, each through a temporary file, making PREFIX's
folder when it is missing.
"""

import itertools
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "input", None, "Text files (comma-separated globs, local or gs:// and the like), one sentence per line."
)
flags.DEFINE_string("model_prefix", None, "Writes PREFIX.model and PREFIX.vocab (a local or gs:// path).")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces, special pieces included.")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Lowercase before training. Written with --keep_accents's setting to PREFIX.tokenizer.json, which "
    "create_pretraining_data follows.",
)  # fmt: skip
flags.DEFINE_bool(
    "keep_accents", None,
    "Keep combining marks (no NFKD, no mark removal: Hugging Face's keep_accents); --nokeep_accents drops "
    "them as the original does. Given neither, the command measures the corpus first and stops when marks "
    "carry meaning in it (Japanese voicing, Vietnamese tones, Indic viramas, Thai tone marks, ...). Give "
    "create_pretraining_data the same.",
)  # fmt: skip
flags.DEFINE_bool(
    "add_dummy_prefix", True,
    "Begin each line with SentencePiece's word-start mark, as the original's models do. --noadd_dummy_prefix "
    "for corpora written without spaces (Japanese, Chinese, Thai): there no word absorbs the mark, so each "
    "line would start with a piece '▁' of its own, the most frequent masked-LM target. Kept in the model "
    "file: every tokenizer follows it.",
)  # fmt: skip
flags.DEFINE_enum("model_type", "unigram", ["unigram", "bpe"], "SentencePiece model type.")
flags.DEFINE_float("character_coverage", 0.99995, "Share of characters the vocabulary covers.")
flags.DEFINE_integer("input_sentence_size", 10_000_000, "Sample at most this many lines (0: all).")
flags.DEFINE_list("user_defined_symbols", ["(", ")", '"', "-", ".", "–", "£", "€"], "Always whole pieces.")
flags.DEFINE_integer("num_threads", os.cpu_count(), "Training threads.")
flags.DEFINE_integer("random_seed", 12345, "Seed of SentencePiece's sampling.")
flags.DEFINE_enum("errors", "strict", ["strict", "replace"], "Invalid UTF-8: stop, or replace and count.")
flags.mark_flags_as_required(["input", "model_prefix"])

# Above this share of lines that begin with a lone "▁", the command suggests --noadd_dummy_prefix. English
# lines begin so only before a symbol the model keeps whole ("(", '"'): a few in a hundred.
LONE_PREFIX_SHARE = 0.25


def main(argv):
    del argv
    from albert_tf import file_io, model_files, tf_startup
    from albert_tf.file_systems import TensorFlowFiles
    from albert_tf.text import corpus, marks, spm_training

    tf_startup.import_tensorflow_quietly_for([FLAGS.input, FLAGS.model_prefix])
    try:
        paths = corpus.expand_patterns(FLAGS.input, flag="input", files=TensorFlowFiles)
        lines = corpus.LineReader(paths, errors=FLAGS.errors, files=TensorFlowFiles).files()
        keep_accents, said = marks.decide(
            itertools.chain.from_iterable(lines), FLAGS.keep_accents, f"--input={FLAGS.input}"
        )
        if said:
            print(f"train_tokenizer: {said}", file=sys.stderr)
        summary = spm_training.train(
            paths,
            FLAGS.model_prefix,
            vocab_size=FLAGS.vocab_size,
            do_lower_case=FLAGS.do_lower_case,
            keep_accents=keep_accents,
            add_dummy_prefix=FLAGS.add_dummy_prefix,
            model_type=FLAGS.model_type,
            character_coverage=FLAGS.character_coverage,
            input_sentence_size=FLAGS.input_sentence_size,
            user_defined_symbols=FLAGS.user_defined_symbols,
            num_threads=FLAGS.num_threads,
            random_seed=FLAGS.random_seed,
            errors=FLAGS.errors,
            files=TensorFlowFiles,
        )
        # What create_pretraining_data reads to tokenize as the model was trained.
        model_files.write_trained_settings(FLAGS.model_prefix, FLAGS.do_lower_case, keep_accents)
        if FLAGS.add_dummy_prefix and not FLAGS["add_dummy_prefix"].present:
            lines = corpus.LineReader(paths, errors=FLAGS.errors, files=TensorFlowFiles).files()
            lone = spm_training.lone_prefix_share(
                f"{FLAGS.model_prefix}.model", itertools.chain.from_iterable(lines), FLAGS.do_lower_case,
                keep_accents,
            )  # fmt: skip
            if lone > LONE_PREFIX_SHARE:
                print(
                    f"train_tokenizer: {lone:.0%} of the lines begin with a piece '▁' of its own, as text "
                    "written without spaces (Chinese, Japanese, Thai) does: it carries nothing and will be "
                    "the most frequent masked-LM target. Train again with --noadd_dummy_prefix "
                    "(docs/data.md, 'Scripts written without spaces'), or pass --add_dummy_prefix to keep it "
                    "quietly.",
                    file=sys.stderr,
                )
    except (corpus.CorpusError, spm_training.TrainingError, file_io.FolderError, marks.MarksError) as error:
        sys.exit(f"train_tokenizer: error: {error}")
    print(summary)


if __name__ == "__main__":
    app.run(main)
