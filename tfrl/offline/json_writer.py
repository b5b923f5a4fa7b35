"""JsonWriter: writes batches as JSON lines into size-rolled files (RLlib's JsonWriter).

Files are named `output-<date>_worker-<index>_<n>.json` in `path` (created if needed);
after a write leaves the current file larger than `max_file_size` bytes, the next write
starts file `n + 1`. Each line is one batch in RLlib's format (`tfrl.offline.json_format`),
flushed at once so that a reader sees only whole lines.

Example:
    >>> import tempfile, numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> out = tempfile.mkdtemp()
    >>> writer = JsonWriter(out)
    >>> writer.write(SampleBatch(obs=np.zeros((2, 4), np.float32), actions=[0, 1]))
    >>> from tfrl.offline.json_reader import JsonReader
    >>> JsonReader(out).next()["actions"].tolist()
    [0, 1]
"""

import datetime
import os
from typing import IO, Any, Optional, Sequence

from tfrl.offline.io_context import IOContext
from tfrl.offline.json_format import encode_batch
from tfrl.offline.output_writer import OutputWriter
from tfrl.utils.checks import check_int

DEFAULT_MAX_FILE_SIZE = 64 * 1024 * 1024
DEFAULT_COMPRESS_COLUMNS = frozenset(["obs", "new_obs"])


def unused_name(stem: str, ext: str) -> str:
    """`stem + ext`, or `stem-<k> + ext` with the smallest k >= 1 that names no file
    (two writers started in the same second into one directory do not collide)."""
    name, k = stem + ext, 0
    while os.path.exists(name):
        k += 1
        name = f"{stem}-{k}{ext}"
    return name


class JsonWriter(OutputWriter):
    """Writes batches (SampleBatch or MultiAgentBatch) to JSON-lines files.

    Args:
        path: The output directory.
        ioctx: The worker's IOContext (its `worker_index` goes into the file names).
        max_file_size: Bytes after which a new file is started.
        compress_columns: Columns written compressed (see `tfrl.offline.json_format`).

    Raises:
        ValueError: If `max_file_size` is not a positive int.
    """

    def __init__(self, path: str, ioctx: Optional[IOContext] = None,
                 max_file_size: int = DEFAULT_MAX_FILE_SIZE,
                 compress_columns: Sequence[str] = DEFAULT_COMPRESS_COLUMNS):
        check_int(max_file_size, "JsonWriter: max_file_size", 1, "bytes")
        self.ioctx = ioctx or IOContext()
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(self.path, exist_ok=True)
        self.max_file_size = max_file_size
        self.compress_columns = frozenset(compress_columns or ())
        self.file_index = 0
        self.bytes_written = 0
        self.cur_file: Optional[IO[str]] = None
        self.files: list = []

    def _get_file(self) -> IO[str]:
        if self.cur_file is None or self.bytes_written > self.max_file_size:
            if self.cur_file is not None:
                self.cur_file.close()
                self.file_index += 1
            stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            name = unused_name(os.path.join(
                self.path, f"output-{stamp}_worker-{self.ioctx.worker_index}_{self.file_index}"),
                ".json")
            self.cur_file = open(name, "w", encoding="utf-8")
            self.files.append(name)
            self.bytes_written = 0
        return self.cur_file

    def write(self, sample_batch: Any) -> None:
        """Appends `sample_batch` as one line (to a new file if the current one is full)."""
        line = encode_batch(sample_batch, self.compress_columns) + "\n"
        f = self._get_file()
        f.write(line)
        f.flush()
        self.bytes_written += len(line.encode("utf-8"))

    def close(self) -> None:
        """Closes the current file (a later write opens a new one)."""
        if self.cur_file is not None:
            self.cur_file.close()
            self.cur_file = None
            self.file_index += 1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
