"""RLlib 2.x's `PrioritizedReplayBuffer`: proportional prioritization over whole items.

Item `i` (an added batch, sequence or episode: see `replay_buffer`) is drawn with
probability `P(i) = p_i**alpha / sum_k p_k**alpha` (Schaul et al. 2016, "Prioritized
Experience Replay") and weighted by `w_i = (N P(i))**-beta / max_k (N P(k))**-beta`.
A sampled SampleBatch gains the columns `weights` and `batch_indexes`, repeated over
each item's rows; `update_priorities(batch_indexes, priorities)` sets new priorities.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = PrioritizedReplayBuffer(capacity=4, alpha=1.0, seed=0)
    >>> for x in range(2):
    ...     buffer.add(SampleBatch({"obs": [float(x)]}))
    >>> buffer.update_priorities(np.array([0, 1]), np.array([1.0, 3.0]))
    >>> batch = buffer.sample(2, beta=1.0)  # item 1 (P = 3/4) has weight (3 / 1) ** -1
    >>> [(int(i), round(float(w), 3)) for i, w in zip(batch["batch_indexes"], batch["weights"])]
    [(1, 0.333), (1, 0.333)]
"""

from typing import Any, Dict, Optional, Union

import numpy as np

from tfrl.data.sample_batch import SampleBatch
from tfrl.execution.replay_buffers.replay_buffer import Item, ReplayBuffer, StorageUnit
from tfrl.execution.segment_tree import MinSegmentTree, SumSegmentTree

WEIGHTS = "weights"
BATCH_INDEXES = "batch_indexes"


def _positive_finite(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values > 0)


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritized replay of whole items (see the module docstring).

    New items get the largest priority given so far (1.0 at first) unless `add()` is
    given a `weight`.

    Args:
        capacity: Timesteps kept (see `ReplayBuffer`).
        storage_unit: As for `ReplayBuffer`.
        alpha: Prioritization exponent >= 0 (0: uniform).
        seed: Seed of the sampling RNG (None: drawn from numpy's global RNG).
        **kwargs: Ignored (RLlib's forward-compatibility arguments).

    Raises:
        ValueError: As `ReplayBuffer`, or for a negative or non-finite `alpha`.
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 alpha: float = 1.0, seed: Optional[int] = None, **kwargs: Any):
        super().__init__(capacity, storage_unit, seed=seed)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.number)) \
                or not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"{type(self).__name__}(alpha=...) must be a finite number >= 0; "
                             f"received {alpha!r}.")
        self._alpha = float(alpha)
        self._it_sum = SumSegmentTree(self.capacity)
        self._it_min = MinSegmentTree(self.capacity)
        self._max_priority = 1.0

    def _add_single_batch(self, item: Item, **kwargs: Any) -> int:
        """Stores `item` with priority `weight` (kwarg; None: the largest so far).

        Raises:
            ValueError: For a `weight` that is not positive and finite.
        """
        weight = kwargs.get("weight")
        priority = self._max_priority if weight is None else weight
        if not _positive_finite(np.asarray([priority], dtype=np.float64)).all():
            raise ValueError(f"{type(self).__name__}.add(weight=...) must be positive and "
                             f"finite; received {weight!r}.")
        idx = super()._add_single_batch(item)
        value = float(priority) ** self._alpha
        self._it_sum[idx] = value
        self._it_min[idx] = value
        return idx

    def sample(self, num_items: int, beta: Optional[float] = None, **kwargs: Any) -> Item:
        """`num_items` items drawn in proportion to their priorities, with replacement.

        Args:
            num_items: Items to draw.
            beta: Importance-weight exponent >= 0 (0 or None: all weights 1; 1: full
                correction).
            **kwargs: Ignored.

        Returns:
            The items concatenated; a SampleBatch gains `weights` (float64) and
            `batch_indexes` (int64), one per row (MultiAgentBatches, stored in lockstep
            mode, get neither).

        Raises:
            ValueError: If `num_items` is not an int >= 0, the buffer is empty, or
                `beta` is negative or not finite.
        """
        num_items = self._check_sample(num_items)
        beta = 0.0 if beta is None else beta
        if isinstance(beta, bool) or not isinstance(beta, (int, float, np.number)) \
                or not np.isfinite(beta) or beta < 0:
            raise ValueError(f"{type(self).__name__}.sample(beta=...) must be a finite number "
                             f">= 0; received {beta!r}.")
        if num_items == 0:
            return self._encode_sample([])
        masses = self._rng.random(num_items) * self._it_sum.sum()
        idx = np.asarray(self._it_sum.find_prefixsum_idx(masses), dtype=np.int64)
        # w_i = (N P(i))^-beta / max_k (N P(k))^-beta = (p_i / p_min)^-beta
        item_weights = (self._it_sum[idx] / self._it_min.min()) ** (-float(beta))
        items = self._ring.read(idx)
        batch = self._encode_sample(idx)
        self._num_timesteps_sampled += batch.count
        if isinstance(batch, SampleBatch):
            rows = np.array([item.count for item in items], dtype=np.int64)
            batch[WEIGHTS] = np.repeat(item_weights, rows)
            batch[BATCH_INDEXES] = np.repeat(idx, rows)
        return batch

    def update_priorities(self, idxes: Any, priorities: Any) -> None:
        """Sets the priorities of items `idxes` (from a sample's `batch_indexes`).

        Args:
            idxes: Item indices, a list or array `[n]`.
            priorities: New priorities `p > 0`, `[n]` (stored as `p ** alpha`); for an
                index given twice, the last one counts.

        Raises:
            ValueError: If the lengths differ, a priority is not positive and finite,
                or an index is not that of a stored item.
        """
        name = type(self).__name__
        idx = np.asarray(idxes).reshape(-1)
        prio = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if idx.shape != prio.shape:
            raise ValueError(f"{name}.update_priorities(): received {idx.size} indices and "
                             f"{prio.size} priorities; pass one priority per index.")
        if idx.size == 0:
            return
        if not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"{name}.update_priorities(): indices must be integers; received "
                             f"dtype {idx.dtype}. Pass the sample's batch_indexes.")
        bad = ~_positive_finite(prio)
        if bad.any():
            raise ValueError(f"{name}.update_priorities(): priorities must be positive and "
                             f"finite; received {prio[bad][:5].tolist()}. Use |TD error| + a "
                             "small epsilon.")
        if idx.min() < 0 or idx.max() >= len(self):
            raise ValueError(f"{name}.update_priorities(): indices must be in [0, {len(self)}) "
                             f"(the items stored); received {idx.min()}..{idx.max()}.")
        values = prio ** self._alpha
        self._it_sum[idx] = values
        self._it_min[idx] = values
        self._max_priority = max(self._max_priority, float(prio.max()))

    def get_state(self) -> Dict[str, Any]:
        """`ReplayBuffer.get_state()` plus the priorities (`p ** alpha` per slot)."""
        state = super().get_state()
        slots = np.arange(self.capacity)
        state.update({"sum_segment_tree": self._it_sum[slots].copy(),
                      "min_segment_tree": self._it_min[slots].copy(),
                      "max_priority": self._max_priority})
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result (of a buffer with the same capacity)."""
        super().set_state(state)
        slots = np.arange(self.capacity)
        self._it_sum = SumSegmentTree(self.capacity)
        self._it_min = MinSegmentTree(self.capacity)
        self._it_sum[slots] = np.asarray(state["sum_segment_tree"], dtype=np.float64)
        self._it_min[slots] = np.asarray(state["min_segment_tree"], dtype=np.float64)
        self._max_priority = float(state["max_priority"])
