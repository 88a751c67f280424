"""Pretrains ALBERT (masked LM + sentence order) on TFRecords from `create_pretraining_data`.

    python -m albert_tf.run_pretraining --flagfile=configs/pretrain/tiny.flags

The same flagfile runs on one CPU, the GPUs of a host (--strategy=mirrored), several hosts
(--strategy=multi_worker_mirrored with TF_CONFIG set on each) or a TPU (--strategy=tpu --tpu=NAME). A run
killed and started again with the same flags resumes from its last checkpoint in --output_dir. See
albert_tf/training/pretraining.py for what the run writes.
"""

import sys

from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json (configs/albert_*.json).")
flags.DEFINE_string("input_file", None, "Training TFRecords: comma-separated globs.")
flags.DEFINE_string("eval_input_file", None, "Held-out TFRecords for evaluation after training (optional).")
flags.DEFINE_string("output_dir", None, "Model directory and training checkpoints go here.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model, copied into the model directory.")
flags.DEFINE_string("init_checkpoint", None, "A model directory to start from (weights only).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record.")
flags.DEFINE_integer("train_batch_size", 4096, "Global batch size (all replicas, one optimizer update).")
flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer (the original's LAMB or AdamW).")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Exponent of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125_000, "Optimizer updates.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Steps between training checkpoints.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Training checkpoints kept.")
flags.DEFINE_integer("max_eval_steps", 100, "Most evaluation batches.")
flags.DEFINE_enum(
    "strategy", "default", ["default", "mirrored", "multi_worker_mirrored", "tpu"], "Distribution strategy."
)
flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (--strategy=tpu); 'local' on a TPU VM.")
flags.DEFINE_bool("jit_compile", False, "Compile the forward and backward pass with XLA.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"], "Compute dtype.")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per update (same update, less memory).")
flags.DEFINE_integer("steps_per_loop", 100, "Steps per call into the compiled training loop.")
flags.DEFINE_integer("log_every_steps", 100, "Steps between progress lines and summaries.")
flags.DEFINE_integer("seed", 12345, "Seed of initialization, data order and dropout.")
flags.DEFINE_bool("online_masking", False, "Draw new whole-word n-gram masks every epoch in tf.data.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Share of tokens masked (--online_masking only).")
flags.DEFINE_integer("shuffle_buffer_size", 10_000, "Records in the training shuffle buffer.")
flags.mark_flags_as_required(["albert_config_file", "input_file", "output_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # TensorFlow's per-save INFO lines would drown the progress line.
    from albert_tf.training import pretraining

    fields = [field.name for field in pretraining.PretrainingSettings.__dataclass_fields__.values()]
    settings = pretraining.PretrainingSettings(**{name: FLAGS[name].value for name in fields})
    try:
        pretraining.run(settings)
    except (ValueError, FileNotFoundError, pretraining.TrainingError) as error:
        print(f"run_pretraining: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    app.run(main)
