"""RLlib's `rllib/utils/replay_buffers/tests/test_multi_agent_mixin_replay_buffer.py`
(commit 0254a46cb8c7cc6033a7f262ca7d9eecbb6dd482), ported to tfrl.

Covers `TestMixInMultiAgentReplayBuffer` of RLlib 2.x's
`ray.rllib.utils.replay_buffers.multi_agent_mixin_replay_buffer`:
test_mixin_sampling_episodes, test_mixin_sampling_sequences, test_mixin_sampling_timesteps.
"""

import numpy as np
import pytest

from tfrl.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from tfrl.utils.replay_buffers.multi_agent_mixin_replay_buffer import (
    MultiAgentMixInReplayBuffer)

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_multi_agent_mixin_replay_buffer.py"
RLLIB_COMMIT = "0254a46cb8c7cc6033a7f262ca7d9eecbb6dd482"

CAPACITY = 10
BATCH_ID = 0  # RLlib's class attribute `batch_id` (never changed by these tests)


def _generate_episodes():
    return SampleBatch({
        SampleBatch.T: [1, 0, 1],
        SampleBatch.ACTIONS: 3 * [np.random.choice([0, 1])],
        SampleBatch.REWARDS: 3 * [np.random.rand()],
        SampleBatch.OBS: 3 * [np.random.random((4,))],
        SampleBatch.NEXT_OBS: 3 * [np.random.random((4,))],
        SampleBatch.DONES: [True, False, True],
        SampleBatch.SEQ_LENS: [1, 2],
        SampleBatch.EPS_ID: [-1, BATCH_ID, BATCH_ID],
        SampleBatch.AGENT_INDEX: 3 * [0],
    })


def _generate_single_timesteps():
    return SampleBatch({
        SampleBatch.T: [0],
        SampleBatch.ACTIONS: [np.random.choice([0, 1])],
        SampleBatch.REWARDS: [np.random.rand()],
        SampleBatch.OBS: [np.random.random((4,))],
        SampleBatch.NEXT_OBS: [np.random.random((4,))],
        SampleBatch.DONES: [True],
        SampleBatch.EPS_ID: [BATCH_ID],
        SampleBatch.AGENT_INDEX: [0],
    })


def _almost_equal(x, y):
    """unittest's assertAlmostEqual: equal when rounded to 7 places."""
    assert round(abs(x - y), 7) == 0, (x, y)


def test_mixin_sampling_episodes():
    # 50% replay ratio.
    buffer = MultiAgentMixInReplayBuffer(capacity=CAPACITY, storage_unit="episodes",
                                         replay_ratio=0.5, min_size_for_sampling=0)
    # Insert and replay n times: 1 new and 1 old episode of length two each time.
    results = []
    batch = _generate_episodes()
    for _ in range(20):
        buffer.add(batch)
        sample = buffer.sample(2)
        assert type(sample) == MultiAgentBatch  # noqa: E721 (RLlib's exact-type check)
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    # The batch's first row belongs to no complete episode and is dropped.
    _almost_equal(np.mean(results), 2 * (len(batch) - 1))


def test_mixin_sampling_sequences():
    # 50% replay ratio.
    buffer = MultiAgentMixInReplayBuffer(capacity=100, storage_unit="sequences",
                                         replay_ratio=0.5, min_size_for_sampling=0,
                                         replay_sequence_length=2,
                                         replay_sequence_override=True)
    # 2 new and 2 old sequences of 1.5 rows on average each time.
    results = []
    batch = _generate_episodes()
    for _ in range(400):
        buffer.add(batch)
        sample = buffer.sample(10)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    assert abs(np.mean(results) - 2 * len(batch)) <= 0.1


def test_mixin_sampling_timesteps():
    # 33% replay ratio.
    buffer = MultiAgentMixInReplayBuffer(capacity=CAPACITY, storage_unit="timesteps",
                                         replay_ratio=0.333, min_size_for_sampling=0)
    # Empty buffer: nothing comes back.
    sample = buffer.sample(10)
    assert len(sample.policy_batches) == 0

    batch = _generate_single_timesteps()
    # Insert twice and replay n times: 2 new and 1 old on average.
    results = []
    for _ in range(100):
        buffer.add(batch)
        buffer.add(batch)
        sample = buffer.sample(3)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    assert abs(np.mean(results) - 3.0) <= 0.2

    # Insert once and replay n times: 1 new and 0.5 old on average.
    results = []
    for _ in range(100):
        buffer.add(batch)
        sample = buffer.sample(5)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    assert abs(np.mean(results) - 1.5) <= 0.2

    # 90% replay ratio: 1 new and 9 old on average.
    buffer = MultiAgentMixInReplayBuffer(capacity=CAPACITY, replay_ratio=0.9,
                                         min_size_for_sampling=0)
    results = []
    for _ in range(100):
        buffer.add(batch)
        sample = buffer.sample(10)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    assert abs(np.mean(results) - 10.0) <= 0.2

    # 0% replay ratio: only new items.
    buffer = MultiAgentMixInReplayBuffer(capacity=CAPACITY, replay_ratio=0.0,
                                         min_size_for_sampling=0)
    batch = _generate_single_timesteps()
    buffer.add(batch)
    # Exactly the new batch.
    sample = buffer.sample(1)
    assert type(sample) == MultiAgentBatch  # noqa: E721
    assert len(sample) == 1
    # Nothing new, no replay allowed: nothing.
    sample = buffer.sample(1)
    assert type(sample) == MultiAgentBatch  # noqa: E721
    assert len(sample.policy_batches) == 0
    results = []
    for _ in range(100):
        buffer.add(batch)
        sample = buffer.sample(1)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    assert abs(np.mean(results) - 1.0) <= 0.2

    # 100% replay ratio: only replayed items.
    buffer = MultiAgentMixInReplayBuffer(capacity=CAPACITY, replay_ratio=1.0,
                                         min_size_for_sampling=0)
    sample = buffer.sample(1)
    assert len(sample.policy_batches) == 0
    batch = _generate_single_timesteps()
    buffer.add(batch)
    # The new batch, replayed.
    sample = buffer.sample(1)
    assert type(sample) == MultiAgentBatch  # noqa: E721
    assert len(sample) == 1
    sample = buffer.sample(1)
    assert type(sample) == MultiAgentBatch  # noqa: E721
    assert len(sample) == 1
    results = []
    for _ in range(100):
        sample = buffer.sample(1)
        assert type(sample) == MultiAgentBatch  # noqa: E721
        results.append(len(sample.policy_batches[DEFAULT_POLICY_ID]))
    _almost_equal(np.mean(results), 1.0)
