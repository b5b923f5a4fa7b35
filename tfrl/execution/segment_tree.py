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

from typing import Any, Optional

import numpy as np

from tfrl.utils.checks import check_int


class SegmentTree:
    """A tree of fan-out `FANOUT` whose inner nodes hold `operation` of their children.

    The leaves are `capacity` values (padded to a multiple of `FANOUT` with
    `neutral_element`). A fan-out of 16 rather than 2 makes the
    tree 4x shallower: each level is a handful of numpy calls over all queried indices at
    once, so the depth, not the fan-out, sets the cost.

    Args:
        capacity: Number of leaves (>= 1).
        operation: A numpy ufunc (`np.add`, `np.minimum`, ...); its `reduce` combines
            the children of a node.
        neutral_element: `operation(x, neutral_element) == x` (0 for sums, inf for
            minimums); the value of unset leaves.

    Raises:
        ValueError: If `capacity` is not an int >= 1.
    """

    FANOUT = 16
    # `find_prefixsum_idx` with at most this many leaves per query searches the leaves'
    # running sum instead of descending the tree once per query.
    BULK_SEARCH_LEAVES_PER_QUERY = 1000

    def __init__(self, capacity: int, operation: np.ufunc, neutral_element: float):
        check_int(capacity, f"{type(self).__name__}(capacity=...)", 1)
        self.capacity = int(capacity)
        self.operation = operation
        self.neutral_element = float(neutral_element)
        # Nodes per level, root (1) to leaves (`capacity`): each level has
        # ceil(next level / FANOUT) nodes.
        counts = [self.capacity]
        while counts[-1] > 1:
            counts.append(-(-counts[-1] // self.FANOUT))
        counts.reverse()
        # levels[0] is the root; levels[-1] the leaves. Node i of level l has the children
        # levels[l + 1][FANOUT * i: FANOUT * (i + 1)] (each level below the root padded to
        # FANOUT children per parent with `neutral_element`).
        self.levels = [np.full(1, self.neutral_element, dtype=np.float64)] + [
            np.full(counts[level - 1] * self.FANOUT, self.neutral_element, dtype=np.float64)
            for level in range(1, len(counts))]

    def _check_idx(self, idx: np.ndarray) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            bad = idx[(idx < 0) | (idx >= self.capacity)]
            raise IndexError(f"{type(self).__name__}: indices must be in [0, {self.capacity}); "
                             f"received {bad[:5].tolist()}.")

    def __setitem__(self, idx: Any, val: Any) -> None:
        """Sets leaves `idx` (an int or an int array) to `val` (broadcast); the last
        value given for a repeated index wins."""
        if isinstance(idx, (int, np.integer)) and not isinstance(idx, bool) \
                and np.ndim(val) == 0:
            self._set_one(int(idx), float(val))
            return
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        val = np.broadcast_to(np.asarray(val, dtype=np.float64).reshape(-1), idx.shape)
        self._check_idx(idx)
        if idx.size == 0:
            return
        leaves = self.levels[-1]
        if idx.size > len(leaves) // (4 * self.FANOUT):  # many leaves: rebuild every level
            leaves[idx] = val  # numpy assigns in order: the last one wins
            for level in range(len(self.levels) - 2, -1, -1):
                children = self.levels[level + 1].reshape(-1, self.FANOUT)
                self.levels[level][:len(children)] = self._combine(children)
            return
        # The last occurrence of each index (np.unique keeps the first of the reversed array).
        pos, first_in_reversed = np.unique(idx[::-1], return_index=True)
        leaves[pos] = val[::-1][first_in_reversed]
        for level in range(len(self.levels) - 2, -1, -1):
            pos //= self.FANOUT  # repeated parents get the same value: no need to dedupe
            children = self.levels[level + 1].reshape(-1, self.FANOUT)
            self.levels[level][pos] = self._combine(children[pos])

    def _set_one(self, i: int, value: float) -> None:
        """`tree[i] = value` for one index: the same parents' `_combine` as the
        vectorized path, without its per-call array set-up (which dominates a scalar
        insert)."""
        if not 0 <= i < self.capacity:
            raise IndexError(f"{type(self).__name__}: indices must be in [0, {self.capacity}); "
                             f"received [{i}].")
        self.levels[-1][i] = value
        for level in range(len(self.levels) - 2, -1, -1):
            i //= self.FANOUT
            children = self.levels[level + 1][i * self.FANOUT:(i + 1) * self.FANOUT]
            self.levels[level][i] = self._combine(children[None, :])[0]

    def _combine(self, children: np.ndarray) -> np.ndarray:
        """`operation` over each row of `children` (`[k, FANOUT]`): the parents' values."""
        return self.operation.reduce(children, axis=1)

    def __getitem__(self, idx: Any) -> Any:
        """The leaf value(s) at `idx`."""
        arr = np.asarray(idx, dtype=np.int64)
        self._check_idx(arr.reshape(-1))
        out = self.levels[-1][arr]
        return float(out) if arr.ndim == 0 else out

    def reduce(self, start: int = 0, end: Optional[int] = None) -> float:
        """`operation` over the leaves `[start, end)` (`end` None: up to `capacity`).

        The whole range is read at the root, O(1); other ranges reduce their leaves,
        O(end - start).

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
            return float(self.levels[0][0])
        return float(self.operation.reduce(self.levels[-1][start:end]))


# Row sums and inclusive prefix sums of `[k, FANOUT]` children as matrix products (BLAS),
# which beat `np.add.reduce` / `np.cumsum` along short rows.
_ONES = np.ones(SegmentTree.FANOUT)
_INCLUSIVE_PREFIX = np.triu(np.ones((SegmentTree.FANOUT, SegmentTree.FANOUT)))


class SumSegmentTree(SegmentTree):
    """Sums of leaves; samples leaves with probability proportional to their value.

    Args:
        capacity: Number of leaves (>= 1).
    """

    def __init__(self, capacity: int):
        super().__init__(capacity, operation=np.add, neutral_element=0.0)

    def _combine(self, children: np.ndarray) -> np.ndarray:
        return children @ _ONES

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
        total = self.levels[0][0]
        if not total > 0:
            raise ValueError("SumSegmentTree.find_prefixsum_idx(): every leaf is 0; set "
                             "positive values before sampling.")
        flat = mass.reshape(-1).copy()
        if flat.size and not (np.all(flat >= 0) and np.all(flat <= total * (1 + 1e-9))):
            raise ValueError("SumSegmentTree.find_prefixsum_idx() takes prefix sums in "
                             f"[0, {total}] (the tree's sum); received {flat[:5].tolist()}.")
        if flat.size * self.BULK_SEARCH_LEAVES_PER_QUERY >= len(self.levels[-1]):
            idx = self._find_by_cumsum(flat)
            return int(idx[0]) if mass.ndim == 0 else idx.reshape(mass.shape)
        node = np.zeros(flat.shape, dtype=np.int64)
        rows = np.arange(flat.size)
        for level in self.levels[1:]:  # one vectorized step per level
            children = level.reshape(-1, self.FANOUT)[node]  # [k, FANOUT]
            below = children @ _INCLUSIVE_PREFIX  # cumulative sums along each row
            # The child whose cumulative range holds the mass.
            child = np.count_nonzero(below <= flat[:, None], axis=1)
            over = child == self.FANOUT
            if over.any():  # rounding near a node's total: its last positive child
                positive = children[over] > 0
                child[over] = self.FANOUT - 1 - np.argmax(positive[:, ::-1], axis=1)
            flat -= np.where(child > 0, below[rows, child - 1], 0.0)
            node = node * self.FANOUT + child
        idx = node
        return int(idx[0]) if mass.ndim == 0 else idx.reshape(mass.shape)


    def _find_by_cumsum(self, flat: np.ndarray) -> np.ndarray:
        """`find_prefixsum_idx` for many queries at once: a binary search of each in the
        leaves' running sum (O(n + k log n) instead of k tree descents of Python-level
        steps each: the faster way for a learning phase's many queries)."""
        leaves = self.levels[-1]
        running = np.cumsum(leaves)  # inclusive: running[i] = sum(0, i + 1)
        # The first leaf whose running sum exceeds the mass: sum(0, i) <= mass < sum(0, i+1)
        # (zero leaves never exceed their predecessor, so they never come out).
        idx = np.searchsorted(running, flat, side="right")
        over = idx >= self.capacity
        if over.any():  # the mass at (or, by rounding, past) the total: the last positive
            idx[over] = np.flatnonzero(leaves[:self.capacity] > 0)[-1]
        return idx.astype(np.int64, copy=False)


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
