"""RLlib's `rllib/utils/replay_buffers/tests/test_prioritized_replay_buffer.py`
(commit 0b64d62d72bf5cdba4fc6eec4368d1ee34e2ad46), ported to tfrl.

Covers `TestPrioritizedReplayBuffer` of RLlib 2.x's
`ray.rllib.utils.replay_buffers.prioritized_replay_buffer`: test_sequence_size, test_add,
test_update_priorities, test_alpha_parameter, test_sequences_unit, test_episodes_unit.
"""

from collections import Counter

import numpy as np

from compat_helpers import check
from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_prioritized_replay_buffer.py"
RLLIB_COMMIT = "0b64d62d72bf5cdba4fc6eec4368d1ee34e2ad46"

CAPACITY = 10
ALPHA = 1.0
BETA = 1.0


def _generate_data():
    return SampleBatch({
        "obs_t": [np.random.random((4,))],
        "action": [np.random.choice([0, 1])],
        "reward": [np.random.rand()],
        "obs_tp1": [np.random.random((4,))],
        "done": [np.random.choice([False, True])],
    })


def _state_roundtrip(buffer, **kwargs):
    """A new buffer with `buffer`'s state (RLlib's get_state/set_state checks)."""
    new_memory = PrioritizedReplayBuffer(**kwargs)
    new_memory.set_state(buffer.get_state())
    return new_memory


def test_sequence_size():
    # Sequence length 1.
    buffer = PrioritizedReplayBuffer(capacity=100, alpha=0.1)
    for _ in range(200):
        buffer.add(_generate_data())
    assert len(buffer._storage) == 100, len(buffer._storage)
    assert buffer.stats()["added_count"] == 200, buffer.stats()
    new_memory = _state_roundtrip(buffer, capacity=100, alpha=0.1)
    assert len(new_memory._storage) == 100, len(new_memory._storage)
    assert new_memory.stats()["added_count"] == 200, new_memory.stats()

    # Sequence length 5.
    buffer = PrioritizedReplayBuffer(capacity=100, alpha=0.1)
    for _ in range(40):
        buffer.add(SampleBatch.concat_samples([_generate_data() for _ in range(5)]))
    assert len(buffer._storage) == 20, len(buffer._storage)
    assert buffer.stats()["added_count"] == 200, buffer.stats()
    new_memory = _state_roundtrip(buffer, capacity=100, alpha=0.1)
    assert len(new_memory._storage) == 20, len(new_memory._storage)
    assert new_memory.stats()["added_count"] == 200, new_memory.stats()


def test_add():
    buffer = PrioritizedReplayBuffer(capacity=2, alpha=ALPHA)
    assert len(buffer) == 0
    assert buffer._next_idx == 0

    buffer.add(_generate_data(), weight=0.5)
    assert len(buffer) == 1
    assert buffer._next_idx == 1

    buffer.add(_generate_data(), weight=0.1)
    assert len(buffer) == 2
    assert buffer._next_idx == 0

    # Over capacity.
    buffer.add(_generate_data(), weight=1.0)
    assert len(buffer) == 2
    assert buffer._next_idx == 1

    new_memory = _state_roundtrip(buffer, capacity=2, alpha=ALPHA)
    assert len(new_memory) == 2
    assert new_memory._next_idx == 1


def _index_sums_within(buffer, low, high, rounds):
    for _ in range(rounds):
        indices = buffer.sample(1000, beta=BETA)["batch_indexes"]
        assert low < np.sum(indices) < high


def _counts_rise_with_priority(buffer):
    counts = Counter()
    for _ in range(10):
        indices = buffer.sample(np.random.randint(100, 600), beta=BETA)["batch_indexes"]
        for i in indices:
            counts[i] += 1
    assert (counts[9] >= counts[8] >= counts[7] >= counts[6] >= counts[5] >= counts[4]
            >= counts[3] >= counts[2] >= counts[1] >= counts[0])


def test_update_priorities():
    buffer = PrioritizedReplayBuffer(CAPACITY, alpha=ALPHA)

    num_records = 5
    for i in range(num_records):
        buffer.add(_generate_data(), weight=1.0)
        assert len(buffer) == i + 1
        assert buffer._next_idx == i + 1

    new_memory = _state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA)
    assert len(new_memory) == num_records
    assert new_memory._next_idx == num_records

    batch = buffer.sample(3, beta=BETA)
    weights = batch["weights"]
    indices = batch["batch_indexes"]
    check(weights, np.ones(shape=(3,)))
    assert len(indices) == 3
    assert len(buffer) == num_records
    assert buffer._next_idx == num_records

    # Indices 0, 2, 3, 4 get a very small priority: almost only index 1 comes out.
    buffer.update_priorities(np.array([0, 2, 3, 4]), np.array([0.01, 0.01, 0.01, 0.01]))
    _index_sums_within(buffer, 970, 1100, rounds=10)
    _index_sums_within(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA), 970, 1100,
                       rounds=1)

    # Indices 0 and 1 equally likely (and some 2s, 3s and 4s).
    for _ in range(10):
        rand = np.random.random() + 0.2
        buffer.update_priorities(np.array([0, 1]), np.array([rand, rand]))
        _index_sums_within(buffer, 400, 800, rounds=1)
    _index_sums_within(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA), 400, 800,
                       rounds=1)

    # 1:2.
    for _ in range(10):
        rand = np.random.random() + 0.2
        buffer.update_priorities(np.array([0, 1]), np.array([rand, rand * 2]))
        _index_sums_within(buffer, 600, 850, rounds=1)
    _index_sums_within(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA), 600, 850,
                       rounds=1)

    # 1:4.
    for _ in range(10):
        rand = np.random.random() + 0.2
        buffer.update_priorities(np.array([0, 1]), np.array([rand, rand * 4]))
        _index_sums_within(buffer, 750, 950, rounds=1)
    _index_sums_within(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA), 750, 950,
                       rounds=1)

    # 1:9.
    for _ in range(10):
        rand = np.random.random() + 0.2
        buffer.update_priorities(np.array([0, 1]), np.array([rand, rand * 9]))
        _index_sums_within(buffer, 850, 1100, rounds=1)
    _index_sums_within(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA), 850, 1100,
                       rounds=1)

    # Five more records.
    for i in range(num_records):
        buffer.add(_generate_data(), weight=1.0)
        assert len(buffer) == i + 6
        assert buffer._next_idx == (i + 6) % CAPACITY

    # Priorities rising with the index: counts rise with it too.
    buffer.update_priorities(
        np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        np.array([0.001, 0.1, 2.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]))
    _counts_rise_with_priority(buffer)
    _counts_rise_with_priority(_state_roundtrip(buffer, capacity=CAPACITY, alpha=ALPHA))


def _index_counts(buffer):
    counts = Counter()
    for i in buffer.sample(1000, beta=BETA)["batch_indexes"]:
        counts[i] += 1
    return counts


def test_alpha_parameter():
    # A very small alpha: (almost) a uniform buffer.
    buffer = PrioritizedReplayBuffer(CAPACITY, alpha=0.01)
    num_records = 5
    for i in range(num_records):
        buffer.add(_generate_data(), weight=float(np.random.rand()))
        assert len(buffer) == i + 1
        assert buffer._next_idx == i + 1
    new_memory = _state_roundtrip(buffer, capacity=CAPACITY, alpha=0.01)
    assert len(new_memory) == num_records
    assert new_memory._next_idx == num_records

    # About uniform.
    assert any(100 < i < 300 for i in _index_counts(buffer).values())
    new_memory = _state_roundtrip(buffer, capacity=CAPACITY, alpha=0.01)
    assert any(100 < i < 300 for i in _index_counts(new_memory).values())


def _sequence_batch(n, seq_lens, batch_id):
    return SampleBatch({
        SampleBatch.T: n * [np.random.random((4,))],
        SampleBatch.ACTIONS: n * [np.random.choice([0, 1])],
        SampleBatch.REWARDS: n * [np.random.rand()],
        SampleBatch.DONES: n * [np.random.choice([False, True])],
        SampleBatch.SEQ_LENS: seq_lens,
        "batch_id": n * [batch_id],
    })


def test_sequences_unit():
    # Not the prioritization's maths: that it works with sequences at all.
    buffer = PrioritizedReplayBuffer(capacity=10, storage_unit="sequences")
    # Sequences of low priority, then two of high priority.
    for i in range(1, 4):
        buffer.add(_sequence_batch(i, [i], i), weight=0.01)
    buffer.add(_sequence_batch(4, [2, 2], 4), weight=1)

    num_sampled_dict = {_id: 0 for _id in range(1, 5)}
    num_samples = 200
    for _ in range(num_samples):
        sample = buffer.sample(1, beta=BETA)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample["batch_id"][0]] += 1
    # The last batch's sequences come out almost always.
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0.1, 0.1, 0.1, 0.8], atol=0.2)

    # One more batch evicts the first.
    buffer.add(_sequence_batch(5, [5], 5), weight=1)
    assert len(buffer) == 5
    assert buffer._num_timesteps_added == sum(range(1, 6))
    assert buffer._num_timesteps_added_wrap == 5
    assert buffer._next_idx == 1
    assert buffer._eviction_started is True

    num_sampled_dict = {_id: 0 for _id in range(1, 6)}
    for _ in range(num_samples):
        sample = buffer.sample(1, beta=BETA)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample["batch_id"][0]] += 1
    # Batches 4 and 5 equally likely.
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0, 0, 0, 0.5, 0.5], atol=0.25)


def _episode_batch(t, dones, seq_lens, eps_id):
    n = len(t)
    return SampleBatch({
        SampleBatch.T: t,
        SampleBatch.ACTIONS: n * [np.random.choice([0, 1])],
        SampleBatch.REWARDS: n * [np.random.rand()],
        SampleBatch.DONES: dones,
        SampleBatch.SEQ_LENS: seq_lens,
        SampleBatch.EPS_ID: eps_id,
    })


def test_episodes_unit():
    # Not the prioritization's maths: that it works with episodes at all.
    buffer = PrioritizedReplayBuffer(capacity=18, storage_unit="episodes")
    # Episodes of low priority, then two of high priority.
    for i in range(3):
        buffer.add(_episode_batch([0, 1, 2, 3], [False, False, False, True], [4], 4 * [i]),
                   weight=0.01)
    buffer.add(_episode_batch([0, 1, 0, 1], [False, True, False, True], [2, 2], [3, 3, 4, 4]),
               weight=1)

    num_sampled_dict = {_id: 0 for _id in range(5)}
    num_samples = 200
    for _ in range(num_samples):
        sample = buffer.sample(1, beta=BETA)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0, 0, 0, 0.5, 0.5], atol=0.1)

    # Episode 6 does not end in this batch: it is not stored.
    buffer.add(_episode_batch([0, 1, 0, 1], [False, True, False, False], [2, 2], [5, 5, 6, 6]),
               weight=1)
    num_sampled_dict = {_id: 0 for _id in range(7)}
    for _ in range(num_samples):
        sample = buffer.sample(1, beta=BETA)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 0], atol=0.1)

    # One more batch evicts the first.
    buffer.add(_episode_batch([0, 1, 2, 3], [False, False, False, True], [4], 4 * [7]),
               weight=0.01)
    # 24 timesteps added, 2 of them dropped.
    assert len(buffer) == 6
    assert buffer._num_timesteps_added == 4 * 6 - 2
    assert buffer._num_timesteps_added_wrap == 4
    assert buffer._next_idx == 1
    assert buffer._eviction_started is True

    num_sampled_dict = {_id: 0 for _id in range(8)}
    for _ in range(num_samples):
        sample = buffer.sample(1, beta=BETA)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0], atol=0.1)
