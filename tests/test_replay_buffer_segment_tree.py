"""Tests of the sum/min segment trees behind PrioritizedReplayBuffer."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tfrl.execution.replay_buffer import PrioritizedReplayBuffer
from tfrl.execution.segment_tree import MinSegmentTree, SumSegmentTree
from tfrl.policy.sample_batch import SampleBatch


@pytest.mark.parametrize("capacity", [1, 5, 16, 37, 300])
def test_sums_and_minimums_match_numpy_after_small_and_bulk_updates(capacity):
    rng = np.random.default_rng(capacity)
    values, min_values = np.zeros(capacity), np.full(capacity, np.inf)
    sums, mins = SumSegmentTree(capacity), MinSegmentTree(capacity)
    for _ in range(30):
        # small updates (one level at a time) and bulk ones (full rebuild), duplicates included
        k = int(rng.integers(1, capacity + 3))
        idx = rng.integers(0, capacity, size=k)
        val = rng.random(k)
        sums[idx] = val
        mins[idx] = val
        for i, v in zip(idx, val):  # the last value of a repeated index wins
            values[i] = min_values[i] = v
        np.testing.assert_allclose(sums[np.arange(capacity)], values)
        assert sums.sum() == pytest.approx(values.sum())
        assert mins.min() == min_values.min()
        start = int(rng.integers(0, capacity))
        end = int(rng.integers(start + 1, capacity + 1))
        assert sums.sum(start, end) == pytest.approx(values[start:end].sum())
    assert isinstance(sums[0], float)


def test_min_tree_tracks_the_minimum_exactly():
    tree = MinSegmentTree(6)
    tree[np.arange(6)] = [5.0, 3.0, 7.0, 2.0, 9.0, 4.0]
    assert tree.min() == 2.0 and tree.min(0, 3) == 3.0 and tree.min(4, 6) == 4.0
    tree[3] = 8.0
    assert tree.min() == 3.0
    assert MinSegmentTree(3).min() == float("inf")


# `find_prefixsum_idx`'s two searches: one tree descent per query, or (many queries per
# leaf) a binary search in the leaves' running sum.
SEARCHES = {"descend": 0, "bulk": 10**12}


def sum_tree(capacity, search):
    tree = SumSegmentTree(capacity)
    tree.BULK_SEARCH_LEAVES_PER_QUERY = SEARCHES[search]
    return tree


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_find_prefixsum_idx_on_hand_values_and_zero_leaves(search):
    tree = sum_tree(4, search)
    tree[np.arange(4)] = [1.0, 2.0, 3.0, 4.0]
    masses = np.array([0.0, 0.999, 1.0, 2.99, 3.0, 6.0, 9.99, 10.0])
    assert tree.find_prefixsum_idx(masses).tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    assert tree.find_prefixsum_idx(5.5) == 2
    sparse = sum_tree(5, search)
    sparse[np.array([1, 3])] = [1.0, 2.0]
    # The unset leaves (0) never come out, not even at the total.
    assert sparse.find_prefixsum_idx(np.array([0.0, 0.5, 1.0, 2.9, 3.0])).tolist() == \
        [1, 1, 3, 3, 3]


def test_segment_tree_errors():
    with pytest.raises(ValueError, match=r"SumSegmentTree\(capacity=...\) must be an int >= 1; "
                                         "received 0"):
        SumSegmentTree(0)
    tree = SumSegmentTree(4)
    with pytest.raises(ValueError, match="every leaf is 0; set positive values"):
        tree.find_prefixsum_idx(0.0)
    tree[0] = 1.0
    with pytest.raises(ValueError, match=r"prefix sums in \[0, 1.0\].*received \[2.0\]"):
        tree.find_prefixsum_idx(2.0)
    with pytest.raises(IndexError, match=r"indices must be in \[0, 4\); received \[4\]"):
        tree[4] = 1.0
    with pytest.raises(ValueError, match=r"reduce\(start=2, end=2\) needs 0 <= start < end"):
        tree.sum(2, 2)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_prioritized_sampling_frequencies_match_priorities_chi_square(alpha):
    priorities = np.array([1.0, 2.0, 3.0, 4.0, 0.5, 8.0, 1.5, 10.0])
    buffer = PrioritizedReplayBuffer(capacity=8, alpha=alpha, seed=123)
    buffer.add(SampleBatch({"obs": np.arange(8.0)}))
    buffer.update_priorities(np.arange(8), priorities)
    draws = 40_000
    idx = np.concatenate([buffer.sample(1000, allow_fewer=True)["batch_indexes"]
                          for _ in range(draws // 1000)])
    observed = np.bincount(idx, minlength=8)
    expected = priorities ** alpha / np.sum(priorities ** alpha) * draws
    statistic = stats.chisquare(observed, expected).statistic
    assert statistic < stats.chi2.ppf(0.999, df=7)
    # The test can fail: uniform frequencies are far off.
    assert stats.chisquare(observed, np.full(8, draws / 8)).statistic > 1000


def test_tree_memory_grows_with_capacity_not_to_the_next_power_of_the_fanout():
    tree = SumSegmentTree(1_048_577)  # one more than 16 ** 5
    assert sum(level.size for level in tree.levels) < 1.1 * 1_048_577
    tree[np.array([0, 1_048_576])] = [1.0, 3.0]
    assert tree.sum() == 4.0
    assert tree.find_prefixsum_idx(np.array([0.5, 1.0, 3.99])).tolist() == [0, 1_048_576,
                                                                              1_048_576]


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(capacity=st.integers(1, 700), data=st.data())
def test_prefix_sum_search_matches_a_cumsum_search(capacity, data):
    # Integer priorities and masses at k + 0.5 are exact in float64: no rounding ties.
    values = np.zeros(capacity)
    tree = SumSegmentTree(capacity)
    for _ in range(data.draw(st.integers(1, 4))):
        idx = np.asarray(data.draw(st.lists(st.integers(0, capacity - 1), min_size=1,
                                            max_size=40)))
        val = np.asarray(data.draw(st.lists(st.integers(0, 5), min_size=len(idx),
                                            max_size=len(idx))), dtype=np.float64)
        tree[idx] = val
        for i, v in zip(idx, val):  # the last value of a repeated index wins
            values[i] = v
    total = values.sum()
    if total == 0:
        return
    masses = np.arange(int(total)) + 0.5
    expected = np.searchsorted(np.cumsum(values), masses, side="right")
    for search, leaves_per_query in SEARCHES.items():
        tree.BULK_SEARCH_LEAVES_PER_QUERY = leaves_per_query
        np.testing.assert_array_equal(tree.find_prefixsum_idx(masses), expected, search)
        # Past the total by rounding: the last positive leaf.
        assert tree.find_prefixsum_idx(total * (1 + 1e-10)) == expected[-1], search
    assert tree.sum() == total


@pytest.mark.parametrize("cls", [SumSegmentTree, MinSegmentTree])
def test_scalar_and_array_updates_build_the_same_tree(cls):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 300, size=50)
    values = rng.random(50) * 10
    scalar, array = cls(300), cls(300)
    for i, v in zip(idx.tolist(), values.tolist()):
        scalar[i] = v  # the scalar fast path
    for i, v in zip(idx, values):
        array[np.array([i])] = np.array([v])  # the vectorized path, one index at a time
    for a, b in zip(scalar.levels, array.levels):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(IndexError, match=r"indices must be in \[0, 300\); received \[-1\]"):
        scalar[-1] = 1.0
