"""Where the corpus readers (the pretraining-data builder, the tokenizer's training) read and the builder
writes: this machine's disks, any file system Apache Beam knows (gs://, s3://, hdfs://, and local paths), or
any TensorFlow knows.

The builder imports no TensorFlow (tf.io.gfile would cost every worker 600 MB), so a build under Beam goes
through `apache_beam.io.filesystems.FileSystems`, which is what Dataflow, Flink and Spark workers have, and a
local build through the os module. Both objects offer the same few operations; readers are binary and
seekable, and the builder publishes every file by writing a temporary name and renaming it.
`train_tokenizer`, which runs where TensorFlow is installed, reads through `TensorFlowFiles`.
"""

import glob
import os


class LocalFiles:
    """Paths on this machine."""

    @staticmethod
    def glob(pattern):
        """Sorted paths of the files (not directories) matching a glob pattern."""
        return sorted(path for path in glob.glob(os.path.expanduser(pattern)) if os.path.isfile(path))

    @staticmethod
    def exists(path):
        return os.path.exists(path)

    @staticmethod
    def size(path):
        return os.path.getsize(path)

    @staticmethod
    def open_read(path):
        return open(path, "rb")  # noqa: SIM115 (the caller closes it)

    @staticmethod
    def open_write(path):
        return open(path, "wb")  # noqa: SIM115 (the caller closes it)

    @staticmethod
    def rename(source, destination):
        os.replace(source, destination)

    @staticmethod
    def remove(path):
        if os.path.exists(path):
            os.remove(path)


class TensorFlowFiles:
    """Local paths as LocalFiles; paths with a scheme (gs://, file://, ...) through TensorFlow's file systems
    (file_io), which imports TensorFlow for the first of them. What a corpus reader needs: glob and
    open_read."""

    @staticmethod
    def glob(pattern):
        from albert_tf import file_io

        if not file_io.is_remote(pattern):
            return LocalFiles.glob(pattern)
        return [path for path in file_io.glob(pattern) if not file_io.isdir(path)]

    @staticmethod
    def open_read(path):
        from albert_tf import file_io

        return file_io.open_file(path, "rb")


class BeamFiles:
    """Paths of any file system registered with Apache Beam (needs `pip install -e ".[beam]"`)."""

    @staticmethod
    def _file_systems():
        from apache_beam.io.filesystems import FileSystems

        return FileSystems

    def glob(self, pattern):
        (result,) = self._file_systems().match([pattern])
        return sorted(metadata.path for metadata in result.metadata_list)

    def exists(self, path):
        return self._file_systems().exists(path)

    def size(self, path):
        (result,) = self._file_systems().match([path])
        return result.metadata_list[0].size_in_bytes

    def open_read(self, path):
        from apache_beam.io.filesystem import CompressionTypes

        # Uncompressed: the builder decides about .gz itself, as it does on one machine.
        return self._file_systems().open(path, compression_type=CompressionTypes.UNCOMPRESSED)

    def open_write(self, path):
        from apache_beam.io.filesystem import CompressionTypes

        return self._file_systems().create(path, compression_type=CompressionTypes.UNCOMPRESSED)

    def rename(self, source, destination):
        if self._file_systems().exists(destination):
            self._file_systems().delete([destination])
        self._file_systems().rename([source], [destination])

    def remove(self, path):
        if self._file_systems().exists(path):
            self._file_systems().delete([path])
