"""Writing a file so that readers see the old content or the new, never half of it."""

import os
import tempfile


def write_atomically(path, data):
    """Writes bytes to path through a temporary file in the same folder, then renames it over path."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
