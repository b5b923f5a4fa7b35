"""RLlib's `rllib/execution/tests/test_mixin_multi_agent_replay_buffer.py`
(commit 5581f8dfda4384e6c6941b0022e5139abdc210f6), ported to tfrl.

Covers `TestMixInMultiAgentReplayBuffer` of RLlib 1.x's
`ray.rllib.execution.buffers.mixin_replay_buffer`: test_mixin_sampling.
"""

import numpy as np
import pytest

from tfrl.execution.buffers.mixin_replay_buffer import MixInMultiAgentReplayBuffer
from tfrl.policy.sample_batch import SampleBatch

RLLIB_PATH = "rllib/execution/tests/test_mixin_multi_agent_replay_buffer.py"
RLLIB_COMMIT = "5581f8dfda4384e6c6941b0022e5139abdc210f6"

CAPACITY = 10


def _generate_data():
    return SampleBatch({
        "obs": [np.random.random((4,))],
        "action": [np.random.choice([0, 1])],
        "reward": [np.random.rand()],
        "new_obs": [np.random.random((4,))],
        "done": [np.random.choice([False, True])],
    })


def test_mixin_sampling():
    # 50% replay ratio.
    buffer = MixInMultiAgentReplayBuffer(capacity=CAPACITY, replay_ratio=0.5)
    batch = _generate_data()
    buffer.add_batch(batch)
    # At least one sample comes back.
    sample = buffer.replay()
    assert len(sample) >= 1
    # Insert and replay n times: batches of 2 (1 new, 1 old) on average.
    results = []
    for _ in range(100):
        buffer.add_batch(batch)
        results.append(len(buffer.replay()))
    assert np.mean(results) == pytest.approx(2.0, abs=5e-8)  # assertAlmostEqual: 7 places

    # 33% replay ratio.
    buffer = MixInMultiAgentReplayBuffer(capacity=CAPACITY, replay_ratio=0.333)
    # Nothing comes back from an empty buffer.
    assert buffer.replay() is None
    batch = _generate_data()
    buffer.add_batch(batch)
    assert len(buffer.replay()) >= 1
    # Insert twice and replay n times: batches of 3 (2 new, 1 old) on average.
    results = []
    for _ in range(100):
        buffer.add_batch(batch)
        buffer.add_batch(batch)
        results.append(len(buffer.replay()))
    assert abs(np.mean(results) - 3.0) <= 0.1
    # Insert once and replay n times: batches of 1.5 (1 new, 0.5 old) on average.
    results = []
    for _ in range(100):
        buffer.add_batch(batch)
        results.append(len(buffer.replay()))
    assert abs(np.mean(results) - 1.5) <= 0.1

    # 90% replay ratio.
    buffer = MixInMultiAgentReplayBuffer(capacity=CAPACITY, replay_ratio=0.9)
    assert buffer.replay() is None
    batch = _generate_data()
    buffer.add_batch(batch)
    # The new batch and at least one replayed one.
    assert len(buffer.replay()) >= 2
    # Batches of 10 (1 new, 9 old) on average.
    results = []
    for _ in range(100):
        buffer.add_batch(batch)
        results.append(len(buffer.replay()))
    assert abs(np.mean(results) - 10.0) <= 0.1

    # 0% replay ratio: only new batches.
    buffer = MixInMultiAgentReplayBuffer(capacity=CAPACITY, replay_ratio=0.0)
    batch = _generate_data()
    buffer.add_batch(batch)
    assert len(buffer.replay()) == 1
    # Nothing new, no replay allowed.
    assert buffer.replay() is None
    results = []
    for _ in range(100):
        buffer.add_batch(batch)
        results.append(len(buffer.replay()))
    assert np.mean(results) == pytest.approx(1.0, abs=5e-8)

    # 100% replay ratio: only replayed batches.
    buffer = MixInMultiAgentReplayBuffer(capacity=CAPACITY, replay_ratio=1.0)
    assert buffer.replay() is None
    batch = _generate_data()
    buffer.add_batch(batch)
    # One batch (the new one, replayed).
    assert len(buffer.replay()) == 1
    assert len(buffer.replay()) == 1
    results = []
    for _ in range(100):
        results.append(len(buffer.replay()))
    assert np.mean(results) == pytest.approx(1.0, abs=5e-8)
