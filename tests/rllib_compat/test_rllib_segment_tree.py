"""RLlib's `rllib/execution/tests/test_segment_tree.py`
(commit 01433cf7b62c122b8caab4392d20a687e8d6a8f7), ported to tfrl.

Covers `TestSegmentTree`: test_tree_set, test_tree_set_overlap, test_prefixsum_idx,
test_prefixsum_idx2, test_max_interval_tree, test_microbenchmark_vs_old_version (a strict
xfail: see its reason). `OldSumSegmentTree` stands in for RLlib's test helper
`ray.rllib.execution.tests.old_segment_tree`: the classic recursive binary tree over a
Python list that RLlib's timing test compares against.
"""

import operator
import timeit

import numpy as np
import pytest

from compat_helpers import check
from tfrl.execution.segment_tree import MinSegmentTree, SumSegmentTree

RLLIB_PATH = "rllib/execution/tests/test_segment_tree.py"
RLLIB_COMMIT = "01433cf7b62c122b8caab4392d20a687e8d6a8f7"


class OldSumSegmentTree:
    """A binary sum tree over a Python list (capacity a power of 2), reduced recursively."""

    def __init__(self, capacity):
        if capacity < 1 or capacity & (capacity - 1):
            raise ValueError(f"capacity must be a power of 2; received {capacity}")
        self._capacity = capacity
        self._value = [0.0] * (2 * capacity)

    def __setitem__(self, idx, val):
        node = idx + self._capacity
        self._value[node] = val
        node //= 2
        while node >= 1:
            self._value[node] = operator.add(self._value[2 * node], self._value[2 * node + 1])
            node //= 2

    def _reduce(self, start, end, node, node_start, node_end):
        # Sum of leaves [start, end] (inclusive) below `node`, which spans [node_start, node_end].
        if start == node_start and end == node_end:
            return self._value[node]
        mid = (node_start + node_end) // 2
        if end <= mid:
            return self._reduce(start, end, 2 * node, node_start, mid)
        if start > mid:
            return self._reduce(start, end, 2 * node + 1, mid + 1, node_end)
        return (self._reduce(start, mid, 2 * node, node_start, mid)
                + self._reduce(mid + 1, end, 2 * node + 1, mid + 1, node_end))

    def sum(self, start=0, end=None):
        end = self._capacity if end is None else end
        if end < 0:
            end += self._capacity
        return self._reduce(start, end - 1, 1, 0, self._capacity - 1)


def test_tree_set():
    tree = SumSegmentTree(4)
    tree[2] = 1.0
    tree[3] = 3.0
    assert np.isclose(tree.sum(), 4.0)
    assert np.isclose(tree.sum(0, 2), 0.0)
    assert np.isclose(tree.sum(0, 3), 1.0)
    assert np.isclose(tree.sum(2, 3), 1.0)
    assert np.isclose(tree.sum(2, -1), 1.0)
    assert np.isclose(tree.sum(2, 4), 4.0)
    assert np.isclose(tree.sum(2), 4.0)


def test_tree_set_overlap():
    tree = SumSegmentTree(4)
    tree[2] = 1.0
    tree[2] = 3.0
    assert np.isclose(tree.sum(), 3.0)
    assert np.isclose(tree.sum(2, 3), 3.0)
    assert np.isclose(tree.sum(2, -1), 3.0)
    assert np.isclose(tree.sum(2, 4), 3.0)
    assert np.isclose(tree.sum(2), 3.0)
    assert np.isclose(tree.sum(1, 2), 0.0)


def test_prefixsum_idx():
    tree = SumSegmentTree(4)
    tree[2] = 1.0
    tree[3] = 3.0
    assert tree.find_prefixsum_idx(0.0) == 2
    assert tree.find_prefixsum_idx(0.5) == 2
    assert tree.find_prefixsum_idx(0.99) == 2
    assert tree.find_prefixsum_idx(1.01) == 3
    assert tree.find_prefixsum_idx(3.00) == 3
    assert tree.find_prefixsum_idx(4.00) == 3


def test_prefixsum_idx2():
    tree = SumSegmentTree(4)
    tree[0] = 0.5
    tree[1] = 1.0
    tree[2] = 1.0
    tree[3] = 3.0
    assert tree.find_prefixsum_idx(0.00) == 0
    assert tree.find_prefixsum_idx(0.55) == 1
    assert tree.find_prefixsum_idx(0.99) == 1
    assert tree.find_prefixsum_idx(1.51) == 2
    assert tree.find_prefixsum_idx(3.00) == 3
    assert tree.find_prefixsum_idx(5.50) == 3


def test_max_interval_tree():
    tree = MinSegmentTree(4)
    tree[0] = 1.0
    tree[2] = 0.5
    tree[3] = 3.0
    assert np.isclose(tree.min(), 0.5)
    assert np.isclose(tree.min(0, 2), 1.0)
    assert np.isclose(tree.min(0, 3), 0.5)
    assert np.isclose(tree.min(0, -1), 0.5)
    assert np.isclose(tree.min(2, 4), 0.5)
    assert np.isclose(tree.min(3, 4), 3.0)

    tree[2] = 0.7
    assert np.isclose(tree.min(), 0.7)
    assert np.isclose(tree.min(0, 2), 1.0)
    assert np.isclose(tree.min(0, 3), 0.7)
    assert np.isclose(tree.min(0, -1), 0.7)
    assert np.isclose(tree.min(2, 4), 0.7)
    assert np.isclose(tree.min(3, 4), 3.0)

    tree[2] = 4.0
    assert np.isclose(tree.min(), 1.0)
    assert np.isclose(tree.min(0, 2), 1.0)
    assert np.isclose(tree.min(0, 3), 1.0)
    assert np.isclose(tree.min(0, -1), 1.0)
    assert np.isclose(tree.min(2, 4), 3.0)
    assert np.isclose(tree.min(2, 3), 4.0)
    assert np.isclose(tree.min(2, -1), 4.0)
    assert np.isclose(tree.min(3, 4), 3.0)


@pytest.mark.xfail(strict=True, reason=(
    "Timing, not behaviour: tfrl's trees (fan-out 16, numpy per level) are built for the "
    "buffers' batch updates and full-range queries, so a scalar insert costs several times "
    "the pure-Python tree's (RLlib expects the same within 15%) and an arbitrary range "
    "sum(5, 60000) reduces its leaves (RLlib expects it faster than the recursive tree)."))
def test_microbenchmark_vs_old_version():
    capacity = 2**20
    new_tree = SumSegmentTree(capacity)
    old_tree = OldSumSegmentTree(capacity)
    # Reductions: expected faster than the old tree.
    new = timeit.timeit("tree.sum(5, 60000)", globals={"tree": new_tree}, number=10000)
    old = timeit.timeit("tree.sum(5, 60000)", globals={"tree": old_tree}, number=10000)
    print(f"Sum performance (time spent) old={old} new={new}")
    assert old > new
    # Insertions: expected about as fast as the old tree's.
    new = timeit.timeit("tree[50000] = 10; tree[50001] = 11", globals={"tree": new_tree},
                        number=100000)
    old = timeit.timeit("tree[50000] = 10; tree[50001] = 11", globals={"tree": old_tree},
                        number=100000)
    print(f"Insertion performance (time spent) old={old} new={new}")
    check(old, new, rtol=0.15)
