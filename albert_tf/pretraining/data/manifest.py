"""The manifest beside a build's shards: what was built, from what, and how many records each shard holds.

    records/train-00000-of-00004 ... records/train-00003-of-00004     (--output_file=records/train@4)
    records/train.manifest.json

JSON with `scheme_version` (SCHEME_VERSION: how records were made and ordered; readers refuse another),
`settings` (every flag that decides the bytes; the SentencePiece model as a path relative to the manifest's
folder and `spm_model_sha256`, the SHA-256 of its bytes, which identifies it wherever it was copied),
`inputs` (path, bytes), `shards` (file name relative to the manifest, records, bytes) and `statistics` (the
builder's counters). It holds no timing, so local and Beam
builds of the same inputs write the same manifest, byte for byte.

Reading the shards in the manifest's order, each from its first record, is the build's global shuffle; a run
reads them in lanes (albert_tf.pretraining.lanes), and finds where it resumes from the counts alone. A
shard's `bytes` let a run refuse a shard cut short or replaced before its first step.
"""

import dataclasses
import json
import os
import re

from albert_tf.file_systems import LocalFiles

# 2: records keyed by hash(seed, work unit, index), shards are key ranges sorted by key (a global shuffle);
# work units are blocks of bytes of each input file. (1, without a manifest: blocks in corpus order through a
# 10,000-record shuffle buffer, dealt round-robin.)
SCHEME_VERSION = 2

MANIFEST_SUFFIX = ".manifest.json"
_SHARDED = re.compile(r"^(?P<prefix>.+)@(?P<count>\d+)$")
_SHARD_SUFFIX = re.compile(r"-\d{5,}-of-\d{5,}$")


def output_paths(spec):
    """Output shard paths from a comma-separated list, where `PREFIX@N` stands for N shards
    `PREFIX-00000-of-0000N` ... (the sharded-file names of Beam and TensorFlow Datasets)."""
    paths = []
    for item in (part.strip() for part in spec.split(",")):
        sharded = _SHARDED.match(item)
        if sharded:
            count = int(sharded["count"])
            if count < 1:
                raise ValueError(f"--output_file: {item!r} asks for {count} shards; give at least 1")
            paths.extend(f"{sharded['prefix']}-{i:05d}-of-{count:05d}" for i in range(count))
        elif item:
            paths.append(item)
    if not paths:
        raise ValueError("--output_file is empty: give output files, comma-separated, or PREFIX@SHARDS")
    if len(set(paths)) != len(paths):
        raise ValueError(f"--output_file names a file twice: {spec}")
    return paths


def shard_prefix(path):
    """`records/train` of a shard path `records/train-00003-of-00016`; None for a path without that suffix."""
    prefix = _SHARD_SUFFIX.sub("", path)
    return prefix if prefix != path else None


def default_manifest_path(output_files):
    """The first output's path without its shard suffix, plus `.manifest.json`."""
    return (shard_prefix(output_files[0]) or output_files[0]) + MANIFEST_SUFFIX


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A build's manifest (see module docstring). `path` is where it was read from or written to."""

    settings: dict
    inputs: list
    shards: list
    statistics: dict
    scheme_version: int = SCHEME_VERSION
    path: str = ""

    @property
    def records(self):
        return sum(shard["records"] for shard in self.shards)

    def shard_paths(self):
        """The shards' paths, in order: names relative to the manifest's folder joined to it, absolute paths
        and URIs as they are (see relative_name)."""
        directory = os.path.dirname(self.path)
        return [_resolve(shard["file"], directory) for shard in self.shards]

    def tokenizer_path(self):
        """The SentencePiece model the records were built with, resolved from the manifest's folder."""
        name = self.settings.get("spm_model_file")
        return _resolve(name, os.path.dirname(self.path)) if name else None

    @property
    def tokenizer_sha256(self):
        """The SHA-256 (hex) of the SentencePiece model's bytes (None in manifests written before it)."""
        return self.settings.get("spm_model_sha256")

    def to_json(self):
        content = dataclasses.asdict(self)
        del content["path"]
        return json.dumps(content, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text, path):
        """A manifest from its JSON text; ValueError naming path when it is not one of this scheme."""
        try:
            manifest = cls(**json.loads(text), path=path)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a pretraining-data manifest ({error})") from None
        if manifest.scheme_version != SCHEME_VERSION:
            raise ValueError(
                f"{path}: scheme_version {manifest.scheme_version}, this reader knows {SCHEME_VERSION}; "
                "rebuild the records with this version's create_pretraining_data"
            )
        return manifest

    @classmethod
    def load(cls, path, files=LocalFiles):
        with files.open_read(path) as handle:
            return cls.from_json(handle.read().decode("utf-8"), path)

    def write(self, files=LocalFiles):
        """Writes to self.path through a temporary name, then renames it."""
        temporary = f"{self.path}.tmp-{os.getpid()}"
        try:
            with files.open_write(temporary) as handle:
                handle.write(self.to_json().encode("utf-8"))
            files.rename(temporary, self.path)
        finally:
            files.remove(temporary)


def relative_name(path, manifest_path):
    """path as the manifest stores it: relative to the manifest's folder when the shard lies in or under it;
    otherwise its absolute path, or its URI as it is (gs://...). Either resolves wherever the manifest is
    read from: a manifest written away from its shards, or a local manifest of remote shards."""
    if "://" not in path:
        path = os.path.abspath(path)
    directory = os.path.dirname(manifest_path if "://" in manifest_path else os.path.abspath(manifest_path))
    if directory and path.startswith(directory.rstrip("/") + "/"):
        return path[len(directory.rstrip("/")) + 1 :]
    return path


def path_from_manifest(path, manifest_path):
    """path as a manifest stores a file it refers to, wherever the file lies: relative to the manifest's
    folder (`../spm.model` too) when both are local, so the pair can move together; a URI as it is; a local
    file named by a remote manifest by its absolute path."""
    if "://" in path:
        return path
    if "://" in manifest_path:
        return os.path.abspath(path)
    return os.path.relpath(os.path.abspath(path), os.path.dirname(os.path.abspath(manifest_path)))


def _resolve(name, directory):
    return name if "://" in name or os.path.isabs(name) else os.path.join(directory, name)
