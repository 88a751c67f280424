"""Exports a model directory as a SavedModel that stock TF Serving loads and feeds from raw text.

    python -m albert_tf.export_saved_model --model_dir=runs/tiny --task=encoder \
        --export_dir=models/albert/1 --max_seq_length=128

`--export_dir` is the version folder TF Serving reads (models/NAME/VERSION); a folder not named by a number
is written with a warning, as TF Serving would not load it. Tasks: encoder and pretraining
use the directory's pretrained weights; classifier, span and multiple_choice its fine-tuned task model
(task_model.keras, written by the fine-tuning commands or `model_dir.save_task_model`), which tokenizes as it
was trained: its sequence length, pairing and casing come from the model, and a flag that contradicts them is
refused. A span model answers with the windows and decoding run_squad used, which the model keeps. The
export is loaded by TensorFlow's C++ loader, as TF Serving loads it, and its warm-up requests replayed before
it is published. See albert_tf/serving/export.py for the signatures and export/README.md for serving it.
"""

import re
import sys

from absl import app, flags

from albert_tf import file_io, model_files, tf_startup

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model_dir", None,
    "A model directory (albert_config.json, spm.model, weights; tokenizer.json says whether its text is "
    "lowercased: the export tokenizes as the model was trained).",
)  # fmt: skip
flags.DEFINE_enum(
    "task", "encoder", ["encoder", "pretraining", "classifier", "span", "multiple_choice"], "What to serve."
)
flags.DEFINE_string(
    "export_dir", None,
    "The SavedModel directory to create, e.g. models/albert/1: TF Serving serves the folders named by a "
    "version number under its --model_base_path (models/albert), so another name is written with a warning.",
)  # fmt: skip
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "Tokens per text (pair); longer input is truncated (span: windowed). Task models: the length they were "
    "fine-tuned at, which this may only repeat; encoder and pretraining: default 128.",
)
flags.DEFINE_bool(
    "text_pair",
    None,
    "serving_default takes text and text_b. Task models: as they were fine-tuned (span and multiple_choice "
    "always take two texts); encoder and pretraining: default false.",
)
flags.DEFINE_string(
    "spm_model_file", None, "SentencePiece model, if the model directory has none (else it must be that one)."
)
flags.DEFINE_integer(
    "sub_batch_size",
    None,
    "A request's texts run sorted by length in sub-batches of this many, each padded to its own longest "
    "(default: albert_tf.serving.export.SUB_BATCH_SIZE, for CPUs); 0: the whole batch at once (GPUs). "
    "A span request's context windows run in sub-batches of at most "
    "albert_tf.serving.export.SPAN_WINDOWS_PER_CALL either way, so its memory is that of those windows "
    "however long its contexts (ALBERT-base at 384 tokens, float32: about 180 MB at 8 windows, 1.5 GB at 64; "
    "bench/span_memory.py).",
    lower_bound=0,
)
flags.DEFINE_enum(
    "precision",
    "float32",
    ["float32", "bfloat16"],
    "float32, or bfloat16: matrix products in bfloat16, LayerNorm statistics, attention scores and "
    "softmax and logits in float32, weights stored in bfloat16, outputs float32. Choose bfloat16 for CPUs "
    "that compute it natively (avx512_bf16 or amx_bf16 in /proc/cpuinfo) and for GPUs, float32 elsewhere "
    "(other CPUs run bfloat16 slower than float32). The serving machine's CPU is what counts: TF Serving "
    "2.12 with oneDNN on (TF_ENABLE_ONEDNN_OPTS=1) aborts loading a bfloat16 export on a CPU without AVX-512 "
    "(docs/serving.md, 'bfloat16 exports'). Answers may differ from float32 within bfloat16 rounding; "
    "bench/README.md has the measurements.",
)
flags.DEFINE_bool(
    "jit_compile",
    False,
    "Run the encoder's transformer blocks compiled by XLA, each sub-batch padded to a few shapes (rows: "
    "powers of two up to --sub_batch_size; widths: multiples of 16 up to 128, then 8 per octave) that the "
    "warm-up requests compile when the server loads the version (seconds per shape). Needs "
    "--sub_batch_size >= 1 and a model server with XLA on: tensorflow_model_server "
    "--xla_cpu_compilation_enabled=true (TF Serving 2.5 or later); without it the version fails to load. "
    "float32 only. docs/serving.md, 'Compiled exports'.",
)
# Span answers; default: what run_squad kept in the model (AlbertSpanLabeler.span_settings), else its
# defaults.
# The windows' length is the model's (--max_seq_length).
flags.DEFINE_integer("doc_stride", None, "span: tokens between the starts of a context's windows.")
flags.DEFINE_integer("max_query_length", None, "span: question tokens kept.")
flags.DEFINE_integer("n_best_size", None, "span: top start and end positions considered per window.")
flags.DEFINE_integer("max_answer_length", None, "span: longest answer, in tokens.")
flags.DEFINE_float("null_score_threshold", None, "span (v2.0): no answer below this answerable logit.")
SPAN_FLAGS = ("doc_stride", "max_query_length", "n_best_size", "max_answer_length", "null_score_threshold")
flags.mark_flags_as_required(["model_dir", "export_dir"])


def main(argv):
    del argv
    tf_startup.import_tensorflow_quietly()
    from albert_tf.models import model_dir
    from albert_tf.serving.export import export_saved_model
    from albert_tf.serving.servable import ServingError
    from albert_tf.text.span_settings import SpanSettings

    try:
        FLAGS.model_dir = model_files.resolve(FLAGS.model_dir)  # a sweep's folder: its chosen run
        file_io.check_folder_path(FLAGS.export_dir, "--export_dir")
        if FLAGS.task == "encoder":
            model = model_dir.load_encoder(FLAGS.model_dir)
        elif FLAGS.task == "pretraining":
            model = model_dir.load_pretrainer(FLAGS.model_dir)
        else:
            model = model_dir.load_task_model(FLAGS.model_dir)
        own = model_files.spm_model_file(FLAGS.model_dir)
        spm = FLAGS.spm_model_file or own
        if not spm:
            raise FileNotFoundError(f"{FLAGS.model_dir} has no spm.model; pass --spm_model_file")
        if own and spm != own and file_io.read_bytes(spm) != file_io.read_bytes(own):
            raise ValueError(
                f"--spm_model_file={spm} is not {own}, the model's own SentencePiece model: its ids would "
                "mean other pieces; leave the flag out"
            )
        span_settings = None
        if FLAGS.task == "span":  # what run_squad kept in the model, the flags given replacing it
            given = {name: FLAGS[name].value for name in SPAN_FLAGS}
            span_settings = SpanSettings.of(model, FLAGS.max_seq_length, **given)
        # The directory's casing for the pretrained models; a task model keeps its own.
        pretrained = FLAGS.task in ("encoder", "pretraining")
        sizing = {} if FLAGS.sub_batch_size is None else {"sub_batch_size": FLAGS.sub_batch_size}
        path = export_saved_model(
            model,
            spm,
            FLAGS.export_dir,
            FLAGS.task,
            max_seq_length=FLAGS.max_seq_length,
            pair=FLAGS.text_pair,
            span_settings=span_settings,
            precision=FLAGS.precision,
            jit_compile=FLAGS.jit_compile,
            do_lower_case=model_files.do_lower_case(FLAGS.model_dir) if pretrained else None,
            keep_accents=model_files.keep_accents(FLAGS.model_dir) if pretrained else None,
            **sizing,
        )
    except (ValueError, FileNotFoundError, ServingError, file_io.DiskFullError) as error:
        print(f"export_saved_model: error: {error}", file=sys.stderr)
        return 1
    print(f"export_saved_model: wrote {path}", file=sys.stderr)
    warning = _unversioned_warning(FLAGS.export_dir)
    if warning:
        print(f"export_saved_model: warning: {warning}", file=sys.stderr)
    return 0


def _unversioned_warning(export_dir):
    """What to say when export_dir's name is not a version number, which TF Serving needs; None when it is.

    A warning, not a refusal: the SavedModel is whole and loads anywhere else (tf.saved_model.load, Vertex
    AI's prebuilt containers, which take the folder that holds saved_model.pb; converters).
    """
    folder = export_dir.rstrip("/")
    if re.fullmatch(r"[0-9]+", folder.rsplit("/", 1)[-1]):
        return None
    return (
        f"TF Serving will not load {export_dir}: it serves the folders named by a version number (1, 2, ...) "
        f"under its --model_base_path; to serve it, export to {folder}/1 and start the server with "
        f"--model_base_path={folder}"
    )


if __name__ == "__main__":
    app.run(main)
