"""Writing files and folders so that readers see the old content or the new, never half of it."""

import os
import shutil
import tempfile


def replace_with(path, write):
    """Calls write(temporary path) in path's folder, then renames the result over path.

    The temporary name ends like `path` (Keras insists on ".weights.h5" and ".keras" endings).
    """
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=f"-{name}")
    os.close(descriptor)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_atomically(path, data):
    """Writes bytes to path through a temporary file in the same folder, then renames it over path."""

    def write(temporary):
        with open(temporary, "wb") as file:
            file.write(data)

    replace_with(path, write)


def publish_directory(path, write):
    """Calls write(temporary folder) next to path, then renames the folder to path (which must not exist).

    The folder gets the permissions of one made by os.makedirs (0755 under the usual umask 022), not the
    0700 of a temporary folder: a model server often runs as another user.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.tmp-")
    try:
        write(temporary)
        os.chmod(temporary, 0o777 & ~_umask())
        os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return path


def _umask():
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask
