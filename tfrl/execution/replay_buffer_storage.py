"""ColumnStorage: the preallocated numpy ring a replay buffer keeps its items in.

One array per column (nested columns: one per leaf), `slots` items long; an item is one
timestep, or one zero-padded sequence (`[slots, L, ...]`). Writes and reads are one
fancy-indexing assignment / gather per leaf, never a Python loop over rows. Columns named
in `compressed_columns` are kept as object arrays of per-item compressed blobs
(`tfrl.utils.compression`), packed on write and unpacked on read.

Example:
    >>> import numpy as np
    >>> ring = ColumnStorage(3)
    >>> ring.write({"obs": np.arange(2.0)}).tolist()
    [0, 1]
    >>> ring.write({"obs": np.arange(2.0, 4.0)}).tolist()  # the ring is full: slot 0 again
    [2, 0]
    >>> ring.size, ring.read(np.array([0, 1]))["obs"].tolist()  # item 0 was overwritten
    (3, [3.0, 1.0])
"""

from typing import Any, Collection, Dict, Optional

import numpy as np
import tree

from tfrl.data import batch_ops
from tfrl.utils import compression


class ColumnStorage:
    """A ring of `slots` items, one preallocated array per column leaf.

    Args:
        slots: Items kept; the oldest is overwritten once full (FIFO).
        compressed_columns: Top-level columns stored as per-item compressed blobs.
        name: Owner's name for error messages.
    """

    def __init__(self, slots: int, compressed_columns: Collection[str] = (),
                 name: str = "ReplayBuffer"):
        self.slots = int(slots)
        self.compressed_columns = frozenset(compressed_columns)
        self.name = name
        self.columns: Optional[Dict[str, Any]] = None
        self.next_idx = 0
        self.size = 0

    def __len__(self) -> int:
        """Items stored."""
        return self.size

    # ----------------------------------------------------------------- write

    def write(self, items: Dict[str, Any]) -> np.ndarray:
        """Stores the items of `items` (column -> leaves with a leading item axis).

        Returns:
            The slot index of each stored item (the newest `slots` if more were given).

        Raises:
            ValueError: If the columns, their nesting or their per-item shapes differ
                from those of the first write.
        """
        n = _num_items(items)
        if n > self.slots:  # only the newest `slots` items survive
            items = {k: tree.map_structure(lambda v: v[n - self.slots:], v)
                     for k, v in items.items()}
            n = self.slots
        if self.columns is None:
            self.columns = {key: tree.map_structure(
                lambda v, key=key: self._allocate(key, v), value) for key, value in items.items()}
        elif set(items) != set(self.columns):
            raise ValueError(f"{self.name}.add(): the batch's columns {sorted(items)} differ "
                             f"from the stored ones {sorted(self.columns)}. Add batches with "
                             "the same columns to one buffer.")
        idx = (self.next_idx + np.arange(n)) % self.slots
        for key, value in items.items():
            store = self.columns[key]
            try:
                tree.assert_same_structure(store, value)
            except (ValueError, TypeError) as e:
                raise ValueError(f"{self.name}.add(): column {key!r} is nested differently "
                                 f"from the stored one: {e}") from None
            for s, v in zip(tree.flatten(store), tree.flatten(value)):
                self._write_leaf(key, s, idx, v)
        self.next_idx = int((self.next_idx + n) % self.slots)
        self.size = min(self.slots, self.size + n)
        return idx

    def _allocate(self, key: str, value: Any) -> np.ndarray:
        value = np.asarray(value)
        if key in self.compressed_columns:
            return np.full(self.slots, None, dtype=object)
        if value.dtype == object:
            return np.full((self.slots,) + value.shape[1:], None, dtype=object)
        return np.empty((self.slots,) + value.shape[1:], value.dtype)

    def _write_leaf(self, key: str, store: np.ndarray, idx: np.ndarray, value: Any) -> None:
        if key in self.compressed_columns:
            value = batch_ops.compress_leaf(np.asarray(value), bulk=False)
        else:
            value = np.asarray(value)
            if value.shape[1:] != store.shape[1:]:
                raise ValueError(
                    f"{self.name}.add(): column {key!r} has items of shape {value.shape[1:]}; "
                    f"the stored ones have shape {store.shape[1:]}. Store one kind of "
                    "observation/action per buffer.")
        store[idx] = value

    # ------------------------------------------------------------------ read

    def read(self, idx: np.ndarray) -> Dict[str, Any]:
        """The items at slot indices `idx` (compressed columns unpacked)."""
        if self.columns is None:
            raise RuntimeError(f"{self.name}: read() before any write (nothing to sample)")
        return {key: tree.map_structure(
            lambda store, key=key: self._read_leaf(key, store, idx), value)
            for key, value in self.columns.items()}

    def _read_leaf(self, key: str, store: np.ndarray, idx: np.ndarray) -> np.ndarray:
        out = store[idx]
        if key in self.compressed_columns:
            return np.stack([compression.unpack(blob) for blob in out]) if len(out) else out
        return out

    def nbytes(self) -> int:
        """Bytes held by the arrays (compressed blobs counted by their length)."""
        if self.columns is None:
            return 0
        total = 0
        for key, value in self.columns.items():
            for leaf in tree.flatten(value):
                if leaf.dtype == object:
                    total += sum(len(b) for b in leaf[:self.size] if isinstance(b, bytes))
                    total += leaf.nbytes
                else:
                    total += leaf.nbytes
        return total

    # ----------------------------------------------------------------- state

    def get_state(self) -> Dict[str, Any]:
        """The stored items as numeric arrays (no pickle), for checkpoints.

        Compressed blobs are saved concatenated with their lengths; columns holding Python
        objects (e.g. `infos`) are not saved: `set_state` restores them as `None`s (of the
        saved per-item shape).
        """
        columns: Dict[str, Any] = {}
        object_columns = []
        # Per-item shapes of the object columns (sequence items: `[replay_sequence_length]`).
        object_shapes = {}
        for key, value in (self.columns or {}).items():
            if key in self.compressed_columns:
                columns[key] = tree.map_structure(lambda s: _join_blobs(s[:self.size]), value)
            elif any(leaf.dtype == object for leaf in tree.flatten(value)):
                object_columns.append(key)
                object_shapes[key] = [int(d) for d in tree.flatten(value)[0].shape[1:]]
            else:
                columns[key] = tree.map_structure(lambda s: s[:self.size].copy(), value)
        return {"slots": self.slots, "next_idx": self.next_idx, "size": self.size,
                "allocated": self.columns is not None, "columns": columns,
                "object_columns": object_columns, "object_shapes": object_shapes,
                "compressed_columns": sorted(self.compressed_columns)}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result (of a storage with the same `slots`).

        Raises:
            ValueError: If the saved storage had another number of slots or other
                compressed columns.
        """
        if int(state["slots"]) != self.slots:
            raise ValueError(f"{self.name}.set_state(): the saved buffer holds {state['slots']} "
                             f"items; this one {self.slots}. Build it with the same capacity "
                             "(and replay_sequence_length).")
        if sorted(state["compressed_columns"]) != sorted(self.compressed_columns):
            raise ValueError(f"{self.name}.set_state(): the saved buffer compressed "
                             f"{sorted(state['compressed_columns'])}; this one compresses "
                             f"{sorted(self.compressed_columns)}. Build it with the same "
                             "compress_observations.")
        size = int(state["size"])
        self.columns = None
        if state["allocated"]:
            columns = {}
            for key, value in state["columns"].items():
                if key in self.compressed_columns:
                    value = tree.map_structure_up_to(
                        _blob_structure(value), _split_blobs, value)
                    columns[key] = tree.map_structure(lambda v: self._restored(v, object), value)
                else:
                    columns[key] = tree.map_structure(lambda v: self._restored(v, v.dtype), value)
            shapes = state.get("object_shapes", {})
            for key in state["object_columns"]:
                shape = tuple(int(d) for d in shapes.get(key, ()))
                columns[key] = np.full((self.slots,) + shape, None, dtype=object)
            self.columns = columns
        self.next_idx = int(state["next_idx"])
        self.size = size

    def _restored(self, saved: np.ndarray, dtype: Any) -> np.ndarray:
        saved = np.asarray(saved) if dtype != object else saved
        if dtype == object:
            out = np.full(self.slots, None, dtype=object)
        else:
            out = np.empty((self.slots,) + saved.shape[1:], dtype)
        out[:len(saved)] = saved
        return out


def _num_items(items: Dict[str, Any]) -> int:
    counts = {len(leaf) for value in items.values() for leaf in tree.flatten(value)}
    if len(counts) != 1:
        raise ValueError(f"ColumnStorage.write(): the columns hold different numbers of items "
                         f"{sorted(counts)}; every column needs one entry per item.")
    return counts.pop()


def _join_blobs(blobs: np.ndarray) -> Dict[str, np.ndarray]:
    lengths = np.array([len(b) for b in blobs], dtype=np.int64)
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8).copy()
    return {"blob_bytes": data, "blob_lengths": lengths}


def _is_blob_dict(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"blob_bytes", "blob_lengths"}


def _blob_structure(value: Any) -> Any:
    """The nesting of `value` down to (not into) the joined-blob dicts."""
    if _is_blob_dict(value):
        return 0
    if isinstance(value, dict):
        return {k: _blob_structure(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_blob_structure(v) for v in value)
    return 0


def _split_blobs(joined: Dict[str, np.ndarray]) -> np.ndarray:
    data = np.asarray(joined["blob_bytes"], dtype=np.uint8).tobytes()
    ends = np.cumsum(joined["blob_lengths"])
    out = np.empty(len(ends), dtype=object)
    start = 0
    for i, end in enumerate(ends.tolist()):  # state restore only, not the hot path
        out[i] = data[start:end]
        start = end
    return out
