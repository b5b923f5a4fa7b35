"""TFRecord experience files: a writer, and a reader that is a tf.data pipeline.

Format: shards named `output-<date>_worker-<index>_<n>.tfrecord`, rolled by size like
`JsonWriter`'s files. The first record of a shard is its schema (a `tf.train.Example`
with the bytes feature `__tfrl_schema__`: JSON `{column: [dtype, row shape]}`, and
`__tfrl_rows_per_record__`); every other record is a `tf.train.Example` of up to
`rows_per_record` consecutive rows (default 64): per column one bytes feature holding
those rows' raw bytes (C order). Numeric columns only (`infos` and other object columns
are left out, with a warning; nested columns are not supported): dtypes and shapes
round-trip exactly; compressed columns (`SampleBatch.compress`) are written decompressed.
Shards of one row per record (`rows_per_record=1`, the first version of this format)
read the same way.

Multi-agent layout: one shard family per policy. A `MultiAgentBatch` is written policy
by policy, each policy's rows into its own shards, named
`output-<date>_worker-<index>_policy-<id>_<n>.tfrecord` (the id with characters other
than letters, digits, `.`, `-` and `_` replaced by `_`; the name is only a hint). The
schema record of such a shard also holds `__tfrl_policy_id__` (the policy id as a str),
which is what the reader goes by, so policies may have different columns, dtypes and
observation shapes. A shard holds one policy's rows only and is read exactly like a
single-agent shard (same per-row cost). Env steps vs agent steps: each policy's rows
carry the uint8 column `__tfrl_env_step__` (`ENV_STEP_COLUMN`); a MultiAgentBatch of C
env steps and `n_p` rows of policy p marks `C * n_p / sum(n)` of p's rows with 1
(rounded by largest remainder so that the marks sum to C, spread evenly over the rows).
A batch read back counts the marked rows as its env steps: reading all rows gives the
written `count` exactly, and any subset of rows has `env_steps <= agent_steps`.
A writer takes either SampleBatches or MultiAgentBatches, not both; a reader reads
either single-agent shards or multi-agent ones, not both.

`TFRecordReader.dataset(batch_size)` is the pipeline, all in tf.data and TF ops (no
Python per row or per batch): the shards interleaved in parallel (`cycle_length` at
once), their records grouped into blocks of about `shuffle_buffer_size` rows, each block
parsed and decoded at once (`tf.io.parse_example`, `tf.strings.reduce_join`,
`tf.io.decode_raw`) and its rows permuted by a seeded random permutation (when
shuffling), then cut into batches of exactly `batch_size` rows (`Dataset.rebatch`, rows
carried over between blocks) and prefetched. Batching rows per record and shuffling
whole blocks in one op keep tf.data's per-element cost off the rows. It yields dicts of
tensors `[batch_size, ...]` that `learn_on_batch` takes as they are; for multi-agent
shards, dicts `{policy id: that policy's batch}` (one pipeline per policy, zipped; each
policy's batch holds `batch_size` of its rows, `ENV_STEP_COLUMN` included). As an
InputReader (`next()`), it returns the next batch of `config["train_batch_size"]` rows
as a SampleBatch, or for multi-agent shards a MultiAgentBatch with
`config["train_batch_size"]` rows per policy and the marked rows as its env steps.
`read_all()` returns every row once, in file order, as one batch (the round trip of
what was written).

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
    >>> ma = MultiAgentBatch({"a": SampleBatch(obs=np.zeros((3, 2), np.float32)),
    ...                       "b": SampleBatch(obs=np.ones((1, 5), np.float32))}, 3)
    >>> out = tempfile.mkdtemp()
    >>> w = TFRecordWriter(out)
    >>> w.write(ma)
    >>> w.close()
    >>> back = TFRecordReader(out).read_all()
    >>> back.count, back.agent_steps(), back.policy_batches["b"]["obs"].shape
    (3, 4, (1, 5))
"""

import datetime
import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_format import check_column_values
from tfrl.offline.json_reader import DEFAULT_REQUIRED_COLUMNS, resolve_files
from tfrl.offline.json_writer import DEFAULT_MAX_FILE_SIZE, unused_name
from tfrl.offline.output_writer import OutputWriter
from tfrl.utils.checks import check_int

logger = logging.getLogger(__name__)

SCHEMA_KEY = "__tfrl_schema__"
ROWS_PER_RECORD_KEY = "__tfrl_rows_per_record__"
POLICY_ID_KEY = "__tfrl_policy_id__"
ENV_STEP_COLUMN = "__tfrl_env_step__"
DEFAULT_ROWS_PER_RECORD = 64
DEFAULT_SHUFFLE_BUFFER_SIZE = 10_000
# Blocks larger than this are decoded one at a time (decoding holds a few copies of a
# block: image rows times a 10 000-row block are gigabytes).
_PARALLEL_BLOCK_BYTES = 64 * 1024 * 1024
Schema = Dict[str, Tuple[str, Tuple[int, ...]]]


def _bytes_feature(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def env_step_marks(env_steps: int, rows: Dict[Any, int]) -> Dict[Any, np.ndarray]:
    """Per policy, a uint8 array over its rows marking `env_steps` rows in all with 1.

    Policy p gets `env_steps * rows[p] / sum(rows)` marks, rounded by largest remainder
    (exact integer arithmetic) so that they sum to `env_steps`, spread evenly over its
    rows. Needs `env_steps <= sum(rows)` (then no policy gets more marks than rows).
    """
    total = sum(rows.values())
    quota = {p: (env_steps * n // total if total else 0) for p, n in rows.items()}
    remainder = {p: (env_steps * n % total if total else 0) for p, n in rows.items()}
    for p in sorted(rows, key=lambda p: -remainder[p])[:env_steps - sum(quota.values())]:
        quota[p] += 1
    marks = {}
    for p, n in rows.items():
        m = np.zeros(n, np.uint8)
        if quota[p]:
            m[(np.arange(quota[p]) * n) // quota[p]] = 1
        marks[p] = m
    return marks


class TFRecordWriter(OutputWriter):
    """Writes SampleBatches or MultiAgentBatches row by row into size-rolled TFRecord
    shards (a MultiAgentBatch into one shard family per policy; see the module docstring).

    Args:
        path: The output directory.
        ioctx: The worker's IOContext (its `worker_index` goes into the shard names).
        max_file_size: Bytes after which a new shard is started.
        rows_per_record: Consecutive rows per record (the reader's per-record cost is
            shared by that many rows; a shard rolls over between records).
        policy_id: Write the shards of this one policy (what a multi-agent writer uses
            for each policy's shards; its batches carry `ENV_STEP_COLUMN`).
    """

    def __init__(self, path: str, ioctx: Optional[IOContext] = None,
                 max_file_size: int = DEFAULT_MAX_FILE_SIZE,
                 rows_per_record: int = DEFAULT_ROWS_PER_RECORD,
                 policy_id: Optional[str] = None):
        for name, value in (("max_file_size", max_file_size),
                            ("rows_per_record", rows_per_record)):
            check_int(value, f"TFRecordWriter: {name}", 1)
        self.rows_per_record = rows_per_record
        self.ioctx = ioctx or IOContext()
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(self.path, exist_ok=True)
        self.max_file_size = max_file_size
        self.policy_id = policy_id
        self.file_index = 0
        self.bytes_written = 0
        self.schema: Optional[Schema] = None
        self._writer: Optional[tf.io.TFRecordWriter] = None
        self.files: List[str] = []
        self._warned: set = set()
        self._policy_writers: Dict[str, "TFRecordWriter"] = {}

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
        """Appends the rows of `sample_batch` (a SampleBatch, or a MultiAgentBatch: each
        policy's rows to that policy's shards).

        Raises:
            TypeError: For anything else.
            ValueError: If the columns, dtypes or row shapes (of a policy) differ from the
                first batch written, if SampleBatches and MultiAgentBatches are mixed, or
                if a MultiAgentBatch has more env steps than rows (`policies_subset`).
        """
        if isinstance(sample_batch, MultiAgentBatch):
            self._write_multi_agent(sample_batch)
            return
        if not isinstance(sample_batch, SampleBatch):
            raise TypeError(f"TFRecordWriter writes SampleBatch or MultiAgentBatch; received "
                            f"{type(sample_batch).__name__}.")
        if self._policy_writers:
            raise ValueError("TFRecordWriter: this writer wrote MultiAgentBatches; received a "
                             "SampleBatch. Write single- and multi-agent data to separate "
                             "directories (a reader reads one kind).")
        columns = self._columns(sample_batch)
        schema = {k: (v.dtype.str, tuple(v.shape[1:])) for k, v in columns.items()}
        if self.schema is None:
            self.schema = schema
        elif schema != self.schema:
            who = "" if self.policy_id is None else f" of policy {self.policy_id!r}"
            raise ValueError(f"TFRecordWriter: this batch's columns{who} {schema} differ "
                             f"from the ones written before {self.schema}; every batch of "
                             "one writer (policy) needs the same columns, dtypes and row "
                             "shapes.")
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

    def _write_multi_agent(self, batch: MultiAgentBatch) -> None:
        if self.schema is not None:
            raise ValueError("TFRecordWriter: this writer wrote SampleBatches; received a "
                             "MultiAgentBatch. Write single- and multi-agent data to separate "
                             "directories (a reader reads one kind).")
        rows = {pid: len(b) for pid, b in batch.policy_batches.items()}
        if batch.count > sum(rows.values()):
            raise ValueError(
                f"TFRecordWriter: the MultiAgentBatch has {batch.count} env steps but only "
                f"{sum(rows.values())} rows ({rows}; policies_subset={batch.policies_subset});"
                " its env steps cannot be carried by its rows. Write the batch before "
                "dropping policies' rows.")
        marks = env_step_marks(batch.count, rows)
        for pid, b in batch.policy_batches.items():
            if not rows[pid]:
                continue
            if ENV_STEP_COLUMN in b:
                raise ValueError(f"TFRecordWriter: the batch of policy {pid!r} has a column "
                                 f"{ENV_STEP_COLUMN!r}, which the format reserves; rename it.")
            key = str(pid)
            writer = self._policy_writers.get(key)
            if writer is None:
                writer = TFRecordWriter(self.path, self.ioctx, self.max_file_size,
                                        self.rows_per_record, policy_id=key)
                writer.files = self.files  # one list of every shard written
                self._policy_writers[key] = writer
            rows_of_pid = b.copy(shallow=True)
            rows_of_pid[ENV_STEP_COLUMN] = marks[pid]
            writer.write(rows_of_pid)

    def _get_writer(self) -> tf.io.TFRecordWriter:
        if self._writer is None or self.bytes_written > self.max_file_size:
            if self._writer is not None:
                self._writer.close()
                self.file_index += 1
            stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            tag = ("" if self.policy_id is None else
                   "_policy-" + re.sub(r"[^A-Za-z0-9._-]", "_", self.policy_id))
            name = unused_name(os.path.join(
                self.path,
                f"output-{stamp}_worker-{self.ioctx.worker_index}{tag}_{self.file_index}"),
                ".tfrecord")
            self._writer = tf.io.TFRecordWriter(name)
            schema = json.dumps({k: [d, list(s)] for k, (d, s) in (self.schema or {}).items()})
            feature = {SCHEMA_KEY: _bytes_feature(schema.encode()),
                       ROWS_PER_RECORD_KEY: tf.train.Feature(int64_list=tf.train.Int64List(
                           value=[self.rows_per_record]))}
            if self.policy_id is not None:
                feature[POLICY_ID_KEY] = _bytes_feature(self.policy_id.encode())
            self._writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())
            self.files.append(name)
            self.bytes_written = 0
        return self._writer

    def close(self) -> None:
        """Closes the current shard(s)."""
        for writer in self._policy_writers.values():
            writer.close()
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
    schema, rows, _ = read_header_and_policy(path)
    return schema, rows


def read_header_and_policy(path: str) -> Tuple[Schema, int, Optional[str]]:
    """`(schema, rows_per_record, policy id or None)` from the first record of one shard.

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
    pid = example.features.feature.get(POLICY_ID_KEY)
    return (schema, (int(rows.int64_list.value[0]) if rows is not None else 1),
            pid.bytes_list.value[0].decode() if pid is not None else None)


@dataclass
class Shards:
    """The shards of one policy (or of single-agent data: `policy_id` None)."""
    policy_id: Optional[str]
    files: List[str]
    schema: Schema
    rows_per_record: int


class TFRecordReader(InputReader):
    """Reads TFRecord shards written by `TFRecordWriter` through a tf.data pipeline.

    Args:
        inputs: Shards: a file, directory, glob or list of them.
        ioctx: The worker's IOContext (config `train_batch_size`, `seed`,
            `shuffle_buffer_size`).
        shuffle: Shuffle the rows (in a buffer of `shuffle_buffer_size` rows, default
            10 000) and the shard order.
        cycle_length: Shards read at once by the interleave.

    Attributes:
        shards: Policy id (None for single-agent shards) -> its `Shards`.
        multi_agent: Whether the shards hold MultiAgentBatches' rows.
        schema, rows_per_record: Those of single-agent shards.

    Raises:
        ValueError: If no shards match, their schemas differ (naming the file), or
            single- and multi-agent shards are mixed.
    """

    def __init__(self, inputs: Union[str, Sequence[str]], ioctx: Optional[IOContext] = None,
                 shuffle: bool = True, cycle_length: int = 4):
        self.ioctx = ioctx or IOContext()
        self.files = [f for f in resolve_files(inputs, who="TFRecordReader")
                      if f.endswith(".tfrecord")]
        if not self.files:
            raise ValueError(f"TFRecordReader: no .tfrecord files in {inputs!r}.")
        self.shards: Dict[Optional[str], Shards] = {}
        for f in self.files:
            schema, rows, pid = read_header_and_policy(f)
            group = self.shards.get(pid)
            if group is None:
                self.shards[pid] = Shards(pid, [f], schema, rows)
                continue
            group.files.append(f)
            group.rows_per_record = max(group.rows_per_record, rows)
            if schema != group.schema:
                who = "" if pid is None else f" (policy {pid!r})"
                raise ValueError(f"TFRecordReader: {f}{who} has the columns {schema}; "
                                 f"{group.files[0]} has {group.schema}. Read them separately.")
        self.multi_agent = None not in self.shards
        if not self.multi_agent and len(self.shards) > 1:
            single = self.shards[None].files[0]
            other = next(g for g in self.shards.values() if g.policy_id is not None)
            raise ValueError(f"TFRecordReader: {single} holds single-agent rows and "
                             f"{other.files[0]} rows of policy {other.policy_id!r} (multi-agent"
                             "); read them separately.")
        first = next(iter(self.shards.values()))
        self.schema, self.rows_per_record = first.schema, first.rows_per_record
        self.shuffle, self.cycle_length = shuffle, int(cycle_length)
        self._iterator: Any = None
        self._policy_ids: Dict[Optional[str], Any] = {}

    @staticmethod
    def _decode(schema: Schema, records: tf.Tensor, seed: Optional[tf.Tensor] = None
                ) -> Dict[str, tf.Tensor]:
        """The rows of a block of serialized records, `[rows, ...]` per column; permuted
        by `seed` (a `[2]` int64 stateless seed) if given."""
        spec = {k: tf.io.FixedLenFeature([], tf.string) for k in schema}
        parsed = tf.io.parse_example(records, spec)  # column -> [records] bytes
        out = {}
        for key, (dtype, shape) in schema.items():
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
        the shard order is shuffled on every pass. For multi-agent shards, each element
        is `{policy id: batch of batch_size rows of that policy}` (the policies' pipelines
        zipped; without `repeat` it ends with the policy with the fewest rows).

        Args:
            batch_size: Rows per batch (the last partial batch is dropped).
            repeat: Cycle over the shards forever (else one pass).
        """
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"TFRecordReader.dataset(): batch_size must be >= 1; received "
                             f"{batch_size}.")
        self._check_schema()
        if not self.multi_agent:
            return self._pipeline(self.shards[None], batch_size, repeat)
        return tf.data.Dataset.zip({pid: self._pipeline(group, batch_size, repeat, index)
                                    for index, (pid, group) in enumerate(self.shards.items())})

    def _pipeline(self, shards: Shards, batch_size: int, repeat: bool, index: int = 0,
                  drop_remainder: bool = True, in_order: bool = False) -> tf.data.Dataset:
        """One shard family's batches (see `dataset`); `index` varies the seed per policy;
        `in_order`: one shard after the other, in file order, not shuffled."""
        shuffle = self.shuffle and not in_order
        seed = self.ioctx.config.get("seed")
        seed = None if seed is None else int(seed) + self.ioctx.worker_index + 7919 * index
        files = tf.data.Dataset.from_tensor_slices(shards.files)
        if shuffle:
            files = files.shuffle(len(shards.files), seed=seed)
        if repeat:
            files = files.repeat()
        records = files.interleave(
            lambda f: tf.data.TFRecordDataset(f).skip(1),  # the schema record
            cycle_length=1 if in_order else min(self.cycle_length, len(shards.files)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None or in_order)
        if shuffle:
            block_rows = int(self.ioctx.config.get("shuffle_buffer_size")
                             or DEFAULT_SHUFFLE_BUFFER_SIZE)
        else:
            block_rows = 4 * batch_size
        block = max(1, -(-max(block_rows, batch_size) // shards.rows_per_record))  # records
        blocks = records.batch(block)
        schema = shards.schema
        row_bytes = sum(np.dtype(d).itemsize * int(np.prod(s)) for d, s in schema.values())
        parallel = (tf.data.AUTOTUNE if block * shards.rows_per_record * row_bytes
                    <= _PARALLEL_BLOCK_BYTES else 1)
        if shuffle:
            base = np.random.default_rng(seed).integers(2**31)
            ds = blocks.enumerate().map(
                lambda i, r: self._decode(schema, r, tf.stack([tf.constant(base, tf.int64), i])),
                num_parallel_calls=parallel, deterministic=True)
        else:
            ds = blocks.map(lambda r: self._decode(schema, r), num_parallel_calls=parallel,
                            deterministic=True)
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)
        return ds.prefetch(tf.data.AUTOTUNE)

    def _check_schema(self) -> None:
        """The shards' columns against the worker's policies (when the reader has a worker):
        the columns each policy's loss reads (`offline_input_columns`) and its observation
        shape, and for multi-agent shards that every policy id is one of the worker's; so
        that a wrong file fails here, naming it, not inside the first learning step.

        Raises:
            ValueError: Naming the file, the missing columns, the shapes or the policy id.
        """
        policy_map = getattr(self.ioctx.worker, "policy_map", None)
        policies = dict(policy_map.items()) if policy_map is not None else {}
        if not policies:
            return  # no worker (a bare reader): nothing to check against
        if not self.multi_agent:
            if len(policies) != 1:
                raise ValueError(
                    f"TFRecordReader: {self.files[0]} holds single-agent rows but the worker "
                    f"has {len(policies)} policies {sorted(map(str, policies))}; write the data "
                    "with the multi-agent config (MultiAgentBatches).")
            pairs = [(next(iter(policies.values())), self.shards[None])]
        else:
            by_str = {str(pid): p for pid, p in policies.items()}
            pairs = []
            for pid, group in self.shards.items():
                if pid not in by_str:
                    raise ValueError(
                        f"TFRecordReader: {group.files[0]} (record 0, the schema) holds rows "
                        f"of policy {pid!r}, which the worker does not have "
                        f"({sorted(by_str)}). Map the data to the config's policies or "
                        "read only the shards of known policies.")
                pairs.append((by_str[pid], group))
            # The worker's own ids (the shards hold str ids; a config may use ints).
            self._policy_ids = {str(pid): pid for pid in policies}
        for policy, group in pairs:
            who = "" if group.policy_id is None else f" of policy {group.policy_id!r}"
            need = getattr(policy, "offline_input_columns", DEFAULT_REQUIRED_COLUMNS)
            missing = [c for c in need if c not in group.schema]
            if missing:
                raise ValueError(
                    f"TFRecordReader: the rows{who} in {group.files[0]} (record 0, the schema)"
                    f" lack the column(s) {missing} that {type(policy).__name__} needs; they "
                    f"have {sorted(group.schema)}. Write the data with those columns.")
            shape = getattr(policy.observation_space, "shape", None)
            if shape is not None and "obs" in group.schema \
                    and group.schema["obs"][1] != tuple(shape):
                raise ValueError(
                    f"TFRecordReader: observations{who} in {group.files[0]} have shape "
                    f"{group.schema['obs'][1]} per row; the policy expects {tuple(shape)} "
                    f"({policy.observation_space}). The file was written for another env or "
                    "observation preprocessing.")

    def next(self) -> Any:
        """The next `config["train_batch_size"]` rows (default 200) as a SampleBatch; for
        multi-agent shards a MultiAgentBatch of that many rows per policy whose env steps
        are the rows marked in `ENV_STEP_COLUMN` (the column is removed)."""
        if self._iterator is None:
            size = int(self.ioctx.config.get("train_batch_size") or 200)
            self._iterator = iter(self.dataset(size))
        batch = next(self._iterator)
        if not self.multi_agent:
            return SampleBatch(self._checked({k: v.numpy() for k, v in batch.items()}))
        return _to_multi_agent({self._policy_ids.get(pid, pid):
                                self._checked({k: v.numpy() for k, v in cols.items()}, pid)
                                for pid, cols in batch.items()})

    def _checked(self, columns: Dict[str, np.ndarray], pid: Any = None) -> Dict[str, np.ndarray]:
        """`columns`, after checking that observations, actions and rewards are finite
        (`json_format.check_column_values`; dtypes round-trip exactly, so only NaN and
        inf can be wrong). The rows come interleaved from several shards, so the error
        names the reader's shards, not one file."""
        try:
            for key, value in columns.items():
                check_column_values(key, value)
        except ValueError as e:
            who = "" if pid is None else f" of policy {self._policy_ids.get(pid, pid)!r}"
            raise ValueError(
                f"TFRecordReader: a batch{who} read from the shards {self.files} holds a bad "
                f"value: {e}. Find the record with TFRecordReader(path, shuffle=False)"
                ".read_all() per shard.") from None
        return columns

    def read_all(self) -> Any:
        """Every row once, in the order written (shards in natural name order: `_2`
        before `_10`; not shuffled), as one SampleBatch, or for multi-agent shards one
        MultiAgentBatch (its env steps the marked rows). Holds all rows in memory."""
        self._check_schema()
        out = {}
        for pid, group in self.shards.items():
            group = Shards(pid, sorted(group.files, key=_natural_key), group.schema,
                           group.rows_per_record)
            parts = list(self._pipeline(group, 1 << 30, repeat=False, drop_remainder=False,
                                        in_order=True))
            out[pid] = self._checked(
                {k: (np.concatenate([p[k].numpy() for p in parts]) if parts else
                     np.zeros((0, *shape), np.dtype(dtype)))
                 for k, (dtype, shape) in group.schema.items()}, pid)
        if not self.multi_agent:
            return SampleBatch(out[None])
        return _to_multi_agent({self._policy_ids.get(pid, pid): cols
                                for pid, cols in out.items()})


def _natural_key(path: str) -> List[Any]:
    return [int(part) if part.isdigit() else part
            for part in re.split(r"(\d+)", os.path.basename(path))]


def _to_multi_agent(columns: Dict[Any, Dict[str, np.ndarray]]) -> MultiAgentBatch:
    batches, env_steps = {}, 0
    for pid, cols in columns.items():
        cols = dict(cols)
        marks = cols.pop(ENV_STEP_COLUMN, None)
        env_steps += 0 if marks is None else int(np.sum(marks, dtype=np.int64))
        batches[pid] = SampleBatch(cols)
    return MultiAgentBatch(batches, env_steps)
