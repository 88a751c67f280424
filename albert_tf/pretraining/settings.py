"""The settings of a pretraining run: the `run_pretraining` flags, each default defined here once.

No TensorFlow here: the entry point defines its flags from these fields before anything heavy is imported.
"""

import dataclasses

from albert_tf import file_io

STRATEGIES = ("default", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "bfloat16", "float16")
OPTIMIZERS = ("lamb", "adamw")
POSITIVE = (
    "num_train_steps", "save_checkpoints_steps", "steps_per_loop", "log_every_steps",
    "gradient_accumulation_steps", "train_batch_size", "eval_batch_size", "max_eval_steps",
    "max_seq_length", "max_predictions_per_seq",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class PretrainingSettings:
    """Everything a pretraining run needs (help texts: `HELP`)."""

    albert_config_file: str
    input_file: str
    output_dir: str
    eval_input_file: str | None = None
    spm_model_file: str | None = None
    init_checkpoint: str | None = None
    do_train: bool = True
    do_eval: bool = True
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    optimizer: str = "lamb"
    learning_rate: float = 0.00176
    poly_power: float = 1.0
    num_train_steps: int = 125_000
    num_warmup_steps: int = 3125
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    eval_every_steps: int = 0
    max_eval_steps: int = 100
    strategy: str = "default"
    tpu: str | None = None
    jit_compile: bool = False
    mixed_precision: str = "float32"
    gradient_accumulation_steps: int = 1
    remat: bool = False
    steps_per_loop: int = 100
    log_every_steps: int = 100
    seed: int = 12345
    online_masking: bool = False
    masked_lm_prob: float = 0.15
    shuffle_buffer_size: int = 10_000
    rollback_on_collapse: bool = False
    rollback_learning_rate_factor: float = 0.5
    continuous_eval: bool = False
    continuous_eval_timeout: int = 3600

    def check(self):
        """Raises ValueError naming the flag of the first value that cannot work."""
        for name in POSITIVE:
            if getattr(self, name) <= 0:
                raise ValueError(f"--{name} must be positive, got {getattr(self, name)}")
        if not 0 < self.masked_lm_prob <= 1:
            raise ValueError(f"--masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
        if self.eval_every_steps < 0:
            raise ValueError(
                f"--eval_every_steps must be 0 (only at the end) or positive, got {self.eval_every_steps}"
            )
        for name, allowed in (
            ("strategy", STRATEGIES),
            ("mixed_precision", PRECISIONS),
            ("optimizer", OPTIMIZERS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"--{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if not self.do_train and not self.do_eval:
            raise ValueError("--nodo_train and --nodo_eval: nothing to do")
        if self.do_eval and not self.eval_input_file and (not self.do_train or self.eval_every_steps):
            raise ValueError("evaluation needs --eval_input_file")
        if self.continuous_eval and not self.eval_input_file:
            raise ValueError("--continuous_eval needs --eval_input_file")
        file_io.check_folder_path(self.output_dir, "--output_dir")


HELP = {
    "albert_config_file": "The model's albert_config.json, or a shipped config's name (albert_tiny, "
    "albert_base, albert_large, albert_xlarge, albert_xxlarge, bert_base, bert_large).",
    "input_file": "Training records: a build's manifest (*.manifest.json: each worker reads only its shards, "
    "each epoch in its own order; a resumed run passes over at most one shard per lane, by record headers "
    "when uncompressed) or comma-separated TFRecord globs (resuming reads the consumed records again); "
    "`sample`: the shipped sample's.",
    "output_dir": "Model directory, checkpoints, summaries and results go here (local or gs://...).",
    "eval_input_file": "Held-out records (a manifest or globs) for evaluation; `sample`: the shipped "
    "sample's.",
    "spm_model_file": "SentencePiece model, copied into the model directory; `sample`: the shipped sample's.",
    "init_checkpoint": "Weights to start from: a model directory, an original TF1 release (directory or "
    "checkpoint prefix) or a Hugging Face directory (converted in memory).",
    "do_train": "Train (else evaluate the latest checkpoint in --output_dir, or --init_checkpoint).",
    "do_eval": "Evaluate on --eval_input_file after training (and every --eval_every_steps).",
    "max_seq_length": "Sequence length of the records.",
    "max_predictions_per_seq": "Masked positions per record.",
    "train_batch_size": "Global batch size (all replicas, one optimizer update).",
    "eval_batch_size": "Global evaluation batch size.",
    "optimizer": "Optimizer (the original's LAMB or AdamW).",
    "learning_rate": "Peak learning rate.",
    "poly_power": "Exponent of the polynomial decay.",
    "num_train_steps": "Optimizer updates (also --train_step; in either spelling the last given wins).",
    "num_warmup_steps": "Linear warmup steps (also --warmup_step; in either spelling the last given wins).",
    "save_checkpoints_steps": "Steps between training checkpoints.",
    "keep_checkpoint_max": "Training checkpoints kept.",
    "eval_every_steps": "Steps between evaluations during training (0: only at the end).",
    "max_eval_steps": "Most evaluation batches.",
    "strategy": "Distribution strategy.",
    "tpu": "TPU name or grpc:// address (--strategy=tpu); 'local' on a TPU VM.",
    "jit_compile": "Compile the training step (forward and backward) and the evaluation step with XLA.",
    "mixed_precision": "Compute dtype (float16 with dynamic loss scaling).",
    "gradient_accumulation_steps": "Micro-batches per update (same update, less memory).",
    "remat": "Recompute each layer's activations in the backward pass instead of keeping them: the "
    "activation memory of about one layer instead of all, for about one more forward pass a step. Dropout "
    "drops the same units in both passes, so the updates are those without it. For long sequences or large "
    "batches that do not fit otherwise.",
    "steps_per_loop": "Steps per call into the compiled training loop.",
    "log_every_steps": "Steps between progress lines and summaries.",
    "seed": "Seed of initialization, data order and dropout.",
    "online_masking": "Draw new whole-word n-gram masks every epoch in tf.data.",
    "masked_lm_prob": "Share of tokens masked (--online_masking only).",
    "shuffle_buffer_size": "Records in the training shuffle buffer (records without a manifest only).",
    "rollback_on_collapse": "When the run collapses (the smoothed training loss over twice its best and "
    "by more than a quarter of the chance loss, or the held-out masked-LM accuracy back at the most frequent "
    "token's), go back to the newest checkpoint before "
    "it, lower the learning rate by --rollback_learning_rate_factor and go on with the next batches (at most "
    "3 times). Without it the run only says so, in its progress line and evaluation history.",
    "rollback_learning_rate_factor": "What each rollback multiplies the learning rate by.",
    "continuous_eval": "Train nothing: evaluate each checkpoint of --output_dir as it lands, beside a "
    "training run with the same flags, until the one of --num_train_steps (TF_CONFIG's `evaluator` task does "
    "this by itself). Results and summaries go to --output_dir/continuous_eval/.",
    "continuous_eval_timeout": "Seconds --continuous_eval waits for a new checkpoint before it stops.",
}
CHOICES = {"strategy": STRATEGIES, "mixed_precision": PRECISIONS, "optimizer": OPTIMIZERS}
REQUIRED = ("albert_config_file", "input_file", "output_dir")
