"""RLlib 2.x's `ReservoirReplayBuffer` (also `ReservoirBuffer`): a uniform sample of all
items ever added.

Items are appended until `capacity` timesteps were added; from then on the `k`-th added
item replaces a uniformly drawn slot with probability `len(buffer) / k` (reservoir
sampling, Vitter 1985, "Random sampling with a reservoir"), so every item added so far
is stored with the same probability, however old.

Example:
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = ReservoirReplayBuffer(capacity=10, seed=0)
    >>> for i in range(1000):
    ...     buffer.add(SampleBatch({"obs": [float(i)]}))
    >>> len(buffer), buffer.stats()["added_count"], buffer.stats()["eviction_started"]
    (9, 1000, True)
"""

from typing import Any, Dict, Optional, Union

from tfrl.execution.replay_buffers.replay_buffer import Item, ReplayBuffer, StorageUnit


class ReservoirReplayBuffer(ReplayBuffer):
    """Reservoir sampling over added items (see the module docstring).

    Args:
        capacity: Timesteps added before the buffer starts replacing items.
        storage_unit: As for `ReplayBuffer`.
        seed: Seed of the replacement and sampling RNG (None: drawn from numpy's
            global RNG).
        **kwargs: Ignored (RLlib's forward-compatibility arguments).
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 seed: Optional[int] = None, **kwargs: Any):
        super().__init__(capacity, storage_unit, seed=seed)
        self._num_add_calls = 0

    def _add_single_batch(self, item: Item, **kwargs: Any) -> int:
        """Stores `item` (appended, or in a random slot, or not at all); returns its slot,
        -1 if it was not kept."""
        self._num_add_calls += 1
        ring = self._ring
        ring.count_added(item)
        if ring.num_timesteps_added < self.capacity:
            ring.put(len(ring), item)
            return len(ring) - 1
        ring.eviction_started = True
        idx = int(self._rng.integers(0, self._num_add_calls))
        if idx < len(ring):
            ring.put(idx, item)
            return idx
        return -1

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """`ReplayBuffer.stats()` plus `num_add_calls`."""
        return dict(super().stats(debug), num_add_calls=self._num_add_calls)

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result."""
        super().set_state(state)
        self._num_add_calls = int(state["num_add_calls"])


ReservoirBuffer = ReservoirReplayBuffer  # RLlib's earlier name
