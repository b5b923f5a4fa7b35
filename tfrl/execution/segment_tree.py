"""Segment trees over numpy arrays: sums and minimums of priorities, O(log n) per query.

`PrioritizedReplayBuffer` keeps its priorities in a `SumSegmentTree` (sampling an index
with probability proportional to its priority) and a `MinSegmentTree` (the smallest
priority, for the largest importance weight). Both update and query many indices in one
vectorized pass per tree level: `tree[idxes] = values` and
`find_prefixsum_idx(masses)` take arrays.

Example:
    >>> tree = SumSegmentTree(4)
    >>> tree[np.arange(4)] = [1.0, 2.0, 3.0, 4.0]
    >>> tree.sum(), tree.sum(1, 3), tree.find_prefixsum_idx([0.5, 1.0, 9.99]).tolist()
    (10.0, 5.0, [0, 1, 3])
"""

from typing import Any, Callable, Optional

import numpy as np


class SegmentTree:
    """A binary tree whose inner nodes hold `operation` of their children.

    The leaves are `capacity` values (stored in a tree of the next power of two; the
    extra leaves hold `neutral_element`).

    Args:
        capacity: Number of leaves (>= 1).
        operation: A vectorized binary function (e.g. `np.add`, `np.minimum`).
        neutral_element: `operation(x, neutral_element) == x` (0 for sums, inf for
            minimums); the value of unset leaves.

    Raises:
        ValueError: If `capacity` is not an int >= 1.
    """

    def __init__(self, capacity: int, operation: Callable[[Any, Any], Any],
                 neutral_element: float):
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) \
                or capacity < 1:
            raise ValueError(f"{type(self).__name__}(capacity=...) must be an int >= 1; "
                             f"received {capacity!r}.")
        self.capacity = int(capacity)
        self.operation = operation
        self.neutral_element = float(neutral_element)
        self._leaves = 1 << (self.capacity - 1).bit_length()  # a power of two >= capacity
        self.value = np.full(2 * self._leaves, self.neutral_element, dtype=np.float64)

    def _check_idx(self, idx: np.ndarray) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            bad = idx[(idx < 0) | (idx >= self.capacity)]
            raise IndexError(f"{type(self).__name__}: indices must be in [0, {self.capacity}); "
                             f"received {bad[:5].tolist()}.")

    def __setitem__(self, idx: Any, val: Any) -> None:
        """Sets leaves `idx` (an int or an int array) to `val` (broadcast); the last
        value given for a repeated index wins."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        val = np.broadcast_to(np.asarray(val, dtype=np.float64).reshape(-1), idx.shape)
        self._check_idx(idx)
        if idx.size == 0:
            return
        if idx.size > self._leaves // 4:  # a large share of the leaves: rebuild every level
            self.value[idx + self._leaves] = val  # numpy assigns in order: the last one wins
            self._rebuild()
            return
        # Last occurrence of each index (np.unique keeps the first one of the reversed array).
        pos, first_in_reversed = np.unique(idx[::-1], return_index=True)
        self.value[pos + self._leaves] = val[::-1][first_in_reversed]
        pos = (pos + self._leaves) // 2
        while True:  # one vectorized step per level; `pos` stays sorted
            pos = pos[np.concatenate(([True], pos[1:] != pos[:-1]))]
            self.value[pos] = self.operation(self.value[2 * pos], self.value[2 * pos + 1])
            if pos[0] == 1:
                break
            pos //= 2

    def _rebuild(self) -> None:
        start = self._leaves // 2
        while start >= 1:
            nodes = np.arange(start, 2 * start)
            self.value[nodes] = self.operation(self.value[2 * nodes], self.value[2 * nodes + 1])
            start //= 2

    def __getitem__(self, idx: Any) -> Any:
        """The leaf value(s) at `idx`."""
        arr = np.asarray(idx, dtype=np.int64)
        self._check_idx(arr.reshape(-1))
        out = self.value[arr + self._leaves]
        return float(out) if arr.ndim == 0 else out

    def reduce(self, start: int = 0, end: Optional[int] = None) -> float:
        """`operation` over the leaves `[start, end)` (`end` None: up to `capacity`).

        Raises:
            ValueError: If the range is empty or outside `[0, capacity]`.
        """
        end = self.capacity if end is None else end
        if end < 0:
            end += self.capacity
        if not 0 <= start < end <= self.capacity:
            raise ValueError(f"{type(self).__name__}.reduce(start={start}, end={end}) needs "
                             f"0 <= start < end <= capacity ({self.capacity}).")
        if start == 0 and end >= self.capacity:
            return float(self.value[1])
        result = self.neutral_element
        lo, hi = start + self._leaves, end + self._leaves
        while lo < hi:
            if lo & 1:
                result = self.operation(result, self.value[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                result = self.operation(result, self.value[hi])
            lo //= 2
            hi //= 2
        return float(result)


class SumSegmentTree(SegmentTree):
    """Sums of leaves; samples leaves with probability proportional to their value.

    Args:
        capacity: Number of leaves (>= 1).
    """

    def __init__(self, capacity: int):
        super().__init__(capacity, operation=np.add, neutral_element=0.0)

    def sum(self, start: int = 0, end: Optional[int] = None) -> float:
        """Sum of the leaves `[start, end)`."""
        return self.reduce(start, end)

    def find_prefixsum_idx(self, prefixsum: Any) -> Any:
        """The highest index `i` with `sum(0, i) <= prefixsum`, per element.

        For `prefixsum` uniform in `[0, sum())`, index `i` comes out with probability
        `tree[i] / sum()`; leaves of value 0 never come out (while the sum is positive).

        Args:
            prefixsum: A float or an array of floats in `[0, sum()]`.

        Returns:
            An int, or an int64 array of `prefixsum`'s shape.

        Raises:
            ValueError: If a prefix sum is negative, NaN or above `sum()`, or the tree's
                sum is 0.
        """
        mass = np.asarray(prefixsum, dtype=np.float64)
        total = self.value[1]
        if not total > 0:
            raise ValueError("SumSegmentTree.find_prefixsum_idx(): every leaf is 0; set "
                             "positive values before sampling.")
        flat = mass.reshape(-1).copy()
        if flat.size and not (np.all(flat >= 0) and np.all(flat <= total * (1 + 1e-9))):
            raise ValueError("SumSegmentTree.find_prefixsum_idx() takes prefix sums in "
                             f"[0, {total}] (the tree's sum); received {flat[:5].tolist()}.")
        node = np.ones(flat.shape, dtype=np.int64)
        for _ in range(self._leaves.bit_length() - 1):  # one vectorized step per level
            left = 2 * node
            left_sum = self.value[left]
            # Go right when the mass passes the left subtree, unless the right one is empty
            # (rounding near the total must not land on a zero leaf).
            right = (flat >= left_sum) & (self.value[left + 1] > 0)
            flat = np.where(right, flat - left_sum, flat)
            node = np.where(right, left + 1, left)
        idx = node - self._leaves
        return int(idx[0]) if mass.ndim == 0 else idx.reshape(mass.shape)


class MinSegmentTree(SegmentTree):
    """Minimums of leaves.

    Args:
        capacity: Number of leaves (>= 1).
    """

    def __init__(self, capacity: int):
        super().__init__(capacity, operation=np.minimum, neutral_element=float("inf"))

    def min(self, start: int = 0, end: Optional[int] = None) -> float:
        """Minimum of the leaves `[start, end)`."""
        return self.reduce(start, end)
