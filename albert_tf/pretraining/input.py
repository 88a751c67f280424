"""The input of a pretraining run: training and evaluation datasets, and where a resumed run starts reading.

Records built by this version's `create_pretraining_data` come with a manifest: training then reads them in
lanes of shards (albert_tf.pretraining.lanes): each input pipeline reads only its own shards, each epoch in
its own order, the same global batches for any replica count, and a resumed run opens in each lane the
shard it stands in. Records of other builders (the original ALBERT's, older ones of ours) have none: they
are read through a shuffle buffer, and a resumed run reads again, unparsed, the records its checkpointed
steps consumed (the run says how many first).
"""

import hashlib
import re

import tensorflow as tf

from albert_tf import file_io
from albert_tf.pretraining import dataset
from albert_tf.pretraining.data.manifest import MANIFEST_SUFFIX, default_manifest_path
from albert_tf.pretraining.dataset import OnlineMasking, check_records
from albert_tf.pretraining.lanes import Lanes
from albert_tf.text.tokenizer import TokenizerError, check_fits_vocabulary, load_sentencepiece

CASING = {True: "lowercased", False: "cased"}  # a manifest's do_lower_case, in words
MARKS = {True: "with its combining marks kept", False: "with combining marks dropped"}  # keep_accents


def text_settings(manifest):
    """(do_lower_case, keep_accents) of a build (manifests without them: the original's normalization)."""
    return manifest.settings.get("do_lower_case", True), manifest.settings.get("keep_accents", False)


def described(settings):
    """(do_lower_case, keep_accents) in words: "lowercased text with combining marks dropped"."""
    lowercased, keeps_accents = settings
    return f"{CASING[lowercased]} text {MARKS[keeps_accents]}"


def find_manifest(patterns, flag):
    """The Manifest behind patterns, or None.

    patterns names a manifest (`*.manifest.json`), or comma-separated TFRecord globs: these count as a build
    when they match exactly the shards that the manifest beside their first file lists.
    """
    return _manifests(patterns, flag)[0]


def _manifests(patterns, flag):
    """(find_manifest's Manifest, the Manifest of the build whose shards patterns match, all or some, else
    None): what a manifest says of its build (tokenizer, casing, shape) holds for each of its shards."""
    if patterns.strip().endswith(MANIFEST_SUFFIX):
        if not file_io.exists(patterns.strip()):
            raise ValueError(f"{flag}: {patterns.strip()} does not exist")
        manifest = dataset.load_manifest(patterns.strip())
        return manifest, manifest
    paths = dataset.expand_file_patterns(patterns, flag=flag)
    candidate = default_manifest_path(paths)
    if not file_io.exists(candidate):
        return None, None
    manifest = dataset.load_manifest(candidate)
    shards, paths = set(manifest.shard_paths()), set(paths)
    if not paths <= shards:
        return None, None
    return (manifest if paths == shards else None), manifest


def _resized_shard(manifest):
    """(path, size, listed size) of the first shard whose size is not its manifest's, or None (manifests
    written before sizes were recorded list none; a missing shard is check_records' to name)."""
    for shard, path in zip(manifest.shards, manifest.shard_paths(), strict=True):
        if "bytes" in shard and file_io.exists(path):
            size = file_io.size(path)
            if size != shard["bytes"]:
                return path, size, shard["bytes"]
    return None


def _check_sizes(flag, manifest):
    """ValueError naming a shard whose size is not its manifest's: cut short or replaced, it would fail, or
    train on other records, only when the run reaches it."""
    resized = _resized_shard(manifest)
    if resized:
        path, size, listed = resized
        raise ValueError(
            f"{flag}: {path} holds {size:,} bytes, but {manifest.path} lists it with {listed:,}: the shard "
            "was cut short or replaced (or is still being copied). Rebuild it (create_pretraining_data "
            "writes the same bytes again) or copy it whole"
        )


class PretrainingInput:
    """Datasets of a run's training and evaluation records (see the module docstring)."""

    def __init__(self, settings, vocab_size, log):
        s = self.settings = settings
        self.log = log
        self.vocab_size = vocab_size
        self.masking = OnlineMasking(vocab_size, s.masked_lm_prob) if s.online_masking else None
        self.train_manifest = self.eval_files = None
        self.manifests = {}  # flag → the manifest of the build its records are of (all or some shards)
        self.train_context = None  # this process's tf.distribute.InputContext, once training reads
        if s.do_train:
            self.train_manifest, described = _manifests(s.input_file, "--input_file")
            self._check(self._files(s.input_file, self.train_manifest), "--input_file", described)
        if s.do_eval and s.eval_input_file:
            manifest, described = _manifests(s.eval_input_file, "--eval_input_file")
            self.eval_files = self._files(s.eval_input_file, manifest)
            self._check(self.eval_files, "--eval_input_file", described)
        self._check_same_build_settings()

    @staticmethod
    def _files(patterns, manifest):
        return manifest.shard_paths() if manifest else dataset.expand_file_patterns(patterns)

    def _check(self, files, flag, manifest):
        s = self.settings
        built = manifest.settings["options"]["max_seq_length"] if manifest is not None else s.max_seq_length
        if built != s.max_seq_length:
            raise ValueError(
                f"{flag}: {manifest.path} was built with max_seq_length {built}, but --max_seq_length="
                f"{s.max_seq_length}"
            )
        if manifest is not None:
            self.manifests[flag] = manifest
            _check_sizes(flag, manifest)
            self._check_tokenizer(flag, manifest)
        check_records(
            files, s.max_seq_length, s.max_predictions_per_seq, flag, need_masks=not s.online_masking
        )

    def _check_tokenizer(self, flag, manifest):
        """The records hold ids of the SentencePiece model their manifest names: it must fit the model's
        vocabulary, and be --spm_model_file when that is given. Models are compared by content (the
        manifest's SHA-256: a copy anywhere is the same model), from any working directory."""
        s = self.settings
        built, expected = manifest.tokenizer_path(), _built_sha256(manifest)
        on_disk = built if built and file_io.exists(built) else None
        if s.spm_model_file and expected is not None and _sha256(s.spm_model_file) != expected:
            given = load_sentencepiece(s.spm_model_file).get_piece_size()
            if on_disk and _sha256(on_disk) != expected:  # the same path, the file replaced since the build
                built_as = f"{built} as it was then (SHA-256 {expected[:12]}...; it has been replaced since)"
            elif on_disk:
                built_as = f"{built} ({load_sentencepiece(on_disk).get_piece_size():,} pieces)"
            else:
                built_as = f"{built} (SHA-256 {expected[:12]}..., not found there)"
            raise TokenizerError(
                f"{flag}: {manifest.path} was built with {built_as}, not with "
                f"--spm_model_file={s.spm_model_file} ({given:,} pieces): its ids mean other pieces"
            )
        model = s.spm_model_file or on_disk
        if model:
            check_fits_vocabulary(model, self.vocab_size, s.albert_config_file)

    def _check_same_build_settings(self):
        """Held-out records must be tokenized as the training records: the same SentencePiece model (by
        content) and casing, or their metrics measure other pieces."""
        if len(self.manifests) < 2:
            return
        train, held_out = self.manifests["--input_file"], self.manifests["--eval_input_file"]
        tokenizers = [_built_sha256(manifest) for manifest in (train, held_out)]
        if None not in tokenizers and tokenizers[0] != tokenizers[1]:
            raise TokenizerError(
                f"--eval_input_file: {held_out.path} was built with {held_out.tokenizer_path()}, but "
                f"--input_file's {train.path} with {train.tokenizer_path()}: its ids mean other pieces"
            )
        built = [text_settings(manifest) for manifest in (train, held_out)]
        if built[0] != built[1]:
            raise TokenizerError(
                f"--eval_input_file: {held_out.path} was built from {described(built[1])}, but "
                f"--input_file's {train.path} from {described(built[0])}"
            )

    def check_starting_model(self, source, spm_model, do_lower_case, keep_accents=False):
        """--init_checkpoint's model must read the records' ids as they were built: with the SentencePiece
        model (by content), the casing and the marks each manifest names. TokenizerError naming both
        otherwise (do_lower_case None: the model does not say; it is not compared)."""
        for flag, manifest in self.manifests.items():
            expected = _built_sha256(manifest)
            if spm_model and expected is not None and _sha256(spm_model) != expected:
                raise TokenizerError(
                    f"--init_checkpoint={source}: its SentencePiece model {spm_model} is not the one "
                    f"{manifest.path} ({flag}) was built with, {manifest.tokenizer_path()}: the records' ids "
                    "mean other pieces to it"
                )
            built = text_settings(manifest)
            if do_lower_case is not None and (do_lower_case, keep_accents) != built:
                raise TokenizerError(
                    f"--init_checkpoint={source} takes {described((do_lower_case, keep_accents))}, but "
                    f"{manifest.path} ({flag}) was built from {described(built)}"
                )

    @property
    def do_lower_case(self):
        """Whether the training text was lowercased: its manifest says (records without one: the released
        models' uncased convention)."""
        manifest = self.manifests.get("--input_file")
        return text_settings(manifest)[0] if manifest is not None else True

    @property
    def keep_accents(self):
        """Whether the training text kept its combining marks: its manifest says (records without one: the
        original's normalization, which drops them)."""
        manifest = self.manifests.get("--input_file")
        return text_settings(manifest)[1] if manifest is not None else False

    def train_dataset(self, input_context, start_batch):
        """Per-replica training batches from global batch number start_batch on."""
        s = self.settings
        self.train_context = input_context
        per_replica = input_context.get_per_replica_batch_size(s.train_batch_size)
        shapes = {"max_seq_length": s.max_seq_length, "max_predictions_per_seq": s.max_predictions_per_seq}
        if self.train_manifest is not None:
            return dataset.manifest_dataset(
                self.train_manifest, global_batch_size=s.train_batch_size, batch_size=per_replica,
                input_context=input_context, online_masking=self.masking, seed=s.seed,
                start_batch=start_batch, **shapes,
            )  # fmt: skip
        # Each step takes one global batch, shared evenly by the input pipelines (one per worker).
        skipped = start_batch * s.train_batch_size // input_context.num_input_pipelines
        return dataset.pretraining_dataset(
            s.input_file, batch_size=per_replica, is_training=True, input_context=input_context,
            online_masking=self.masking, seed=s.seed, shuffle_buffer_size=s.shuffle_buffer_size,
            skip_records=skipped, **shapes,
        )  # fmt: skip

    def resume_cost(self, start_batch):
        """A line saying what resuming at start_batch costs, or None when it costs nothing."""
        if not start_batch:
            return None
        records = start_batch * self.settings.train_batch_size
        if self.train_manifest is not None:
            lanes = Lanes.of(self.train_manifest, self.settings.train_batch_size, self.settings.seed)
            passed = lanes.resume_reads(range(lanes.count), start_batch)
            return (
                f"input resumes at global batch {start_batch:,} of {self.train_manifest.path}: each of its "
                f"{lanes.count} lane(s) opens the shard it stands in; {passed:,} records are passed over, "
                "unparsed (at most one shard per lane)"
            )
        first = dataset.expand_file_patterns(self.settings.input_file)[0]
        compression = dataset.record_compression(first)
        record = next(iter(tf.data.TFRecordDataset(first, compression_type=compression)))
        size = records * (len(record.numpy()) + 16) / 1e9
        return (
            f"--input_file has no manifest (records of another builder): finding the input position means "
            f"reading {records:,} records again (about {size:.1f} GB); records built by this version's "
            "create_pretraining_data resume at once"
        )

    def damaged_shard(self, batch):
        """Where the training records fail to read at global batch `batch`: a line naming the shard (one
        whose size is not its manifest's, else the first of those this process reads at that step that
        fails to read through) and the offset, or None (records without a manifest, or none found)."""
        manifest, s = self.train_manifest, self.settings
        if manifest is None:
            return None
        resized = _resized_shard(manifest)
        if resized:
            return "{} holds {:,} bytes, its manifest lists {:,}".format(*resized)
        paths = manifest.shard_paths()
        lanes = Lanes.of(manifest, s.train_batch_size, s.seed)
        context = self.train_context or tf.distribute.InputContext()
        mine = lanes.of_pipeline(context.num_input_pipelines, context.input_pipeline_id)
        compression = "GZIP" if manifest.settings["gzip"] else ""
        for shard in lanes.shards_read_at(mine, batch):
            try:
                tf.data.TFRecordDataset(paths[shard], compression).reduce(0, lambda count, _: count + 1)
            except tf.errors.DataLossError as error:
                found = re.search(r"(truncated|corrupted) record at \d+", error.message)
                return f"{paths[shard]}: {found[0] if found else error.message.strip()}"
        return None

    def eval_dataset(self, input_context):
        s = self.settings
        return dataset.pretraining_dataset(
            self.eval_files, batch_size=input_context.get_per_replica_batch_size(s.eval_batch_size),
            max_seq_length=s.max_seq_length, max_predictions_per_seq=s.max_predictions_per_seq,
            is_training=False, input_context=input_context, online_masking=self.masking, seed=s.seed,
        )  # fmt: skip


def _built_sha256(manifest):
    """The SHA-256 of the SentencePiece model the records were built with (None when unknown)."""
    built = manifest.tokenizer_path()
    if manifest.tokenizer_sha256 is None and built and file_io.exists(built):  # a manifest before the hash
        return _sha256(built)
    return manifest.tokenizer_sha256


def _sha256(path):
    return hashlib.sha256(file_io.read_bytes(path)).hexdigest()
