"""RLlib's `rllib/execution/tests/test_prioritized_replay_buffer.py`
(commit 31973af120e357e0cdaac56571dbb32cc63d9909), ported to tfrl.

Covers `TestPrioritizedReplayBuffer` of RLlib 1.x's `ray.rllib.execution.replay_buffer`:
test_sequence_size, test_add, test_update_priorities, test_alpha_parameter. Built with
RLlib 1.x's `size=`, tfrl's buffer stores each added batch as one item ("fragments").
"""

from collections import Counter

import numpy as np

from compat_helpers import check
from tfrl.execution.replay_buffer import PrioritizedReplayBuffer
from tfrl.policy.sample_batch import SampleBatch

RLLIB_PATH = "rllib/execution/tests/test_prioritized_replay_buffer.py"
RLLIB_COMMIT = "31973af120e357e0cdaac56571dbb32cc63d9909"

CAPACITY = 10
ALPHA = 1.0
BETA = 1.0


def _generate_data():
    return SampleBatch({
        SampleBatch.OBS: [np.random.random((4,))],
        SampleBatch.ACTIONS: [np.random.choice([0, 1])],
        SampleBatch.REWARDS: [np.random.rand()],
        SampleBatch.NEXT_OBS: [np.random.random((4,))],
        SampleBatch.DONES: [np.random.choice([False, True])],
    })


def test_sequence_size():
    # Sequence length 1.
    memory = PrioritizedReplayBuffer(size=100, alpha=0.1)
    for _ in range(200):
        memory.add(_generate_data(), weight=None)
    assert len(memory._storage) == 100, len(memory._storage)
    assert memory.stats()["added_count"] == 200, memory.stats()

    # Sequence length 5.
    memory = PrioritizedReplayBuffer(size=100, alpha=0.1)
    for _ in range(40):
        memory.add(SampleBatch.concat_samples([_generate_data() for _ in range(5)]),
                   weight=None)
    assert len(memory._storage) == 20, len(memory._storage)
    assert memory.stats()["added_count"] == 200, memory.stats()


def test_add():
    memory = PrioritizedReplayBuffer(size=2, alpha=ALPHA)
    assert len(memory) == 0
    assert memory._next_idx == 0

    memory.add(_generate_data(), weight=0.5)
    assert len(memory) == 1
    assert memory._next_idx == 1

    memory.add(_generate_data(), weight=0.1)
    assert len(memory) == 2
    assert memory._next_idx == 0

    # Over capacity.
    memory.add(_generate_data(), weight=1.0)
    assert len(memory) == 2
    assert memory._next_idx == 1


def test_update_priorities():
    memory = PrioritizedReplayBuffer(size=CAPACITY, alpha=ALPHA)

    num_records = 5
    for i in range(num_records):
        memory.add(_generate_data(), weight=1.0)
        assert len(memory) == i + 1
        assert memory._next_idx == i + 1

    batch = memory.sample(3, beta=BETA)
    weights = batch["weights"]
    indices = batch["batch_indexes"]
    check(weights, np.ones(shape=(3,)))
    assert len(indices) == 3
    assert len(memory) == num_records
    assert memory._next_idx == num_records

    # Indices 0, 2, 3, 4 get a very small priority: almost only index 1 comes out.
    memory.update_priorities(np.array([0, 2, 3, 4]), np.array([0.01, 0.01, 0.01, 0.01]))
    for _ in range(10):
        indices = memory.sample(1000, beta=BETA)["batch_indexes"]
        assert 970 < np.sum(indices) < 1100

    # Indices 0 and 1 equally likely (and some 2s, 3s and 4s).
    for _ in range(10):
        rand = np.random.random() + 0.2
        memory.update_priorities(np.array([0, 1]), np.array([rand, rand]))
        indices = memory.sample(1000, beta=BETA)["batch_indexes"]
        assert 400 < np.sum(indices) < 800

    # 1:2.
    for _ in range(10):
        rand = np.random.random() + 0.2
        memory.update_priorities(np.array([0, 1]), np.array([rand, rand * 2]))
        indices = memory.sample(1000, beta=BETA)["batch_indexes"]
        assert 600 < np.sum(indices) < 850

    # 1:4.
    for _ in range(10):
        rand = np.random.random() + 0.2
        memory.update_priorities(np.array([0, 1]), np.array([rand, rand * 4]))
        indices = memory.sample(1000, beta=BETA)["batch_indexes"]
        assert 750 < np.sum(indices) < 950

    # 1:9.
    for _ in range(10):
        rand = np.random.random() + 0.2
        memory.update_priorities(np.array([0, 1]), np.array([rand, rand * 9]))
        indices = memory.sample(1000, beta=BETA)["batch_indexes"]
        assert 850 < np.sum(indices) < 1100

    # Five more records.
    for i in range(num_records):
        memory.add(_generate_data(), weight=1.0)
        assert len(memory) == i + 6
        assert memory._next_idx == (i + 6) % CAPACITY

    # Priorities rising with the index: counts rise with it too.
    memory.update_priorities(
        np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        np.array([0.001, 0.1, 2., 8., 16., 32., 64., 128., 256., 512.]))
    counts = Counter()
    for _ in range(10):
        indices = memory.sample(np.random.randint(100, 600), beta=BETA)["batch_indexes"]
        for i in indices:
            counts[i] += 1
    assert (counts[9] >= counts[8] >= counts[7] >= counts[6] >= counts[5] >= counts[4]
            >= counts[3] >= counts[2] >= counts[1] >= counts[0])


def test_alpha_parameter():
    # A very small alpha: (almost) a uniform buffer.
    memory = PrioritizedReplayBuffer(size=CAPACITY, alpha=0.01)
    num_records = 5
    for i in range(num_records):
        memory.add(_generate_data(), weight=np.random.rand())
        assert len(memory) == i + 1
        assert memory._next_idx == i + 1

    indices = memory.sample(1000, beta=BETA)["batch_indexes"]
    counts = Counter()
    for i in indices:
        counts[i] += 1
    for count in counts.values():
        assert 100 < count < 300
