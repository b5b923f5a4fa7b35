"""RLlib 2.x's `FifoReplayBuffer`: a queue that returns each added batch once, in order.

For running an off-policy algorithm without replay (e.g. on offline data): `sample()`
returns the oldest added batch (with `weights` of 1.0 for SampleBatches), or an empty
MultiAgentBatch when the queue is empty. It has no capacity, stats or state.

Example:
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> fifo = FifoReplayBuffer()
    >>> fifo.add(SampleBatch({"t": [1]})); fifo.add(SampleBatch({"t": [2]}))
    >>> [int(fifo.sample()["t"][0]) for _ in range(2)], len(fifo.sample())
    ([1, 2], 0)
"""

from typing import Any, Dict, List

import numpy as np

from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.execution.replay_buffers.replay_buffer import Item, ReplayBuffer, StorageUnit


class FifoReplayBuffer(ReplayBuffer):
    """A FIFO queue of whole batches (see the module docstring).

    Args:
        *args, **kwargs: Ignored (RLlib's buffer arguments, e.g. `capacity`).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(1, StorageUnit.FRAGMENTS, seed=0)
        self._queue: List[Item] = []

    def __len__(self) -> int:
        """Batches queued."""
        return len(self._queue)

    def add(self, batch: Item, **kwargs: Any) -> None:
        """Queues `batch`.

        Raises:
            TypeError: If `batch` is neither batch class.
        """
        if not isinstance(batch, (SampleBatch, MultiAgentBatch)):
            raise TypeError(f"{type(self).__name__}.add() takes a SampleBatch or "
                            f"MultiAgentBatch; received {type(batch).__name__}.")
        self._queue.append(batch)

    def sample(self, *args: Any, **kwargs: Any) -> Item:
        """The oldest queued batch (removed from the queue), or an empty MultiAgentBatch."""
        if not self._queue:
            return MultiAgentBatch({}, 0)
        batch = self._queue.pop(0)
        if isinstance(batch, SampleBatch):
            batch["weights"] = np.ones(len(batch))
        return batch

    def update_priorities(self, *args: Any, **kwargs: Any) -> None:
        """Does nothing (no priorities)."""

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """Empty: the buffer passes batches through."""
        return {}

    def get_state(self) -> Dict[str, Any]:
        """Empty: queued batches are not saved (as RLlib's)."""
        return {}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Does nothing (see `get_state`)."""
