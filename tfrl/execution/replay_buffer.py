"""LocalReplayBuffer: a uniform replay buffer of timesteps, one ring per policy.

Rows of added batches are written into preallocated numpy rings (one array per column,
nested columns supported); `replay()` samples `replay_batch_size` rows uniformly with
replacement, per policy.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = LocalReplayBuffer(capacity=4, replay_batch_size=2, seed=0)
    >>> buffer.add_batch(SampleBatch({"obs": np.arange(6.0)}))
    >>> len(buffer), sorted(buffer.replay()["obs"].tolist())[0] >= 2.0
    (4, True)
"""

from typing import Any, Dict, Optional

import numpy as np
import tree

from tfrl.core import types
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, SampleBatch


class _Ring:
    """Fixed-capacity column storage for the rows of one policy."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.columns: Optional[Dict[str, Any]] = None
        self.next_idx = 0
        self.size = 0

    def add(self, batch: SampleBatch) -> None:
        if "seq_lens" in batch:
            raise ValueError("LocalReplayBuffer stores timesteps; received a sequence batch "
                             "(with seq_lens). Replay whole sequences with another buffer.")
        if self.columns is None:
            self.columns = {key: tree.map_structure(
                lambda v: np.empty((self.capacity,) + np.shape(v)[1:], np.asarray(v).dtype), value)
                for key, value in batch.items()}
        elif set(batch.keys()) != set(self.columns):
            raise ValueError(f"LocalReplayBuffer: the batch's columns {sorted(batch.keys())} "
                             f"differ from the stored ones {sorted(self.columns)}.")
        n = batch.count
        if n > self.capacity:  # only the newest `capacity` rows survive
            batch = batch.slice(n - self.capacity, n)
            n = self.capacity
        idx = (self.next_idx + np.arange(n)) % self.capacity
        for key, value in batch.items():
            tree.map_structure(lambda store, v: store.__setitem__(idx, np.asarray(v)),
                               self.columns[key], value)
        self.next_idx = int((self.next_idx + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)

    def sample(self, rng: np.random.Generator, num: int) -> SampleBatch:
        columns = self.columns
        if columns is None or self.size == 0:  # only rings holding rows are sampled
            raise RuntimeError("_Ring.sample() on an empty ring")
        idx = rng.integers(0, self.size, size=num)
        return SampleBatch({key: tree.map_structure(lambda store: store[idx], value)
                            for key, value in columns.items()})


class LocalReplayBuffer:
    """Uniform replay of timesteps (FIFO eviction), per policy.

    Args:
        capacity: Timesteps kept per policy.
        replay_batch_size: Rows per policy in each replayed batch.
        learning_starts: `replay()` returns None until this many timesteps were added.
        seed: Seed of the sampling RNG.

    Raises:
        ValueError: If `capacity` or `replay_batch_size` is not an int >= 1.
    """

    def __init__(self, capacity: int, replay_batch_size: int, learning_starts: int = 0,
                 seed: Optional[int] = None):
        for name, value in (("capacity", capacity), ("replay_batch_size", replay_batch_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"LocalReplayBuffer({name}=...) must be an int >= 1; received "
                                 f"{value!r}.")
        self.capacity = int(capacity)
        self.replay_batch_size = int(replay_batch_size)
        self.learning_starts = int(learning_starts)
        self._rng = np.random.default_rng(seed)
        self._rings: Dict[str, _Ring] = {}
        self.num_added = 0
        self._multi_agent = False

    def __len__(self) -> int:
        return sum(r.size for r in self._rings.values())

    def add_batch(self, batch: types.Batch) -> None:
        """Stores the rows of a SampleBatch or MultiAgentBatch.

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
        for pid, rows in batches.items():
            if rows.count:
                # Keep the ring only once it holds rows: a rejected batch leaves no empty
                # ring behind for `replay()` to sample from.
                ring = self._rings.get(pid) or _Ring(self.capacity)
                ring.add(rows)
                self._rings[pid] = ring
        self.num_added += batch.count

    add = add_batch  # RLlib 2's name

    def replay(self) -> Optional[types.Batch]:
        """`replay_batch_size` uniformly sampled rows per policy, or None if not ready."""
        if self.num_added < max(1, self.learning_starts) or not self._rings:
            return None
        batches = {pid: ring.sample(self._rng, self.replay_batch_size)
                   for pid, ring in self._rings.items()}
        if not self._multi_agent and list(batches) == [DEFAULT_POLICY_ID]:
            return batches[DEFAULT_POLICY_ID]
        return MultiAgentBatch(batches, self.replay_batch_size)
