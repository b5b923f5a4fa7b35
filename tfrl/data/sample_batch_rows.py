"""The row and sequence operations behind `SampleBatch`'s methods.

Each function takes the batch as its first argument; `SampleBatch` documents them
(`shuffle`, `slice`, `timeslices`, `split_by_episode`, `right_zero_pad`, `to_device`,
...) and delegates here, so that the class stays a readable summary of the API.
"""

import contextlib
import warnings
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data import batch_ops


def check_count(batch) -> int:
    """The batch's number of timesteps; raises if the columns' row counts disagree."""
    seq_lens = dict.get(batch, Columns.SEQ_LENS)
    lengths = {}
    for key, value in batch.items():
        if key == Columns.SEQ_LENS:
            continue
        n = batch_ops.num_rows(value)
        if n is not None:
            lengths[key] = n
    state_keys = [k for k in lengths if k.startswith("state_in_") or k.startswith("state_out_")]
    if seq_lens is not None and len(seq_lens) > 0:
        count = int(np.sum(seq_lens))
        for key in state_keys:
            if lengths[key] != len(seq_lens):
                raise ValueError(
                    f"SampleBatch column '{key}' must hold one row per sequence "
                    f"({len(seq_lens)} sequences in seq_lens); received "
                    f"{lengths[key]} rows."
                )
        allowed = {count}
        if batch.zero_padded and batch.max_seq_len:
            allowed.add(len(seq_lens) * batch.max_seq_len)
        row_keys = {k: n for k, n in lengths.items() if k not in state_keys}
        for key, n in row_keys.items():
            if n not in allowed:
                padded = f" (zero-padded: {max(allowed)})" if len(allowed) > 1 else ""
                raise ValueError(
                    f"SampleBatch column '{key}' has {n} rows but seq_lens sums to "
                    f"{count}{padded}. Every per-timestep column needs one row per timestep."
                )
        return count
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"'{k}': {n}" for k, n in lengths.items())
        raise ValueError(
            "All columns of a SampleBatch must have the same number of rows; "
            f"received {described}. Fix the column(s) whose length differs."
        )
    # As in RLlib, infos and RNN states alone do not make timesteps (count 0).
    counted = [n for k, n in lengths.items() if is_counted_column(k)]
    return counted[0] if counted else 0


def is_counted_column(key: str) -> bool:
    """Whether a column's rows count as timesteps: not `infos`, `seq_lens` or RNN states.

    RLlib makes no assumption about the content of infos, and states may be nested
    per sequence, so neither is used to count a batch's timesteps.
    """
    return not (key in (Columns.INFOS, Columns.SEQ_LENS) or key.startswith("state_in_")
                or key.startswith("state_out_"))


def check_new_column(batch, key: str, value: Any) -> None:
    """Raises if `value` (about to be set as column `key`) has a row count that differs
    from the batch's other columns.

    Allowed: any length while no other column has rows (a batch being built up), `seq_lens`
    itself, and one row per sequence for `state_in_*` / `state_out_*` columns of a
    sequence batch (per-timestep columns: one row per timestep, or
    `len(seq_lens) * max_seq_len` if zero-padded). A value without a row axis (a scalar)
    is not checked.

    Raises:
        ValueError: Naming the column, its length and the batch's.
    """
    if key == Columns.SEQ_LENS:
        return
    n = batch_ops.num_rows(value)
    if n is None:
        return
    seq_lens = dict.get(batch, Columns.SEQ_LENS)
    if seq_lens is not None and len(seq_lens) > 0:
        if key.startswith("state_in_") or key.startswith("state_out_"):
            if n != len(seq_lens):
                raise ValueError(
                    f"SampleBatch column '{key}' must hold one row per sequence "
                    f"({len(seq_lens)} sequences in seq_lens); received {n} rows.")
            return
        count = int(np.sum(seq_lens))
        allowed = {count}
        if batch.zero_padded and batch.max_seq_len:
            allowed.add(len(seq_lens) * batch.max_seq_len)
        if n not in allowed:
            padded = f" (zero-padded: {max(allowed)})" if len(allowed) > 1 else ""
            raise ValueError(
                f"Cannot set SampleBatch column '{key}' with {n} rows: the batch's seq_lens "
                f"sum to {count}{padded} timesteps. Every per-timestep column needs one row "
                "per timestep.")
        return
    for other, column in batch.items():
        if other == key:
            continue
        rows = batch_ops.num_rows(column)
        if rows is None:
            continue
        if rows != n:
            raise ValueError(
                f"Cannot set SampleBatch column '{key}' with {n} rows: the batch has {rows} "
                f"rows (column '{other}'). Every column needs one row per timestep; slice "
                "or pad the value, or build a new SampleBatch.")
        break
    if is_counted_column(key):
        batch.count = n  # e.g. the first counted column of a batch being built up


def describe(batch) -> str:
    """`SampleBatch(<rows> rows[, seqs=<n>]: <column>: <dtype><shape>, ...)`."""
    parts = []
    for key, value in batch.items():
        leaves = tree.flatten(value)
        if len(leaves) == 1 and hasattr(leaves[0], "shape"):
            parts.append(f"{key}: {getattr(leaves[0], 'dtype', '?')}{tuple(leaves[0].shape)}")
        else:
            parts.append(f"{key}: <{type(value).__name__}>")
    seqs = f", seqs={len(batch[Columns.SEQ_LENS])}" if Columns.SEQ_LENS in batch else ""
    return f"SampleBatch({batch.count} rows{seqs}: {', '.join(parts)})"


def done_flags(batch) -> Optional[np.ndarray]:
    """terminateds | truncateds (or legacy dones) as a bool array, or None."""
    flags = None
    for key in (Columns.TERMINATEDS, Columns.TRUNCATEDS):
        if key in batch:
            col = np.asarray(dict.__getitem__(batch, key), dtype=bool)
            flags = col if flags is None else (flags | col)
    if flags is None and Columns.DONES in batch:
        flags = np.asarray(dict.__getitem__(batch, Columns.DONES), dtype=bool)
    return flags


def iter_rows(batch) -> Iterator[Dict[str, Any]]:
    """One dict per row; a sequence batch's rows carry `seq_lens=[1]`."""
    seq_lens = Columns.SEQ_LENS in batch
    keys = [
        k for k in batch.keys()
        if k != Columns.SEQ_LENS and not (seq_lens and k.startswith("state_"))
    ]
    for i in range(batch.count):
        row = {k: tree.map_structure(lambda v: v[i], dict.__getitem__(batch, k)) for k in keys}
        if seq_lens:
            row[Columns.SEQ_LENS] = np.array([1], dtype=np.int32)
        yield row


def shuffle_rows(batch, seed: Optional[int]):
    """Shuffles the rows in place (see `SampleBatch.shuffle`)."""
    if Columns.SEQ_LENS in batch:
        raise ValueError(
            "SampleBatch.shuffle not possible when your data has `seq_lens` "
            "defined: shuffling rows would tear sequences apart. Shuffle whole "
            "sequences instead (e.g. the tf.data pipeline does)."
        )
    rng = np.random if seed is None else np.random.default_rng(seed)
    perm = rng.permutation(batch.count)
    for key, value in list(batch.items()):
        dict.__setitem__(batch, key, tree.map_structure(lambda v: np.asarray(v)[perm], value))
    batch.intercepted_values = {}
    return batch


def slice_sequences(batch, slice_: slice):
    """Slices a sequence batch along whole sequences, as RLlib does.

    The bounds are timesteps (`seq_lens` summed, padding not counted); each bound moves
    back to the start of the sequence it falls in, so `[:3]` with `seq_lens` [2, 3, 1]
    keeps only the first sequence. `seq_lens` and `state_in_*` keep the sequences'
    rows. In a zero-padded batch, columns with padded rows are cut at the sequences'
    padded bounds, columns with one row per real timestep at the real ones.
    """
    seq_lens = np.asarray(dict.__getitem__(batch, Columns.SEQ_LENS)).reshape(-1)
    bounds = np.concatenate([[0], np.cumsum(seq_lens)]).astype(np.int64)
    start, stop, _ = slice_.indices(int(bounds[-1]))
    stop = max(stop, start)
    seq_start = int(np.searchsorted(bounds, start, side="right") - 1)
    seq_stop = int(np.searchsorted(bounds, stop, side="right") - 1)
    row_start, row_stop = int(bounds[seq_start]), int(bounds[seq_stop])
    padded = bool(batch.zero_padded and batch.max_seq_len)
    padded_rows = len(seq_lens) * batch.max_seq_len if padded else None
    data = {}
    for key, value in batch.items():
        if key == Columns.SEQ_LENS or key.startswith("state_in_"):
            a, b = seq_start, seq_stop
        elif padded and batch_ops.num_rows(value) == padded_rows:
            a, b = seq_start * batch.max_seq_len, seq_stop * batch.max_seq_len
        else:
            a, b = row_start, row_stop
        data[key] = tree.map_structure(lambda v, a=a, b=b: v[a:b], value)
    return batch._new(data)


def slice_rows(batch, start: int, end: int, state_start: Optional[int],
               state_end: Optional[int]):
    """Rows `[start, end)` without copying (see `SampleBatch.slice`)."""
    seq_batch = Columns.SEQ_LENS in batch
    data = {}
    for key, value in batch.items():
        if seq_batch and (key == Columns.SEQ_LENS or key.startswith("state_in_")):
            if state_start is not None:
                data[key] = tree.map_structure(lambda v: v[state_start:state_end], value)
            continue
        if start < 0:
            data[key] = tree.map_structure(
                lambda v: batch_ops.left_zero_pad(v[0:end], -start), value
            )
        else:
            data[key] = tree.map_structure(lambda v: v[start:end], value)
    flags = {}
    if seq_batch and state_start is None:
        flags = dict(_max_seq_len=None, _zero_padded=False)
    return batch._new(data, **flags)


def timeslice_bounds(total: int, size: Optional[int], num_slices: Optional[int],
                     k: Optional[int]) -> List[int]:
    """Row bounds of `SampleBatch.timeslices` (checked arguments)."""
    if k is not None:
        warnings.warn(
            "SampleBatch.timeslices(k=...) is deprecated; use size=... or "
            "num_slices=... instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        if size is not None:
            raise ValueError("timeslices(): pass `size` or its deprecated alias `k`, not both.")
        size = k
    if (size is None) == (num_slices is None):
        raise ValueError(
            "timeslices() needs exactly one of `size` or `num_slices`; received "
            f"size={size!r}, num_slices={num_slices!r}."
        )
    name, value = ("size", size) if size is not None else ("num_slices", num_slices)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(
            f"timeslices(): `{name}` must be a positive int; received {value!r}."
        )
    if total == 0:
        return [0]
    if size is not None:
        return list(range(0, total, size)) + [total]
    bounds, left, start = [0], total, 0
    for i in range(num_slices):
        start += left // (num_slices - i)
        left = total - start
        bounds.append(start)
    return bounds


def episode_bounds(batch, key: Optional[str]) -> List[int]:
    """Row bounds of `SampleBatch.split_by_episode`."""
    valid = (Columns.EPS_ID, Columns.DONES, Columns.TERMINATEDS, Columns.TRUNCATEDS)
    if key is not None and key not in valid:
        raise ValueError(
            f"split_by_episode(key=...) must be one of {list(valid)}; received {key!r}."
        )
    if key is None:
        key = Columns.EPS_ID if Columns.EPS_ID in batch else Columns.DONES
    if batch.count == 0:
        return [0]
    if key == Columns.EPS_ID:
        if Columns.EPS_ID not in batch:
            raise KeyError(
                "split_by_episode(key='eps_id') needs an 'eps_id' column; the batch "
                f"has {sorted(batch.keys())}."
            )
        ids = np.asarray(dict.__getitem__(batch, Columns.EPS_ID))
        cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    else:
        if key == Columns.DONES:
            flags = done_flags(batch)
        elif key in batch:
            flags = np.asarray(dict.__getitem__(batch, key), dtype=bool)
        else:
            flags = None
        if flags is None:
            raise KeyError(
                "split_by_episode() needs an 'eps_id' column or done flags "
                "('terminateds'/'truncateds', or legacy 'dones'); the batch has "
                f"{sorted(batch.keys())}."
            )
        cuts = np.flatnonzero(flags[:-1]) + 1
    return [0] + cuts.tolist() + [batch.count]


def right_zero_pad(batch, max_seq_len: int, exclude_states: bool):
    """Right-zero-pads every sequence in place (see `SampleBatch.right_zero_pad`)."""
    seq_lens = dict.get(batch, Columns.SEQ_LENS)
    if seq_lens is None:
        raise ValueError(
            "Cannot right-zero-pad SampleBatch if no `seq_lens` field present! "
            f"Received columns {sorted(batch.keys())}; add `seq_lens` (the length "
            "of each sequence) first."
        )
    seq_lens = np.asarray(seq_lens)
    if len(seq_lens) and max_seq_len < int(seq_lens.max()):
        raise ValueError(
            f"right_zero_pad(max_seq_len={max_seq_len}) is shorter than the longest "
            f"sequence ({int(seq_lens.max())})."
        )
    if batch.zero_padded:
        if batch.max_seq_len == max_seq_len:
            return batch
        raise ValueError(
            f"This batch is already zero-padded to {batch.max_seq_len}; received "
            f"max_seq_len={max_seq_len}."
        )
    for key, value in list(batch.items()):
        if key == Columns.SEQ_LENS or (exclude_states and key.startswith("state_in_")):
            continue
        dict.__setitem__(
            batch,
            key,
            tree.map_structure(
                lambda v: batch_ops.right_zero_pad_sequences(v, seq_lens, max_seq_len, key),
                value,
            ),
        )
    batch.intercepted_values = {}
    batch.zero_padded = True
    batch.max_seq_len = max_seq_len
    return batch


def to_device(batch, device: Optional[str], framework: str):
    """Numeric columns to `tf.Tensor`s on `device`, in place (see `SampleBatch.to_device`)."""
    if framework not in ("tf2", "tf"):
        raise ValueError(
            f"tfrl batches convert to TensorFlow tensors only; received "
            f"framework={framework!r}. Use framework='tf2'."
        )
    import tensorflow as tf  # Deferred: tfrl.data stays importable without TensorFlow.

    def _convert(v):
        if isinstance(v, np.ndarray) and v.dtype != object and v.dtype.kind not in "US":
            return tf.convert_to_tensor(v)
        return v

    with tf.device(device) if device else contextlib.nullcontext():
        for key, value in list(batch.items()):
            dict.__setitem__(batch, key, tree.map_structure(_convert, value))
    batch.intercepted_values = {}
    return batch
