"""RLlib 2.x's `ReplayBuffer`: a FIFO of whole items (batches, sequences or episodes).

This is the buffer of `ray.rllib.utils.replay_buffers` (served at
`tfrl.utils.replay_buffers.replay_buffer`). Unlike the column-ring buffers of
`tfrl.execution.replay_buffer`, which the algorithms use and which store one row per
timestep, an item here is whatever one `add()` stores as a unit:

- `StorageUnit.TIMESTEPS` / `FRAGMENTS`: the added batch as it came (a SampleBatch or
  a MultiAgentBatch);
- `SEQUENCES`: each sequence of the batch's `seq_lens`;
- `EPISODES`: each complete episode of the batch (first `t` 0, last row done); pieces
  of episodes are dropped.

`capacity` counts timesteps: items are appended until the timesteps added since the
last wrap reach `capacity`, then writing starts again at slot 0 (`ItemRing`). Sampling
draws items uniformly with replacement and concatenates them.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = ReplayBuffer(capacity=4, seed=0)
    >>> buffer.add(SampleBatch({"obs": np.arange(3.0)}))  # one item of 3 timesteps
    >>> buffer.add(SampleBatch({"obs": np.arange(3.0, 5.0)}))  # 5 >= 4: wraps to slot 0
    >>> len(buffer), buffer.stats()["eviction_started"], buffer.sample(2).count in (4, 5, 6)
    (2, True, True)
"""

import enum
from typing import Any, Dict, List, Optional, Union

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch, concat_samples
from tfrl.utils.checks import check_int

# The policy key of a multi-agent buffer in lockstep mode (RLlib's `_ALL_POLICIES`).
ALL_POLICIES = "__all__"
_ALL_POLICIES = ALL_POLICIES

Item = Union[SampleBatch, MultiAgentBatch]


class StorageUnit(enum.Enum):
    """What one stored item is (see the module docstring)."""

    TIMESTEPS = "timesteps"
    SEQUENCES = "sequences"
    EPISODES = "episodes"
    FRAGMENTS = "fragments"


def to_storage_unit(owner: str, storage_unit: Any) -> StorageUnit:
    """`storage_unit` as a `StorageUnit` (a member or its value).

    Raises:
        ValueError: For anything else.
    """
    if isinstance(storage_unit, StorageUnit):
        return storage_unit
    for unit in StorageUnit:
        if storage_unit == unit.value:
            return unit
    raise ValueError(f"{owner}(storage_unit=...) must be one of "
                     f"{[u.value for u in StorageUnit]} (or a StorageUnit); received "
                     f"{storage_unit!r}.")


def check_capacity(owner: str, capacity: Any) -> int:
    """`capacity` as an int >= 1.

    Raises:
        ValueError: For anything else.
    """
    check_int(capacity, f"{owner}(capacity=...)", 1, "timesteps")
    return int(capacity)


def new_rng(seed: Optional[int]) -> np.random.Generator:
    """The sampling RNG: from `seed`, or (None) seeded from numpy's global RNG, so that
    `np.random.seed(...)` makes unseeded buffers repeatable (as RLlib's, which draw from
    the global RNGs)."""
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1))
    return np.random.default_rng(seed)


class ItemRing:
    """A FIFO of whole items whose capacity counts timesteps (RLlib's eviction rule).

    An item is written at `next_idx` (appended while the list is shorter). After each
    write, once the timesteps written since the last wrap reach `capacity`, the next
    write goes to slot 0 again; so the list never holds more than `capacity` items.

    Args:
        capacity: Timesteps per round of the ring (>= 1).

    Attributes:
        items: The stored items, by slot.
        next_idx: The slot the next item goes to.
        num_timesteps_added: Timesteps written over the ring's life.
        num_timesteps_added_wrap: Timesteps written since the last wrap.
        eviction_started: Whether the ring has wrapped (is overwriting).
        est_size_bytes: Bytes of the items appended (not of overwritten ones).
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.items: List[Item] = []
        self.next_idx = 0
        self.num_timesteps_added = 0
        self.num_timesteps_added_wrap = 0
        self.eviction_started = False
        self.est_size_bytes = 0

    def __len__(self) -> int:
        return len(self.items)

    @property
    def size(self) -> int:
        """Items stored."""
        return len(self.items)

    @property
    def slots(self) -> int:
        """The most items the ring can hold (each item has >= 1 timestep)."""
        return self.capacity

    def count_added(self, item: Item) -> None:
        """Counts `item`'s timesteps as added (whether or not it is kept)."""
        self.num_timesteps_added += item.count
        self.num_timesteps_added_wrap += item.count

    def put(self, idx: int, item: Item) -> None:
        """Stores `item` at slot `idx` (appends at `idx == len(self)`), uncounted."""
        if idx >= len(self.items):
            self.items.append(item)
            self.est_size_bytes += item.size_bytes()
        else:
            self.items[idx] = item

    def write(self, item: Item) -> int:
        """Stores `item` FIFO (counted); returns its slot."""
        idx = self.next_idx
        self.count_added(item)
        self.put(idx, item)
        if self.num_timesteps_added_wrap >= self.capacity:
            self.eviction_started = True
            self.num_timesteps_added_wrap = 0
            self.next_idx = 0
        else:
            self.next_idx += 1
        return idx

    def read(self, idx: Any) -> List[Item]:
        """The items at slots `idx`."""
        return [self.items[i] for i in np.asarray(idx, dtype=np.int64).reshape(-1).tolist()]

    def nbytes(self) -> int:
        return self.est_size_bytes

    def get_state(self) -> Dict[str, Any]:
        """The items (the same objects) and counters."""
        return {"items": list(self.items), "next_idx": self.next_idx,
                "num_timesteps_added": self.num_timesteps_added,
                "num_timesteps_added_wrap": self.num_timesteps_added_wrap,
                "eviction_started": self.eviction_started,
                "est_size_bytes": self.est_size_bytes}

    def set_state(self, state: Dict[str, Any]) -> None:
        self.items = list(state["items"])
        self.next_idx = int(state["next_idx"])
        self.num_timesteps_added = int(state["num_timesteps_added"])
        self.num_timesteps_added_wrap = int(state["num_timesteps_added_wrap"])
        self.eviction_started = bool(state["eviction_started"])
        self.est_size_bytes = int(state["est_size_bytes"])


def concat_items(items: List[Item]) -> Item:
    """The items concatenated (an empty SampleBatch for none), decompressed."""
    if not items:
        return SampleBatch()
    out = concat_samples(items)
    out.decompress_if_needed()
    return out


def split_sequences(owner: str, batch: SampleBatch) -> List[SampleBatch]:
    """One batch per sequence of `batch`'s `seq_lens`.

    Raises:
        ValueError: If `batch` has no `seq_lens`.
    """
    seq_lens = batch.get(Columns.SEQ_LENS)
    if seq_lens is None:
        raise ValueError(f"{owner}.add(): storage_unit='sequences' needs a batch with "
                         f"seq_lens; received columns {sorted(batch.keys())}. Add sequence "
                         "batches, or use storage_unit='timesteps'.")
    ends = np.cumsum(np.asarray(seq_lens, dtype=np.int64)).tolist()
    starts = [0] + ends[:-1]
    return [batch[a:b] for a, b in zip(starts, ends) if b > a]


def complete_episodes(batch: SampleBatch) -> List[SampleBatch]:
    """The episodes of `batch` that start at `t` 0 and end done (terminated/truncated)."""
    out = []
    for episode in batch.split_by_episode():
        t = episode.get(Columns.T)
        starts = t is None or int(np.asarray(t).reshape(-1)[0]) == 0
        if starts and episode.is_terminated_or_truncated():
            out.append(episode)
    return out


class ReplayBuffer:
    """RLlib 2.x's replay buffer: a FIFO of items, sampled uniformly with replacement.

    Args:
        capacity: Timesteps kept (the FIFO wraps once this many were added since the
            last wrap; see `ItemRing`).
        storage_unit: "timesteps" or "fragments" (an added batch is one item),
            "sequences" (each sequence of `seq_lens`), "episodes" (each complete
            episode), or a `StorageUnit`.
        seed: Seed of the sampling RNG (None: drawn from numpy's global RNG).
        **kwargs: Ignored (RLlib's forward-compatibility arguments).

    Raises:
        ValueError: For a capacity < 1 or an unknown storage unit.
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 seed: Optional[int] = None, **kwargs: Any):
        name = type(self).__name__
        self.capacity = check_capacity(name, capacity)
        self.storage_unit = to_storage_unit(name, storage_unit)
        self._ring = ItemRing(self.capacity)
        self._rng = new_rng(seed)
        self._num_timesteps_sampled = 0
        self.batch_size: Optional[int] = None

    def __len__(self) -> int:
        """Items stored."""
        return len(self._ring)

    # RLlib's attribute names, read by its tests and by code ported from it.
    @property
    def _storage(self) -> List[Item]:
        return self._ring.items

    @property
    def _next_idx(self) -> int:
        return self._ring.next_idx

    @property
    def _num_timesteps_added(self) -> int:
        return self._ring.num_timesteps_added

    @property
    def _num_timesteps_added_wrap(self) -> int:
        return self._ring.num_timesteps_added_wrap

    @property
    def _eviction_started(self) -> bool:
        return self._ring.eviction_started

    @property
    def _est_size_bytes(self) -> int:
        return self._ring.est_size_bytes

    def add(self, batch: Item, **kwargs: Any) -> None:
        """Stores `batch` as items of `storage_unit`.

        Args:
            batch: A SampleBatch with rows (or a MultiAgentBatch, for "timesteps" and
                "fragments").
            **kwargs: Passed to `_add_single_batch` (e.g. `weight` of prioritized
                buffers).

        Raises:
            TypeError: If `batch` is neither batch class.
            ValueError: If it is empty, or a MultiAgentBatch for "sequences"/"episodes".
        """
        name = type(self).__name__
        if not isinstance(batch, (SampleBatch, MultiAgentBatch)):
            raise TypeError(f"{name}.add() takes a SampleBatch or MultiAgentBatch; received "
                            f"{type(batch).__name__}.")
        if batch.count == 0:
            raise ValueError(f"{name}.add() received an empty batch (count 0); add batches "
                             "with at least one timestep.")
        unit = self.storage_unit
        if isinstance(batch, MultiAgentBatch) and unit not in (StorageUnit.TIMESTEPS,
                                                                StorageUnit.FRAGMENTS):
            raise ValueError(f"{name}.add(): a MultiAgentBatch cannot be stored with "
                             f"storage_unit={unit.value!r}; use 'timesteps' or 'fragments', "
                             "or a MultiAgentReplayBuffer.")
        items: List[Item] = [batch]
        if isinstance(batch, SampleBatch) and unit is StorageUnit.SEQUENCES:
            items = list(split_sequences(name, batch))
        elif isinstance(batch, SampleBatch) and unit is StorageUnit.EPISODES:
            items = list(complete_episodes(batch))
        for item in items:
            self._add_single_batch(item, **kwargs)

    def _add_single_batch(self, item: Item, **kwargs: Any) -> int:
        """Stores `item` as one item, whatever the storage unit; returns its slot."""
        return self._ring.write(item)

    def _check_sample(self, num_items: Any) -> int:
        name = type(self).__name__
        check_int(num_items, f"{name}.sample(num_items=...)", 0)
        if num_items and len(self) == 0:
            raise ValueError(f"{name}.sample({num_items}): the buffer is empty; add batches "
                             "before sampling.")
        return int(num_items)

    def sample(self, num_items: int, **kwargs: Any) -> Item:
        """`num_items` items drawn uniformly with replacement, concatenated.

        Raises:
            ValueError: If `num_items` is not an int >= 0, or the buffer is empty.
        """
        num_items = self._check_sample(num_items)
        idx: Any = self._rng.integers(0, len(self), size=num_items) if num_items else []
        out = self._encode_sample(idx)
        self._num_timesteps_sampled += out.count
        return out

    def _encode_sample(self, idxes: Any) -> Item:
        return concat_items(self._ring.read(idxes))

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """Counters: timesteps added (and since the last wrap), sampled, entries, bytes."""
        return {"added_count": self._ring.num_timesteps_added,
                "added_count_wrapped": self._ring.num_timesteps_added_wrap,
                "eviction_started": self._ring.eviction_started,
                "sampled_count": self._num_timesteps_sampled,
                "est_size_bytes": self._ring.est_size_bytes,
                "num_entries": len(self._ring)}

    def get_state(self) -> Dict[str, Any]:
        """The items (the same objects, in a new list), counters and RNG state."""
        state = {"_storage": list(self._ring.items), "_next_idx": self._ring.next_idx,
                 "rng": self._rng.bit_generator.state}
        state.update(self.stats(debug=False))
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result."""
        self._ring.set_state({
            "items": state["_storage"], "next_idx": state["_next_idx"],
            "num_timesteps_added": state["added_count"],
            "num_timesteps_added_wrap": state["added_count_wrapped"],
            "eviction_started": state["eviction_started"],
            "est_size_bytes": state["est_size_bytes"]})
        self._num_timesteps_sampled = int(state["sampled_count"])
        if "rng" in state:
            self._rng.bit_generator.state = state["rng"]
