"""RLlib's `rllib/utils/replay_buffers/tests/test_reservoir_buffer.py`
(commit 0fd7a636100883e26eb8b64673cea4fe0f94cfba), ported to tfrl.

Covers `TestReservoirBuffer` of RLlib 2.x's `ray.rllib.utils.replay_buffers.reservoir_buffer`:
test_timesteps_unit, test_episodes_unit.
"""

import numpy as np

from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.replay_buffers.reservoir_buffer import ReservoirBuffer

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_reservoir_buffer.py"
RLLIB_COMMIT = "0fd7a636100883e26eb8b64673cea4fe0f94cfba"


class _BatchIds:
    """RLlib's test-case attribute `self.batch_id`."""

    def __init__(self):
        self.batch_id = 0


def _add_data_to_buffer(ids, buffer, generate, batch_size, num_batches=5, **kwargs):
    for _ in range(num_batches):
        data = [generate() for _ in range(batch_size)]
        ids.batch_id += 1
        buffer.add(SampleBatch.concat_samples(data), **kwargs)


def test_timesteps_unit():
    ids = _BatchIds()

    def _generate_data():
        return SampleBatch({
            SampleBatch.T: [np.random.random((4,))],
            SampleBatch.ACTIONS: [np.random.choice([0, 1])],
            SampleBatch.OBS: [np.random.random((4,))],
            SampleBatch.NEXT_OBS: [np.random.random((4,))],
            SampleBatch.REWARDS: [np.random.rand()],
            SampleBatch.DONES: [np.random.choice([False, True])],
            "batch_id": [ids.batch_id],
        })

    buffer = ReservoirBuffer(capacity=100)
    # 1000 batches into a buffer of capacity 100.
    _add_data_to_buffer(ids, buffer, _generate_data, batch_size=1, num_batches=1000)

    # The stored batches are a uniform sample of all: batch ids ~500 on average.
    batch_id_sum = 0
    for _ in range(200):
        num_ts_sampled = np.random.randint(1, 10)
        sample = buffer.sample(num_ts_sampled)
        batch_id_sum += sum(sample["batch_id"]) / num_ts_sampled
    assert abs(batch_id_sum / 200 - 500) <= 100


def test_episodes_unit():
    ids = _BatchIds()

    def _generate_data():
        return SampleBatch({
            SampleBatch.T: [0, 1],
            SampleBatch.ACTIONS: 2 * [np.random.choice([0, 1])],
            SampleBatch.REWARDS: 2 * [np.random.rand()],
            SampleBatch.OBS: 2 * [np.random.random((4,))],
            SampleBatch.NEXT_OBS: 2 * [np.random.random((4,))],
            SampleBatch.DONES: [False, True],
            SampleBatch.AGENT_INDEX: 2 * [0],
            "batch_id": 2 * [ids.batch_id],
        })

    buffer = ReservoirBuffer(capacity=100)
    _add_data_to_buffer(ids, buffer, _generate_data, batch_size=1, num_batches=1000)

    batch_id_sum = 0
    for _ in range(200):
        num_episodes_sampled = np.random.randint(1, 10)
        sample = buffer.sample(num_episodes_sampled)
        num_ts_sampled = num_episodes_sampled * 2
        batch_id_sum += sum(sample["batch_id"]) / num_ts_sampled
    assert abs(batch_id_sum / 200 - 500) <= 100
