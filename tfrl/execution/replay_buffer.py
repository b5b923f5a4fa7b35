"""Replay buffers: uniform, prioritized, and one per policy (`LocalReplayBuffer`).

- `ReplayBuffer`: a FIFO ring of items (timesteps, fixed-length sequences, or whole
  added batches: "fragments", RLlib 1.x's items), sampled uniformly with replacement.
- `PrioritizedReplayBuffer`: proportional prioritization (Schaul et al. 2016): item `i`
  is sampled with probability `p_i**alpha / sum_k p_k**alpha` (a `SumSegmentTree`, O(log n)
  per sample and update) and carries the importance weight
  `w_i = (N * P(i))**-beta / max_k (N * P(k))**-beta` (the max from a `MinSegmentTree`).
  Sampled batches hold the columns `weights` and `batch_indexes`; after a learn step,
  `update_priorities(batch_indexes, new_priorities)`.
- `LocalReplayBuffer`: one of these per policy, `replay_batch_size` items per policy and
  replay, `learning_starts`, optional n-step transitions built at insertion.

Storage is one preallocated numpy array per column (`ColumnStorage`); adding and sampling
are vectorized. Every buffer has `get_state()`/`set_state()` returning numeric arrays and
plain values, which `tfrl.algorithms.checkpoints.write_checkpoint` stores without pickle.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = LocalReplayBuffer(capacity=4, replay_batch_size=2, seed=0)
    >>> buffer.add_batch(SampleBatch({"obs": np.arange(6.0)}))
    >>> len(buffer), sorted(buffer.replay()["obs"].tolist())[0] >= 2.0
    (4, True)
    >>> prio = PrioritizedReplayBuffer(capacity=4, alpha=1.0, seed=0)
    >>> prio.add(SampleBatch({"obs": np.arange(2.0)})).tolist()  # the slots written
    [0, 1]
    >>> prio.update_priorities(np.array([0, 1]), np.array([1.0, 3.0]))
    >>> batch = prio.sample(2, beta=1.0)  # item 1 (P = 3/4) has weight (3 / 1) ** -1
    >>> [(int(i), round(float(w), 3)) for i, w in zip(batch["batch_indexes"], batch["weights"])]
    [(1, 0.333), (1, 0.333)]
"""

from typing import Any, Dict, Optional, Union, cast

import numpy as np
import tree

from tfrl.core import types
from tfrl.core.columns import Columns
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from tfrl.execution import replay_buffer_rows as rows
from tfrl.execution.replay_buffer_storage import ColumnStorage
from tfrl.execution.replay_buffers.replay_buffer import ItemRing, concat_items
from tfrl.execution.segment_tree import MinSegmentTree, SumSegmentTree
from tfrl.utils import compression
from tfrl.utils.schedules import Schedule
from tfrl.utils.checks import check_int

# Columns added to prioritized samples.
WEIGHTS = "weights"
BATCH_INDEXES = "batch_indexes"
STORAGE_UNITS = ("timesteps", "sequences", "fragments")
DEFAULT_CAPACITY = 10000
# Observation columns `compress_observations` stores compressed.
_OBS_COLUMNS = (Columns.OBS, Columns.NEXT_OBS)




def _check_float(owner: str, name: str, value: Any, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or value < minimum:
        raise ValueError(f"{owner}({name}=...) must be a finite number >= {minimum}; received "
                         f"{value!r}.")
    return float(value)


def _unpack_bulk(batch: SampleBatch) -> SampleBatch:
    """A shallow copy of `batch` whose columns packed as one blob are unpacked; columns
    packed row by row (object arrays of blobs) stay packed."""
    out = batch.copy(shallow=True)
    for key in _OBS_COLUMNS:
        if key in out:
            out[key] = tree.map_structure(compression.unpack_if_needed, out[key])
    return out


class ReplayBuffer:
    """Uniform replay: a FIFO ring of timesteps, sequences or fragments, sampled with
    replacement.

    Args:
        capacity: Timesteps kept (>= 1; default 10000). With `storage_unit="sequences"`
            the ring holds `capacity // replay_sequence_length` sequences.
        storage_unit: "timesteps" (an item is a row), "sequences" (an item is up to
            `replay_sequence_length` rows of one episode, zero-padded; for recurrent
            policies) or "fragments" (an item is one added batch, as in RLlib 1.x; the
            ring wraps once `capacity` timesteps were added since the last wrap, see
            `tfrl.execution.replay_buffers.replay_buffer.ItemRing`). None: "fragments"
            if the buffer is built with RLlib 1.x's `size=`, else "timesteps".
        replay_sequence_length: Rows per sequence item (sequences only).
        replay_zero_init_states: Sequences: replay `state_in_*` as zeros (else the state
            stored at the sequence's first row).
        compress_observations: Keep `obs`/`new_obs` compressed per item (saves memory
            for images; costs a zlib pack per added and an unpack per sampled item).
        seed: Seed of the sampling RNG (None: drawn from numpy's global RNG, so that
            `np.random.seed` makes it repeatable).
        size: RLlib 1.x's name of `capacity` (pass one of both); selects "fragments"
            unless `storage_unit` is given.

    Raises:
        ValueError: For a capacity < 1 (or below one sequence), an unknown storage unit,
            a sequence length < 1, both `capacity` and `size`, or "fragments" with
            `compress_observations`.
    """

    def __init__(self, capacity: Optional[int] = None, storage_unit: Optional[str] = None, *,
                 replay_sequence_length: int = 1, replay_zero_init_states: bool = True,
                 compress_observations: bool = False, seed: Optional[int] = None,
                 size: Optional[int] = None):
        name = type(self).__name__
        if capacity is not None and size is not None:
            raise ValueError(f"{name}: received capacity={capacity!r} and size={size!r}; "
                             "size is RLlib 1.x's name of capacity, pass one of both.")
        if storage_unit is None:
            storage_unit = "fragments" if size is not None else "timesteps"
        if capacity is None:
            capacity = DEFAULT_CAPACITY if size is None else size
        self.capacity = check_int(capacity, f"{name}(capacity=...)", 1)
        if storage_unit not in STORAGE_UNITS:
            raise ValueError(f"{name}(storage_unit=...) must be one of {list(STORAGE_UNITS)}; "
                             f"received {storage_unit!r}.")
        self.storage_unit = storage_unit
        self.replay_sequence_length = check_int(replay_sequence_length,
                                                f"{name}(replay_sequence_length=...)", 1)
        self.replay_zero_init_states = bool(replay_zero_init_states)
        self.compress_observations = bool(compress_observations)
        if storage_unit == "fragments" and self.compress_observations:
            raise ValueError(f"{name}: storage_unit='fragments' stores batches as they come "
                             "(compressed ones stay compressed); compress_observations works "
                             "with 'timesteps' and 'sequences'.")
        slots = self.capacity
        if storage_unit == "sequences":
            slots = self.capacity // self.replay_sequence_length
            if slots < 1:
                raise ValueError(f"{name}: capacity={capacity} timesteps holds no sequence of "
                                 f"replay_sequence_length={replay_sequence_length}; raise "
                                 "capacity to at least replay_sequence_length.")
        self._storage: Union[ColumnStorage, ItemRing] = (
            ItemRing(self.capacity) if storage_unit == "fragments" else ColumnStorage(
                slots, _OBS_COLUMNS if self.compress_observations else (), name=name))
        if seed is None:  # repeatable under np.random.seed, as RLlib's global-RNG buffers
            seed = int(np.random.randint(0, 2**31 - 1))
        self._rng = np.random.default_rng(seed)
        self.num_added = 0  # timesteps
        self.num_sampled = 0  # items

    def __len__(self) -> int:
        """Items stored (timesteps, sequences or fragments)."""
        return self._storage.size

    @property
    def slots(self) -> int:
        """Items the ring holds when full (at most, for fragments)."""
        return self._storage.slots

    @property
    def _next_idx(self) -> int:
        """The slot the next item goes to (RLlib's attribute name)."""
        return self._storage.next_idx

    def add(self, batch: SampleBatch, weight: Optional[float] = None) -> np.ndarray:
        """Stores the rows (or sequences) of `batch`.

        Args:
            batch: A SampleBatch. Observations a worker packed (`SampleBatch.compress`)
                are unpacked, or with `compress_observations` (timesteps) stored as
                they came, packed row by row.
            weight: Unused by the uniform buffer (the priority, for prioritized ones).

        Returns:
            The slot indices the new items went to.

        Raises:
            TypeError: If `batch` is not a SampleBatch.
            ValueError: If its columns or shapes differ from the stored ones, or a
                timesteps buffer receives a sequence batch.
        """
        if not isinstance(batch, SampleBatch):
            raise TypeError(f"{type(self).__name__}.add() takes a SampleBatch; received "
                            f"{type(batch).__name__}.")
        if batch.count == 0:
            return np.zeros(0, dtype=np.int64)
        if isinstance(self._storage, ItemRing):  # fragments: the batch is one item
            self.num_added += batch.count
            return np.array([self._storage.write(batch)], dtype=np.int64)
        if self.compress_observations and self.storage_unit == "timesteps":
            batch = _unpack_bulk(batch)  # rows a worker packed are stored as they are
        else:
            batch = batch.copy(shallow=True).decompress_if_needed()
        if self.storage_unit == "timesteps":
            if Columns.SEQ_LENS in batch:
                raise ValueError(
                    f"{type(self).__name__} stores timesteps; received a sequence batch (with "
                    "seq_lens). Replay whole sequences with storage_unit='sequences' "
                    "(LocalReplayBuffer: replay_sequence_length > 1).")
            items = dict(batch.items())
        else:
            items = rows.to_sequence_items(batch, self.replay_sequence_length,
                                           self.replay_zero_init_states)
        idx = self._storage.write(items)
        self.num_added += batch.count
        return idx

    def _check_sample(self, num_items: Any, allow_fewer: bool) -> int:
        name = type(self).__name__
        num_items = check_int(num_items, f"{name}.sample(num_items=...)", 1)
        if len(self) == 0 or (len(self) < num_items and not allow_fewer):
            raise ValueError(
                f"{name}.sample({num_items}): the buffer holds {len(self)} "
                f"{self.storage_unit}, fewer than the {num_items} requested. Add more "
                "before sampling (e.g. learning_starts >= the batch size), or sample fewer.")
        return num_items

    def _batch(self, idx: np.ndarray, extra: Optional[Dict[str, np.ndarray]] = None
               ) -> SampleBatch:
        if isinstance(self._storage, ItemRing):  # fragments: per-item columns per row
            fragments = self._storage.read(idx)
            out = cast(SampleBatch, concat_items(fragments))
            rows_per_item = np.array([f.count for f in fragments], dtype=np.int64)
            for key, value in (extra or {}).items():
                out[key] = np.repeat(value, rows_per_item)
            self.num_sampled += len(idx)
            return out
        items = self._storage.read(idx)
        self.num_sampled += len(idx)
        if self.storage_unit == "sequences":
            return rows.from_sequence_items(items, self.replay_sequence_length, extra)
        items.update(extra or {})
        return SampleBatch(items)

    def sample(self, num_items: int, beta: Optional[float] = None, *,
               allow_fewer: bool = True) -> SampleBatch:
        """`num_items` items drawn uniformly with replacement.

        Args:
            num_items: Items to draw (timesteps, or sequences: then the batch holds
                `num_items * replay_sequence_length` zero-padded rows and `seq_lens`;
                or fragments: their rows concatenated).
            beta: Unused (prioritized buffers' importance exponent).
            allow_fewer: Draw even when the buffer holds fewer than `num_items` items
                (with replacement, some come more than once; RLlib's behaviour). False:
                that is an error.

        Raises:
            ValueError: If the buffer is empty, or holds fewer than `num_items` items and
                not `allow_fewer`.
        """
        num_items = self._check_sample(num_items, allow_fewer)
        return self._batch(self._rng.integers(0, len(self), size=num_items))

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """`added_count` (timesteps), `sampled_count` (items), `num_entries`, `est_size_bytes`."""
        return {"added_count": self.num_added, "sampled_count": self.num_sampled,
                "num_entries": len(self), "est_size_bytes": self._storage.nbytes()}

    def get_state(self) -> Dict[str, Any]:
        """Contents, counters and RNG state (numeric arrays and plain values)."""
        return {"storage": self._storage.get_state(), "num_added": self.num_added,
                "num_sampled": self.num_sampled, "rng": self._rng.bit_generator.state}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result (into a buffer built with the same arguments)."""
        self._storage.set_state(state["storage"])
        self.num_added = int(state["num_added"])
        self.num_sampled = int(state["num_sampled"])
        self._rng.bit_generator.state = state["rng"]


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritized replay (see the module docstring for the formulas).

    New items get the largest priority given so far (1.0 at first), so each is likely
    replayed at least once.

    Args:
        capacity: Timesteps kept (see `ReplayBuffer`).
        alpha: Prioritization exponent (0: uniform).
        storage_unit, replay_sequence_length, replay_zero_init_states,
            compress_observations, seed, size: As for `ReplayBuffer`.

    Raises:
        ValueError: As `ReplayBuffer`, or for a negative/non-finite `alpha`.
    """

    def __init__(self, capacity: Optional[int] = None, alpha: float = 1.0,
                 storage_unit: Optional[str] = None, **kwargs: Any):
        super().__init__(capacity, storage_unit, **kwargs)
        self.alpha = _check_float(type(self).__name__, "alpha", alpha)
        self._it_sum = SumSegmentTree(self.slots)
        self._it_min = MinSegmentTree(self.slots)
        self._max_priority = 1.0

    def add(self, batch: SampleBatch, weight: Optional[float] = None) -> np.ndarray:
        """Stores `batch`'s items with priority `weight` (None: the largest so far).

        Raises:
            ValueError: As `ReplayBuffer.add`, or for a `weight` that is not positive
                and finite.
        """
        priority = self._max_priority if weight is None else weight
        self._check_priorities(np.array([priority], dtype=np.float64), "add(weight=...)")
        idx = super().add(batch)
        value = float(priority) ** self.alpha
        self._it_sum[idx] = value
        self._it_min[idx] = value
        return idx

    def sample(self, num_items: int, beta: Optional[float] = None, *,
               allow_fewer: bool = True) -> SampleBatch:
        """`num_items` items drawn in proportion to their priorities, with replacement.

        The batch gains `weights` (float32 importance weights, max 1) and
        `batch_indexes` (int64 item indices for `update_priorities`); sequence batches
        repeat both over each sequence's rows.

        Args:
            num_items: Items to draw.
            beta: Importance-weight exponent >= 0 (0: all weights 1; 1: full correction).
                None means 0.
            allow_fewer: As for `ReplayBuffer.sample`.

        Raises:
            ValueError: As `ReplayBuffer.sample`, or for a negative/non-finite `beta`.
        """
        num_items = self._check_sample(num_items, allow_fewer)
        beta = _check_float(f"{type(self).__name__}.sample", "beta",
                            0.0 if beta is None else beta)
        total = self._it_sum.sum()
        idx = self._it_sum.find_prefixsum_idx(self._rng.random(num_items) * total)
        # w_i = (N P(i))^-beta / max_k (N P(k))^-beta = (p_i / p_min)^-beta
        weights = (self._it_sum[idx] / self._it_min.min()) ** (-beta)
        return self._batch(idx, {WEIGHTS: weights.astype(np.float32),
                                 BATCH_INDEXES: idx.astype(np.int64)})

    def _check_priorities(self, priorities: np.ndarray, where: str) -> None:
        bad = ~(np.isfinite(priorities) & (priorities > 0))
        if bad.any():
            raise ValueError(
                f"{type(self).__name__}.{where}: priorities must be positive and finite; "
                f"received {priorities[bad][:5].tolist()} at positions "
                f"{np.flatnonzero(bad)[:5].tolist()}. Use |TD error| + a small epsilon "
                "(prioritized_replay_eps).")

    def update_priorities(self, idxes: Any, priorities: Any) -> None:
        """Sets the priorities of items `idxes` (from a sample's `batch_indexes`).

        An index given more than once (the rows of a replayed sequence, or an item drawn
        twice) takes the largest of its priorities.

        Args:
            idxes: Item indices, `[n]`.
            priorities: New priorities `p > 0`, `[n]` (stored as `p ** alpha`).

        Raises:
            ValueError: If the lengths differ, a priority is not positive and finite, or
                an index is not that of a stored item.
        """
        idxes = np.asarray(idxes).reshape(-1)
        priorities = np.asarray(priorities, dtype=np.float64).reshape(-1)
        name = type(self).__name__
        if idxes.shape != priorities.shape:
            raise ValueError(f"{name}.update_priorities(): received {idxes.size} indices and "
                             f"{priorities.size} priorities; pass one priority per index "
                             "(the sample's batch_indexes with its TD errors).")
        if idxes.size and not np.issubdtype(idxes.dtype, np.integer):
            raise ValueError(f"{name}.update_priorities(): indices must be integers; received "
                             f"dtype {idxes.dtype}. Pass the sample's batch_indexes.")
        self._check_priorities(priorities, "update_priorities()")
        if idxes.size and (idxes.min() < 0 or idxes.max() >= len(self)):
            raise ValueError(f"{name}.update_priorities(): indices must be in [0, {len(self)}) "
                             f"(the items stored); received {idxes.min()}..{idxes.max()}.")
        if idxes.size == 0:
            return
        unique, inverse = np.unique(idxes, return_inverse=True)
        largest = np.zeros(len(unique))
        np.maximum.at(largest, inverse, priorities)
        values = largest ** self.alpha
        self._it_sum[unique] = values
        self._it_min[unique] = values
        self._max_priority = max(self._max_priority, float(largest.max()))

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """`ReplayBuffer.stats()` plus `max_priority`."""
        return dict(super().stats(debug), max_priority=self._max_priority)

    def get_state(self) -> Dict[str, Any]:
        """`ReplayBuffer.get_state()` plus the stored priorities (`p ** alpha`)."""
        state = super().get_state()
        state["priorities"] = self._it_sum[np.arange(len(self))].copy()
        state["max_priority"] = self._max_priority
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result (into a buffer built with the same arguments)."""
        super().set_state(state)
        values = np.asarray(state["priorities"], dtype=np.float64)
        self._it_sum = SumSegmentTree(self.slots)
        self._it_min = MinSegmentTree(self.slots)
        if len(values):
            self._it_sum[np.arange(len(values))] = values
            self._it_min[np.arange(len(values))] = values
        self._max_priority = float(state["max_priority"])


BetaType = Union[float, Schedule]


class LocalReplayBuffer:
    """Replay per policy: one `ReplayBuffer` (or `PrioritizedReplayBuffer`) per policy id.

    Args:
        capacity: Timesteps kept per policy.
        replay_batch_size: Items per policy in each replayed batch (timesteps, or
            sequences).
        learning_starts: `replay()` returns None until this many timesteps were added.
            From then on each policy's buffer is sampled with replacement, even while it
            holds fewer than `replay_batch_size` items.
        seed: Seed of the sampling RNGs.
        prioritized_replay: Prioritized (proportional) buffers instead of uniform ones.
        prioritized_replay_alpha: Prioritization exponent.
        prioritized_replay_beta: Importance-weight exponent: a float, or a `Schedule`
            evaluated at the number of timesteps added so far.
        prioritized_replay_eps: Added to `|td_error|` in `update_priorities`.
        storage_unit: "timesteps" or "sequences"; None: "sequences" if
            `replay_sequence_length > 1`, else "timesteps".
        replay_sequence_length: Rows per stored sequence.
        replay_zero_init_states: Sequences replay zero `state_in_*`.
        compress_observations: Keep `obs`/`new_obs` compressed in the buffers.
        n_step: Store n-step transitions (`adjust_nstep`), built at insertion, with the
            column `n_step` (the bootstrap's discount exponent). 1: rows as they come.
        gamma: Discount of the n-step returns.

    Raises:
        ValueError: If `capacity` or `replay_batch_size` is not an int >= 1, or another
            argument is out of range.
    """

    def __init__(self, capacity: int, replay_batch_size: int, learning_starts: int = 0,
                 seed: Optional[int] = None, *, prioritized_replay: bool = False,
                 prioritized_replay_alpha: float = 0.6,
                 prioritized_replay_beta: BetaType = 0.4,
                 prioritized_replay_eps: float = 1e-6, storage_unit: Optional[str] = None,
                 replay_sequence_length: int = 1, replay_zero_init_states: bool = True,
                 compress_observations: bool = False, n_step: int = 1, gamma: float = 0.99):
        name = type(self).__name__
        self.capacity = check_int(capacity, f"{name}(capacity=...)", 1)
        self.replay_batch_size = check_int(replay_batch_size, f"{name}(replay_batch_size=...)", 1)
        self.learning_starts = check_int(learning_starts, f"{name}(learning_starts=...)", 0)
        self.prioritized_replay = bool(prioritized_replay)
        self.prioritized_replay_alpha = _check_float(name, "prioritized_replay_alpha",
                                                     prioritized_replay_alpha)
        if not isinstance(prioritized_replay_beta, Schedule):
            prioritized_replay_beta = _check_float(name, "prioritized_replay_beta",
                                                   prioritized_replay_beta)
        self.prioritized_replay_beta = prioritized_replay_beta
        self.prioritized_replay_eps = _check_float(name, "prioritized_replay_eps",
                                                   prioritized_replay_eps)
        self.replay_sequence_length = check_int(replay_sequence_length,
                                                f"{name}(replay_sequence_length=...)", 1)
        if storage_unit is None:
            storage_unit = "sequences" if self.replay_sequence_length > 1 else "timesteps"
        self.n_step = check_int(n_step, f"{name}(n_step=...)", 1)
        self.gamma = _check_float(name, "gamma", gamma)
        self._buffer_kwargs: Dict[str, Any] = dict(
            storage_unit=storage_unit, replay_sequence_length=self.replay_sequence_length,
            replay_zero_init_states=replay_zero_init_states,
            compress_observations=compress_observations)
        ReplayBuffer(self.capacity, seed=0, **self._buffer_kwargs)  # checks them now
        self._seed_sequence = np.random.SeedSequence(seed)
        self.replay_buffers: Dict[str, ReplayBuffer] = {}
        self.num_added = 0
        self._multi_agent = False

    def __len__(self) -> int:
        return sum(len(b) for b in self.replay_buffers.values())

    def _new_buffer(self) -> ReplayBuffer:
        # One child seed per policy, in the order the policies first add rows.
        seed = self._seed_sequence.spawn(1)[0]
        rng_seed = int(seed.generate_state(1, np.uint64)[0])
        if self.prioritized_replay:
            return PrioritizedReplayBuffer(self.capacity, alpha=self.prioritized_replay_alpha,
                                           seed=rng_seed, **self._buffer_kwargs)
        return ReplayBuffer(self.capacity, seed=rng_seed, **self._buffer_kwargs)

    def add_batch(self, batch: types.Batch) -> None:
        """Stores the rows of a SampleBatch or MultiAgentBatch (n-step transitions first
        if `n_step > 1`).

        A `weights` column holds the rows' priorities, computed where the rows were
        sampled (RLlib's worker-side prioritization, as Ape-X DQN's workers do): a
        prioritized buffer stores the rows with them instead of the largest priority so
        far; the column itself is not stored (a uniform buffer drops it).

        Raises:
            TypeError: If `batch` is neither.
        """
        if isinstance(batch, MultiAgentBatch):
            self._multi_agent = True
            batches = batch.policy_batches
        elif isinstance(batch, SampleBatch):
            batches = {DEFAULT_POLICY_ID: batch}
        else:
            raise TypeError(f"LocalReplayBuffer.add_batch takes a SampleBatch or MultiAgentBatch; "
                            f"received {type(batch).__name__}.")
        for pid, policy_rows in batches.items():
            if not policy_rows.count:
                continue
            priorities = None
            if WEIGHTS in policy_rows:  # priorities from the worker, not a stored column
                policy_rows = policy_rows.copy(shallow=True)
                priorities = np.asarray(policy_rows.pop(WEIGHTS), dtype=np.float64)
            if self.n_step > 1:
                policy_rows = _unpack_bulk(policy_rows)  # row blobs can be gathered
                rows.adjust_nstep(self.n_step, self.gamma, policy_rows)
            # Keep the buffer only once it holds rows: a rejected batch leaves no empty
            # buffer behind for `replay()` to sample from.
            buffer = self.replay_buffers.get(pid)
            if buffer is None:
                buffer = self._new_buffer()
                idx = buffer.add(policy_rows)
                self.replay_buffers[pid] = buffer
            else:
                idx = buffer.add(policy_rows)
            if (priorities is not None and isinstance(buffer, PrioritizedReplayBuffer)
                    and buffer.storage_unit == "timesteps"):
                buffer.update_priorities(idx, priorities)
        self.num_added += batch.count

    add = add_batch  # RLlib 2's name

    def beta(self) -> float:
        """The importance-weight exponent now (the schedule at `num_added`)."""
        beta = self.prioritized_replay_beta
        return float(beta.value(self.num_added)) if isinstance(beta, Schedule) else beta

    def replay(self) -> Optional[types.Batch]:
        """`replay_batch_size` sampled items per policy, or None before `learning_starts`.

        Prioritized buffers add `weights` and `batch_indexes` columns.
        """
        if self.num_added < max(1, self.learning_starts) or not self.replay_buffers:
            return None
        beta = self.beta() if self.prioritized_replay else None
        batches = {pid: buffer.sample(self.replay_batch_size, beta, allow_fewer=True)
                   for pid, buffer in self.replay_buffers.items()}
        if not self._multi_agent and list(batches) == [DEFAULT_POLICY_ID]:
            return batches[DEFAULT_POLICY_ID]
        return MultiAgentBatch(batches, max(b.count for b in batches.values()))

    def update_priorities(self, prio_dict: Dict[str, Any]) -> None:
        """Sets priorities `|td_error| + prioritized_replay_eps` per policy.

        Args:
            prio_dict: Policy id -> `(batch_indexes, td_errors)` of a replayed batch.
                Ignored without `prioritized_replay`.

        Raises:
            KeyError: For a policy this buffer holds no rows of.
            ValueError: As `PrioritizedReplayBuffer.update_priorities` (e.g. NaN TD errors).
        """
        if not self.prioritized_replay:
            return
        for pid, (batch_indexes, td_errors) in prio_dict.items():
            buffer = self.replay_buffers.get(pid)
            if buffer is None:
                raise KeyError(f"LocalReplayBuffer.update_priorities(): no rows of policy "
                               f"{pid!r} were stored; it holds {sorted(self.replay_buffers)}.")
            if not isinstance(buffer, PrioritizedReplayBuffer):
                raise RuntimeError("LocalReplayBuffer: a prioritized buffer holds a uniform "
                                   f"buffer for policy {pid!r}")
            priorities = np.abs(np.asarray(td_errors, dtype=np.float64))
            buffer.update_priorities(batch_indexes, priorities + self.prioritized_replay_eps)

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """Per policy: `policy_<pid>` -> the buffer's `stats()`."""
        return {f"policy_{pid}": b.stats(debug) for pid, b in self.replay_buffers.items()}

    def get_state(self) -> Dict[str, Any]:
        """Every policy's buffer state, counters and seeds (for checkpoints)."""
        return {"num_added": self.num_added, "multi_agent": self._multi_agent,
                "seed_sequence": {"entropy": self._seed_sequence.entropy,
                                  "spawned": self._seed_sequence.n_children_spawned},
                "buffers": {pid: b.get_state() for pid, b in self.replay_buffers.items()}}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result into a buffer built with the same arguments."""
        seeds = state["seed_sequence"]
        self._seed_sequence = np.random.SeedSequence(
            seeds["entropy"], n_children_spawned=int(seeds["spawned"]))
        self.replay_buffers = {}
        for pid, buffer_state in state["buffers"].items():
            # seed=0: set_state() restores the RNG state (and None would draw from
            # numpy's global RNG).
            buffer = (PrioritizedReplayBuffer(self.capacity, alpha=self.prioritized_replay_alpha,
                                              seed=0, **self._buffer_kwargs)
                      if self.prioritized_replay else
                      ReplayBuffer(self.capacity, seed=0, **self._buffer_kwargs))
            buffer.set_state(buffer_state)
            self.replay_buffers[pid] = buffer
        self.num_added = int(state["num_added"])
        self._multi_agent = bool(state["multi_agent"])
