"""From the `output` config keys to a rollout worker's `output_creator`.

RLlib's `output` key says where a worker writes the experiences it samples:

- None (the default): nowhere (`NoopOutput`);
- `"logdir"`: JSON files in the worker's log directory;
- a directory path: JSON files there (`JsonWriter`), or TFRecord shards with
  `output_format="tfrecord"` (`tfrl.offline.tfrecord.TFRecordWriter`);
- a callable `IOContext -> OutputWriter`.

`output_compress_columns` (default `["obs", "new_obs"]`) and `output_max_file_size`
(bytes, default 64 MiB) configure the writer.

Example:
    >>> import tempfile
    >>> creator = output_creator_from_config({"output": tempfile.mkdtemp()})
    >>> type(creator(IOContext())).__name__
    'JsonWriter'
    >>> output_creator_from_config({"output": 3})
    Traceback (most recent call last):
    ...
    ValueError: Unsupported `output` config value: 3 (int). ...
"""

from typing import Any, Callable, Mapping

from tfrl.offline.io_context import IOContext
from tfrl.offline.json_writer import DEFAULT_COMPRESS_COLUMNS, DEFAULT_MAX_FILE_SIZE, JsonWriter
from tfrl.offline.output_writer import NoopOutput, OutputWriter
from tfrl.utils.checks import check_int

OUTPUT_FORMATS = ("json", "tfrecord")
DEFAULT_OUTPUT_FORMAT = "json"  # `output_format`'s default (AlgorithmConfig reads it here)


def check_output_config(config: Mapping[str, Any]) -> None:
    """Raises a ValueError for a bad `output`, `output_format` or `output_max_file_size`."""
    value = config.get("output")
    if value is not None and not isinstance(value, str) and not callable(value):
        raise ValueError(f"Unsupported `output` config value: {value!r} "
                         f"({type(value).__name__}). Accepted: None (no output), 'logdir', a "
                         "directory path, or a callable `fn(ioctx: IOContext) -> OutputWriter`.")
    fmt = config.get("output_format", DEFAULT_OUTPUT_FORMAT)
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"`output_format` must be one of {OUTPUT_FORMATS}; received {fmt!r}.")
    size = config.get("output_max_file_size", DEFAULT_MAX_FILE_SIZE)
    check_int(size, "`output_max_file_size`", 1, "bytes")


def output_creator_from_config(config: Mapping[str, Any]) -> Callable[[IOContext], OutputWriter]:
    """The worker's `output_creator` for the `output*` keys of `config`.

    Raises:
        ValueError: For bad values (see `check_output_config`).
    """
    check_output_config(config)
    value = config.get("output")
    if value is None:
        return _noop
    if callable(value):
        return value
    return _FileOutput(value, config.get("output_format", DEFAULT_OUTPUT_FORMAT),
                       config.get("output_compress_columns", DEFAULT_COMPRESS_COLUMNS),
                       config.get("output_max_file_size", DEFAULT_MAX_FILE_SIZE))


def _noop(ioctx: IOContext) -> OutputWriter:
    return NoopOutput()


class _FileOutput:
    def __init__(self, path: str, fmt: str, compress_columns: Any, max_file_size: int):
        self.path, self.fmt = path, fmt
        self.compress_columns, self.max_file_size = compress_columns, max_file_size

    def __call__(self, ioctx: IOContext) -> OutputWriter:
        path = ioctx.log_dir if self.path == "logdir" else self.path
        if self.path == "logdir" and not path:
            raise ValueError("output='logdir' needs a worker log_dir; give a directory path "
                             "instead.")
        if self.fmt == "tfrecord":
            # deferred: TensorFlow is loaded only when TFRecord files are written
            from tfrl.offline.tfrecord import TFRecordWriter
            return TFRecordWriter(path, ioctx, max_file_size=self.max_file_size)
        return JsonWriter(path, ioctx, max_file_size=self.max_file_size,
                          compress_columns=self.compress_columns)
