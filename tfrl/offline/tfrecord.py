"""TFRecord experience files: a writer, and a reader that is a tf.data pipeline.

Format: shards named `output-<date>_worker-<index>_<n>.tfrecord`, rolled by size like
`JsonWriter`'s files. The first record of a shard is its schema (a `tf.train.Example`
with the bytes feature `__tfrl_schema__`: JSON `{column: [dtype, row shape]}`, and
`__tfrl_rows_per_record__`); every other record is a `tf.train.Example` of up to
`rows_per_record` consecutive rows (default 64): per column one bytes feature holding
those rows' raw bytes (C order). Numeric columns only (`infos` and other object columns
are left out, with a warning; nested columns are not supported): dtypes and shapes
round-trip exactly. Shards of one row per record (`rows_per_record=1`, the first
version of this format) read the same way.

`TFRecordReader.dataset(batch_size)` is the pipeline, all in tf.data and TF ops (no
Python per row or per batch): the shards interleaved in parallel (`cycle_length` at
once), their records grouped into blocks of about `shuffle_buffer_size` rows, each block
parsed and decoded at once (`tf.io.parse_example`, `tf.strings.reduce_join`,
`tf.io.decode_raw`) and its rows permuted by a seeded random permutation (when
shuffling), then cut into batches of exactly `batch_size` rows (`Dataset.rebatch`, rows
carried over between blocks) and prefetched. Batching rows per record and shuffling
whole blocks in one op keep tf.data's per-element cost off the rows. It yields dicts of
tensors `[batch_size, ...]` that `learn_on_batch` takes as they are. As an InputReader
(`next()`), it returns the next batch of `config["train_batch_size"]` rows as a
SampleBatch.

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
from tfrl.offline.json_reader import DEFAULT_REQUIRED_COLUMNS, resolve_files
from tfrl.offline.json_writer import DEFAULT_MAX_FILE_SIZE, unused_name
from tfrl.offline.output_writer import OutputWriter

logger = logging.getLogger(__name__)

SCHEMA_KEY = "__tfrl_schema__"
ROWS_PER_RECORD_KEY = "__tfrl_rows_per_record__"
DEFAULT_ROWS_PER_RECORD = 64
DEFAULT_SHUFFLE_BUFFER_SIZE = 10_000
# Blocks larger than this are decoded one at a time (decoding holds a few copies of a
# block: image rows times a 10 000-row block are gigabytes).
_PARALLEL_BLOCK_BYTES = 64 * 1024 * 1024
Schema = Dict[str, Tuple[str, Tuple[int, ...]]]


def _bytes_feature(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


class TFRecordWriter(OutputWriter):
    """Writes SampleBatches row by row into size-rolled TFRecord shards.

    Args:
        path: The output directory.
        ioctx: The worker's IOContext (its `worker_index` goes into the shard names).
        max_file_size: Bytes after which a new shard is started.
        rows_per_record: Consecutive rows per record (the reader's per-record cost is
            shared by that many rows; a shard rolls over between records).
    """

    def __init__(self, path: str, ioctx: Optional[IOContext] = None,
                 max_file_size: int = DEFAULT_MAX_FILE_SIZE,
                 rows_per_record: int = DEFAULT_ROWS_PER_RECORD):
        for name, value in (("max_file_size", max_file_size),
                            ("rows_per_record", rows_per_record)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TFRecordWriter: {name} must be an int >= 1; received "
                                 f"{value!r}.")
        self.rows_per_record = rows_per_record
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
        n = len(sample_batch)
        for i in range(0, n, self.rows_per_record):
            writer = self._get_writer()
            example = tf.train.Example(features=tf.train.Features(feature={
                k: _bytes_feature(v[i:i + self.rows_per_record].tobytes())
                for k, v in columns.items()}))
            record = example.SerializeToString()
            writer.write(record)
            self.bytes_written += len(record) + 16
        if self._writer is not None:
            self._writer.flush()

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
                SCHEMA_KEY: _bytes_feature(schema.encode()),
                ROWS_PER_RECORD_KEY: tf.train.Feature(int64_list=tf.train.Int64List(
                    value=[self.rows_per_record]))})).SerializeToString())
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
    """The schema of one shard (see `read_header`)."""
    return read_header(path)[0]


def read_header(path: str) -> Tuple[Schema, int]:
    """`(schema, rows_per_record)` from the first record of one shard.

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
    schema = {k: (d, tuple(s)) for k, (d, s) in json.loads(feature.bytes_list.value[0]).items()}
    rows = example.features.feature.get(ROWS_PER_RECORD_KEY)
    return schema, (int(rows.int64_list.value[0]) if rows is not None else 1)


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
        self.schema, self.rows_per_record = read_header(self.files[0])
        for f in self.files[1:]:
            other, rows = read_header(f)
            self.rows_per_record = max(self.rows_per_record, rows)
            if other != self.schema:
                raise ValueError(f"TFRecordReader: {f} has the columns {other}; "
                                 f"{self.files[0]} has {self.schema}. Read them separately.")
        self.shuffle, self.cycle_length = shuffle, int(cycle_length)
        self._iterator: Any = None

    def _decode(self, records: tf.Tensor, seed: Optional[tf.Tensor] = None
                ) -> Dict[str, tf.Tensor]:
        """The rows of a block of serialized records, `[rows, ...]` per column; permuted
        by `seed` (a `[2]` int64 stateless seed) if given."""
        spec = {k: tf.io.FixedLenFeature([], tf.string) for k in self.schema}
        parsed = tf.io.parse_example(records, spec)  # column -> [records] bytes
        out = {}
        for key, (dtype, shape) in self.schema.items():
            raw_bytes = tf.strings.reduce_join(parsed[key])  # the block's rows, in order
            np_dtype = np.dtype(dtype)
            if np_dtype.kind == "b":
                raw = tf.io.decode_raw(raw_bytes, tf.uint8) > 0
            else:
                raw = tf.io.decode_raw(raw_bytes, tf.as_dtype(np_dtype.newbyteorder("=")),
                                       little_endian=np_dtype.byteorder != ">")
            out[key] = tf.reshape(raw, [-1, *shape])  # [rows, ...]
        if seed is not None:
            rows = tf.shape(next(iter(out.values())))[0]
            order = tf.argsort(tf.random.stateless_uniform([rows], seed=seed))
            out = {k: tf.gather(v, order) for k, v in out.items()}
        return out

    def dataset(self, batch_size: int, repeat: bool = True) -> tf.data.Dataset:
        """Batches of `batch_size` rows (dicts of tensors), read in parallel, prefetched.

        With `shuffle`, rows are permuted within blocks of about
        `config["shuffle_buffer_size"]` rows (default 10 000) of interleaved shards, and
        the shard order is shuffled on every pass.

        Args:
            batch_size: Rows per batch (the last partial batch is dropped).
            repeat: Cycle over the shards forever (else one pass).
        """
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"TFRecordReader.dataset(): batch_size must be >= 1; received "
                             f"{batch_size}.")
        self._check_schema()
        seed = self.ioctx.config.get("seed")
        seed = None if seed is None else int(seed) + self.ioctx.worker_index
        files = tf.data.Dataset.from_tensor_slices(self.files)
        if self.shuffle:
            files = files.shuffle(len(self.files), seed=seed)
        if repeat:
            files = files.repeat()
        records = files.interleave(
            lambda f: tf.data.TFRecordDataset(f).skip(1),  # the schema record
            cycle_length=min(self.cycle_length, len(self.files)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
        if self.shuffle:
            block_rows = int(self.ioctx.config.get("shuffle_buffer_size")
                             or DEFAULT_SHUFFLE_BUFFER_SIZE)
        else:
            block_rows = 4 * batch_size
        block = max(1, -(-max(block_rows, batch_size) // self.rows_per_record))  # records
        blocks = records.batch(block)
        row_bytes = sum(np.dtype(d).itemsize * int(np.prod(s)) for d, s in self.schema.values())
        parallel = (tf.data.AUTOTUNE if block * self.rows_per_record * row_bytes
                    <= _PARALLEL_BLOCK_BYTES else 1)
        if self.shuffle:
            base = np.random.default_rng(seed).integers(2**31)
            ds = blocks.enumerate().map(
                lambda i, r: self._decode(r, tf.stack([tf.constant(base, tf.int64), i])),
                num_parallel_calls=parallel, deterministic=True)
        else:
            ds = blocks.map(self._decode, num_parallel_calls=parallel, deterministic=True)
        ds = ds.rebatch(batch_size, drop_remainder=True)
        return ds.prefetch(tf.data.AUTOTUNE)

    def _check_schema(self) -> None:
        """The shards' columns against the worker's policy (when the reader has one): the
        columns its loss reads (`offline_input_columns`) and the observation shape, so that
        a wrong file fails here, naming it, not inside the first learning step.

        Raises:
            ValueError: Naming the file, the missing columns or the shapes.
        """
        policy_map = getattr(self.ioctx.worker, "policy_map", None)
        policies = dict(policy_map.items()) if policy_map is not None else {}
        if len(policies) != 1:
            return  # no worker (a bare reader), or several policies: nothing to check against
        policy = next(iter(policies.values()))
        need = getattr(policy, "offline_input_columns", DEFAULT_REQUIRED_COLUMNS)
        missing = [c for c in need if c not in self.schema]
        if missing:
            raise ValueError(
                f"TFRecordReader: the rows of {self.files[0]} (record 0, the schema) lack the "
                f"column(s) {missing} that {type(policy).__name__} needs; they have "
                f"{sorted(self.schema)}. Write the data with those columns.")
        shape = getattr(policy.observation_space, "shape", None)
        if shape is not None and "obs" in self.schema and self.schema["obs"][1] != tuple(shape):
            raise ValueError(
                f"TFRecordReader: observations in {self.files[0]} have shape "
                f"{self.schema['obs'][1]} per row; the policy expects {tuple(shape)} "
                f"({policy.observation_space}). The file was written for another env or "
                "observation preprocessing.")

    def next(self) -> SampleBatch:
        """The next `config["train_batch_size"]` rows (default 200) as a SampleBatch."""
        if self._iterator is None:
            size = int(self.ioctx.config.get("train_batch_size") or 200)
            self._iterator = iter(self.dataset(size))
        batch = next(self._iterator)
        return SampleBatch({k: v.numpy() for k, v in batch.items()})
