"""Files albert_tf reads or writes go through here: local paths, or any file system TensorFlow has (gs://,
s3:// with tensorflow-io, hdfs://, ram://), through `tf.io.gfile`. The exception is the pretraining-data
builder's input and output, which go through file_systems.py (the os module, or Apache Beam's file systems).

Writers publish: a file is written under a temporary name in its folder and renamed over its path, so a
reader sees the old content or the new, never half of it. On a local disk the rename is atomic. Object
stores have no rename: TensorFlow's GCS file system copies the object and deletes the original, so a file
still appears whole (an object is written in one upload), but a folder appears file by file; publishing a
folder there moves its files one by one, the file that marks it complete last (`saved_model.pb` for a
SavedModel).

Local paths use the os module, so code without TensorFlow (the pretraining-data builder's workers) can
write locally without importing it; TensorFlow is imported for the first remote path.
"""

import contextlib
import errno
import glob as local_glob
import io
import os
import shutil
import tempfile
import uuid


class DiskFullError(OSError):
    """A file or folder could not be written: its disk is full (or the quota spent). The message names it;
    what was there before is unchanged, as writers publish through temporary names."""


def is_disk_full(error):
    """Whether an error of a writer (the os module's, TensorFlow's, h5py's, Keras') says the disk is full."""
    if (
        isinstance(error, DiskFullError)
        or isinstance(error, OSError)
        and error.errno in (errno.ENOSPC, errno.EDQUOT)
    ):
        return True
    return any(text in str(error) for text in ("No space left on device", "Disk quota exceeded"))


@contextlib.contextmanager
def disk_full_named(path):
    """Runs the block that writes path; a full disk becomes DiskFullError naming path."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as error:
        if is_disk_full(error):
            raise DiskFullError(f"no space left on the disk of {path}: it could not be written") from None
        raise


def is_remote(path):
    """Whether path names a file system other than this machine's disks (it has a scheme://)."""
    return "://" in os.fspath(path)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def join(*parts):
    """os.path.join, for local and remote paths alike (remote paths use "/")."""
    return os.path.join(*[os.fspath(part) for part in parts])


def exists(path):
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def size(path):
    """The file's size in bytes."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def modified(path):
    """When path was last written (nanoseconds); FileNotFoundError when it is not there."""
    if is_remote(path):
        import tensorflow as tf

        try:
            return _gfile().stat(path).mtime_nsec
        except tf.errors.NotFoundError:
            raise FileNotFoundError(path) from None
    return os.stat(path).st_mtime_ns


def isdir(path):
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def makedirs(path):
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


class FolderError(ValueError):
    """The folder an output goes into cannot be made (a file in the way, no permission); the message names
    the flag and the folder."""


def missing_folders(folder):
    """folder and those of its parents that do not exist yet, outermost first."""
    missing = []
    while folder and not exists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder or is_remote(parent) != is_remote(folder):
            break  # the root, or the scheme:// of a file system
        folder = parent
    return missing[::-1]


def check_folder_path(path, flag):
    """FolderError naming `flag` when a local path that a command makes as a folder (an --output_dir) is a
    file, or lies under one: found before any work, not when the first file is written. Paths on other file
    systems are left to their writes (object stores have no files in the way)."""
    if is_remote(path):
        return
    folder = os.path.abspath(path)
    missing = missing_folders(folder)
    existing = os.path.dirname(missing[0]) if missing else folder  # the deepest part there already
    if not os.path.isdir(existing):
        raise FolderError(f"{flag}={path}: {existing} is a file, not a folder")


@contextlib.contextmanager
def output_folders(paths, flag):
    """Makes the folders that the output files `paths` go into (local or remote), as TensorFlow's own
    writers do, for a command whose outputs may go to a folder not made yet (`--output_file=records/x@16`).

    If the block fails, the folders made here are removed again while still empty, so a failed command
    leaves nothing behind. FolderError (naming `flag`) when a folder cannot be made.
    """
    made = []
    for path in paths:
        folder = os.path.dirname(os.fspath(path) if is_remote(path) else os.path.abspath(path))
        for missing in missing_folders(folder):
            try:
                makedirs(missing)
            except Exception as error:  # OSError locally, tf.errors.OpError on other file systems
                remove_empty(made)
                raise FolderError(f"{flag}: cannot make the folder {missing} for {path} ({error})") from None
            made.append(missing)
        if not isdir(folder):
            remove_empty(made)
            raise FolderError(f"{flag}: {folder}, the folder of {path}, is a file")
        if isdir(path):  # found before the work, not when the finished output is renamed onto it
            remove_empty(made)
            raise FolderError(f"{flag}: {path} is a folder; name a file (in it, or beside it)")
    try:
        yield
    except BaseException:
        remove_empty(made)
        raise


def remove_empty(folders):
    """Removes those of folders (outermost first) that are empty, innermost first."""
    for folder in reversed(folders):
        with contextlib.suppress(Exception):
            if not isdir(folder) or listdir(folder):
                continue
            if is_remote(folder):
                rmtree(folder)
            else:
                os.rmdir(folder)


def glob(pattern):
    """Sorted matches of a glob pattern."""
    return sorted(_gfile().glob(pattern) if is_remote(pattern) else local_glob.glob(pattern))


def listdir(path):
    return sorted(_gfile().listdir(path) if is_remote(path) else os.listdir(path))


def remove(path):
    """Removes a file if it exists."""
    if is_remote(path):
        if _gfile().exists(path):
            _gfile().remove(path)
    elif os.path.exists(path):
        os.remove(path)


def rmtree(path):
    """Removes a folder and what it holds, if it exists."""
    if is_remote(path):
        import tensorflow as tf

        # Gone already (or, on ram://, a name listed by prefix but absent).
        with contextlib.suppress(tf.errors.NotFoundError):
            _gfile().rmtree(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def open_file(path, mode="r", encoding="utf-8", newline=None):
    """A file object for reading or writing; text modes decode and encode as `encoding` (newline: as open's).

    A missing file raises FileNotFoundError on any file system.
    """
    binary = "b" in mode
    if not is_remote(path):
        return open(path, mode, encoding=None if binary else encoding, newline=None if binary else newline)  # noqa: SIM115
    if "r" in mode and not _gfile().exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    handle = _gfile().GFile(path, mode.replace("t", "").replace("b", "") + "b")
    if binary:
        return handle
    raw = _RawGFile(handle)
    buffered = io.BufferedReader(raw) if raw.readable() else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, newline=newline)


class _RawGFile(io.RawIOBase):
    """A binary GFile as a raw stream: io.TextIOWrapper needs readable(), readinto() and the like, which GFile
    lacks (text over a bare GFile fails with "'GFile' object has no attribute 'readable'")."""

    def __init__(self, handle):
        self._handle = handle

    def readable(self):
        return self._handle.mode.startswith("r")

    def writable(self):
        return not self.readable()

    def readinto(self, buffer):
        data = self._handle.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def write(self, data):
        self._handle.write(bytes(data))
        return len(data)

    def close(self):
        if not self.closed:
            self._handle.close()
        super().close()


def read_bytes(path):
    with open_file(path, "rb") as handle:
        return handle.read()


def read_text(path, encoding="utf-8"):
    return read_bytes(path).decode(encoding)


def copy(source, destination):
    """Copies a file (any file systems), replacing destination through a temporary name."""
    replace_with(destination, lambda temporary: _copy(source, temporary))


def _copy(source, destination):
    if is_remote(source) or is_remote(destination):
        _gfile().copy(source, destination, overwrite=True)
    else:
        shutil.copyfile(source, destination)


def _rename(source, destination):
    if is_remote(source) or is_remote(destination):
        _gfile().rename(source, destination, overwrite=True)
    else:
        os.replace(source, destination)


def _temporary_name(path):
    """A name beside path, ending like it (Keras insists on ".weights.h5" and ".keras" endings)."""
    folder, name = os.path.split(os.fspath(path))
    return join(folder, f".tmp-{uuid.uuid4().hex[:12]}-{name}")


def replace_with(path, write):
    """Calls write(temporary path) beside path, then renames the result over path.

    `write` writes a file at the path it is given: any writer that takes a TensorFlow path, or a Keras
    save. A writer that only writes local files goes through `replace_with_local`.
    """
    path = os.fspath(path) if is_remote(path) else os.path.abspath(path)
    temporary = _temporary_name(path)
    try:
        with disk_full_named(path):
            write(temporary)
            _rename(temporary, path)
    except BaseException:
        remove(temporary)
        raise


def replace_with_local(path, write):
    """replace_with for writers of local files only: write(local path), then the file is copied to path."""
    if not is_remote(path):
        return replace_with(path, write)
    with tempfile.TemporaryDirectory() as folder:
        local = os.path.join(folder, os.path.basename(os.fspath(path)))
        write(local)
        copy(local, path)


def write_atomically(path, data):
    """Writes bytes to path through a temporary name, then renames it over path."""

    def write(temporary):
        with open_file(temporary, "wb") as handle:
            handle.write(data)

    replace_with(path, write)


def publish_directory(path, write, last=()):
    """Calls write(temporary folder) beside path, then makes it path (which must not exist).

    Locally the folder is renamed (atomic), with the permissions of one made by os.makedirs (0755 under the
    usual umask 022: a model server often runs as another user), not the 0700 of a temporary folder. On
    other file systems its files are moved one by one, those named in `last` (file names) after the rest.
    """
    path = os.fspath(path) if is_remote(path) else os.path.abspath(path)
    parent = os.path.dirname(path)
    makedirs(parent)
    temporary = join(parent, f".{os.path.basename(path)}.tmp-{uuid.uuid4().hex[:12]}")
    makedirs(temporary)
    try:
        with disk_full_named(path):
            write(temporary)
            if is_remote(path):
                _move_files(temporary, path, last)
            else:
                os.chmod(temporary, 0o777 & ~_umask())
                os.rename(temporary, path)
    finally:
        rmtree(temporary)
    return path


def _move_files(source, destination, last):
    gfile = _gfile()
    files = []
    for folder, _, names in gfile.walk(source):
        relative = folder[len(source) :].strip("/")
        # ram:// lists by name prefix: "assets" also lists "assets.extra/..." as a file ".extra". Skip such.
        names = [
            name for name in names if not gfile.isdir(join(folder, name)) and gfile.exists(join(folder, name))
        ]
        files.extend(join(relative, name) if relative else name for name in names)
    files.sort(key=lambda name: (os.path.basename(name) in last, name))
    for name in files:
        gfile.makedirs(os.path.dirname(join(destination, name)))
        gfile.rename(join(source, name), join(destination, name), overwrite=True)


def _umask():
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


@contextlib.contextmanager
def local_copy(path):
    """A local path holding path's content (path itself when it is local), for readers of local files only."""
    if not is_remote(path):
        yield os.fspath(path)
        return
    with tempfile.TemporaryDirectory() as folder:
        local = os.path.join(folder, os.path.basename(os.fspath(path)))
        _copy(path, local)
        yield local
