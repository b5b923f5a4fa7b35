"""RLlib's `rllib/utils/replay_buffers/tests/test_fifo_replay_buffer.py`
(commit 8cf9d8e50e61ca85936ef6bd1b4238772263212a), ported to tfrl.

Covers `TestFifoReplayBuffer` of RLlib 2.x's
`ray.rllib.utils.replay_buffers.fifo_replay_buffer`: test_empty_buffer, test_sample.
"""

import numpy as np

from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.replay_buffers.fifo_replay_buffer import FifoReplayBuffer

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_fifo_replay_buffer.py"
RLLIB_COMMIT = "8cf9d8e50e61ca85936ef6bd1b4238772263212a"


def _batch(t):
    return SampleBatch({
        SampleBatch.T: [t],
        SampleBatch.ACTIONS: [np.random.choice([0, 1])],
        SampleBatch.REWARDS: [np.random.rand()],
        SampleBatch.OBS: [np.random.random((4,))],
        SampleBatch.NEXT_OBS: [np.random.random((4,))],
        SampleBatch.DONES: [np.random.choice([False, True])],
    })


def test_empty_buffer():
    buffer = FifoReplayBuffer()
    batch = buffer.sample()
    assert len(batch) == 0


def test_sample():
    buffer = FifoReplayBuffer()
    buffer.add(_batch(1))
    buffer.add(_batch(2))
    batch = buffer.sample()
    assert batch[SampleBatch.T][0] == 1
    batch = buffer.sample()
    assert batch[SampleBatch.T][0] == 2
