"""TFRecord experience files: a writer, and a reader that is a tf.data pipeline.

Format: shards named `output-<date>_worker-<index>_<n>.tfrecord`, rolled by size like
`JsonWriter`'s files. The first record of a shard is its schema (a `tf.train.Example`
with one bytes feature `__tfrl_schema__`: JSON `{column: [dtype, row shape]}`); every
other record is one row: per column a bytes feature with the row's raw bytes. Numeric
columns only (`infos` and other object columns are left out, with a warning; nested
columns are not supported): dtypes and shapes round-trip exactly.

`TFRecordReader.dataset(batch_size)` is the pipeline: the shards interleaved in
parallel (`cycle_length` shards at once), rows shuffled in a buffer, batched, parsed
and decoded in vectorized TF ops (`tf.io.parse_example`, `tf.io.decode_raw`) and
prefetched; it yields dicts of tensors `[batch_size, ...]` that `learn_on_batch` takes
as they are (no Python per row). As an InputReader (`next()`), it returns the next
batch of `config["train_batch_size"]` rows as a SampleBatch.

Example:
    >>> import tempfile, numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> out = tempfile.mkdtemp()
    >>> w = TFRecordWriter(out)
    >>> w.write(SampleBatch(obs=np.ones((4, 2), np.float32), actions=np.arange(4)))
    >>> w.close()
    >>> batch = next(iter(TFRecordReader(out, shuffle=False).dataset(batch_size=4)))
    >>> batch["obs"].shape, batch["actions"].numpy().tolist()
    (TensorShape([4, 2]), [0, 1, 2, 3])
"""

import datetime
import json
import logging
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_reader import resolve_files
from tfrl.offline.json_writer import DEFAULT_MAX_FILE_SIZE, unused_name
from tfrl.offline.output_writer import OutputWriter

logger = logging.getLogger(__name__)

SCHEMA_KEY = "__tfrl_schema__"
Schema = Dict[str, Tuple[str, Tuple[int, ...]]]


def _bytes_feature(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


class TFRecordWriter(OutputWriter):
    """Writes SampleBatches row by row into size-rolled TFRecord shards.

    Args:
        path: The output directory.
        ioctx: The worker's IOContext (its `worker_index` goes into the shard names).
        max_file_size: Bytes after which a new shard is started.
    """

    def __init__(self, path: str, ioctx: Optional[IOContext] = None,
                 max_file_size: int = DEFAULT_MAX_FILE_SIZE):
        if isinstance(max_file_size, bool) or not isinstance(max_file_size, int) \
                or max_file_size < 1:
            raise ValueError(f"TFRecordWriter: max_file_size must be an int >= 1 (bytes); "
                             f"received {max_file_size!r}.")
        self.ioctx = ioctx or IOContext()
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(self.path, exist_ok=True)
        self.max_file_size = max_file_size
        self.file_index = 0
        self.bytes_written = 0
        self.schema: Optional[Schema] = None
        self._writer: Optional[tf.io.TFRecordWriter] = None
        self.files: List[str] = []
        self._warned: set = set()

    def _columns(self, batch: SampleBatch) -> Dict[str, np.ndarray]:
        batch = batch.copy(shallow=True).decompress_if_needed(list(batch.keys()))
        out = {}
        for key, value in dict.items(batch):
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                out[key] = np.ascontiguousarray(value)
            elif key not in self._warned:
                self._warned.add(key)
                logger.warning("TFRecordWriter: column %r (%s) is not a numeric array and is "
                               "not written.", key, type(value).__name__)
        return out

    def write(self, sample_batch: Any) -> None:
        """Appends the rows of `sample_batch`.

        Raises:
            TypeError: For a MultiAgentBatch (write each policy's batch to its own path).
            ValueError: If the columns, dtypes or row shapes differ from the shard's
                first batch.
        """
        if isinstance(sample_batch, MultiAgentBatch):
            raise TypeError("TFRecordWriter writes one policy's SampleBatches; received a "
                            "MultiAgentBatch. Use JsonWriter, or one TFRecordWriter per policy.")
        columns = self._columns(sample_batch)
        schema = {k: (v.dtype.str, tuple(v.shape[1:])) for k, v in columns.items()}
        if self.schema is None:
            self.schema = schema
        elif schema != self.schema:
            raise ValueError(f"TFRecordWriter: this batch's columns {schema} differ from the "
                             f"ones written before {self.schema}; every batch of one writer "
                             "needs the same columns, dtypes and row shapes.")
        writer = self._get_writer()
        n = len(sample_batch)
        for i in range(n):
            example = tf.train.Example(features=tf.train.Features(feature={
                k: _bytes_feature(v[i].tobytes()) for k, v in columns.items()}))
            record = example.SerializeToString()
            writer.write(record)
            self.bytes_written += len(record) + 16
        writer.flush()

    def _get_writer(self) -> tf.io.TFRecordWriter:
        if self._writer is None or self.bytes_written > self.max_file_size:
            if self._writer is not None:
                self._writer.close()
                self.file_index += 1
            stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            name = unused_name(os.path.join(
                self.path, f"output-{stamp}_worker-{self.ioctx.worker_index}_{self.file_index}"),
                ".tfrecord")
            self._writer = tf.io.TFRecordWriter(name)
            schema = json.dumps({k: [d, list(s)] for k, (d, s) in (self.schema or {}).items()})
            self._writer.write(tf.train.Example(features=tf.train.Features(feature={
                SCHEMA_KEY: _bytes_feature(schema.encode())})).SerializeToString())
            self.files.append(name)
            self.bytes_written = 0
        return self._writer

    def close(self) -> None:
        """Closes the current shard."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self.file_index += 1


def read_schema(path: str) -> Schema:
    """The schema record of one shard.

    Raises:
        ValueError: If the shard is empty or its first record is not a schema.
    """
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.OpError as e:
        raise ValueError(f"TFRecordReader: cannot read {path}: {e.message}") from None
    if first is None:
        raise ValueError(f"TFRecordReader: {path} is empty (not even a schema record).")
    try:
        example = tf.train.Example.FromString(first.numpy())
    except Exception as e:  # protobuf's DecodeError
        raise ValueError(f"TFRecordReader: the first record of {path} is not a "
                         f"tf.train.Example ({e}); the file was not written by "
                         "TFRecordWriter.") from None
    feature = example.features.feature.get(SCHEMA_KEY)
    if feature is None:
        raise ValueError(f"TFRecordReader: the first record of {path} is not a tfrl schema "
                         "record; the file was not written by TFRecordWriter.")
    return {k: (d, tuple(s)) for k, (d, s) in json.loads(feature.bytes_list.value[0]).items()}


class TFRecordReader(InputReader):
    """Reads TFRecord shards written by `TFRecordWriter` through a tf.data pipeline.

    Args:
        inputs: Shards: a file, directory, glob or list of them.
        ioctx: The worker's IOContext (config `train_batch_size`, `seed`,
            `shuffle_buffer_size`).
        shuffle: Shuffle the rows (in a buffer of `shuffle_buffer_size` rows, default
            10 000) and the shard order.
        cycle_length: Shards read at once by the interleave.

    Raises:
        ValueError: If no shards match, or their schemas differ (naming the file).
    """

    def __init__(self, inputs: Union[str, Sequence[str]], ioctx: Optional[IOContext] = None,
                 shuffle: bool = True, cycle_length: int = 4):
        self.ioctx = ioctx or IOContext()
        self.files = [f for f in resolve_files(inputs, who="TFRecordReader")
                      if f.endswith(".tfrecord")]
        if not self.files:
            raise ValueError(f"TFRecordReader: no .tfrecord files in {inputs!r}.")
        self.schema = read_schema(self.files[0])
        for f in self.files[1:]:
            other = read_schema(f)
            if other != self.schema:
                raise ValueError(f"TFRecordReader: {f} has the columns {other}; "
                                 f"{self.files[0]} has {self.schema}. Read them separately.")
        self.shuffle, self.cycle_length = shuffle, int(cycle_length)
        self._iterator: Any = None

    def _parse(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
        spec = {k: tf.io.FixedLenFeature([], tf.string) for k in self.schema}
        parsed = tf.io.parse_example(records, spec)
        out = {}
        for key, (dtype, shape) in self.schema.items():
            np_dtype = np.dtype(dtype)
            if np_dtype.kind == "b":
                raw = tf.io.decode_raw(parsed[key], tf.uint8) > 0
            else:
                raw = tf.io.decode_raw(parsed[key], tf.as_dtype(np_dtype.newbyteorder("=")),
                                       little_endian=np_dtype.byteorder != ">")
            out[key] = tf.reshape(raw, [-1, *shape])  # [B, ...]
        return out

    def dataset(self, batch_size: int, repeat: bool = True) -> tf.data.Dataset:
        """Batches of `batch_size` rows (dicts of tensors), read in parallel, prefetched.

        Args:
            batch_size: Rows per batch (the last partial batch is dropped).
            repeat: Cycle over the shards forever (else one pass).
        """
        seed = self.ioctx.config.get("seed")
        seed = None if seed is None else int(seed) + self.ioctx.worker_index
        files = tf.data.Dataset.from_tensor_slices(self.files)
        if self.shuffle:
            files = files.shuffle(len(self.files), seed=seed)
        if repeat:
            files = files.repeat()
        ds = files.interleave(
            lambda f: tf.data.TFRecordDataset(f).skip(1),  # the schema record
            cycle_length=min(self.cycle_length, len(self.files)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
        if self.shuffle:
            ds = ds.shuffle(int(self.ioctx.config.get("shuffle_buffer_size") or 10_000),
                            seed=seed)
        ds = ds.batch(int(batch_size), drop_remainder=True)
        ds = ds.map(self._parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return ds.prefetch(tf.data.AUTOTUNE)

    def next(self) -> SampleBatch:
        """The next `config["train_batch_size"]` rows (default 200) as a SampleBatch."""
        if self._iterator is None:
            size = int(self.ioctx.config.get("train_batch_size") or 200)
            self._iterator = iter(self.dataset(size))
        batch = next(self._iterator)
        return SampleBatch({k: v.numpy() for k, v in batch.items()})
