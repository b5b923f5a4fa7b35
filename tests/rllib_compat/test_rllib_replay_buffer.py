"""RLlib's `rllib/utils/replay_buffers/tests/test_replay_buffer.py`
(commit 1d182457606d5d18d850ae9170c90fa1330191f1), ported to tfrl.

Covers `TestReplayBuffer` of RLlib 2.x's `ray.rllib.utils.replay_buffers.replay_buffer`:
test_stats, test_multi_agent_batches, test_timesteps_unit, test_sequences_unit,
test_episodes_unit.
"""

import numpy as np

from tfrl.policy.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.utils.replay_buffers.replay_buffer import ReplayBuffer

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_replay_buffer.py"
RLLIB_COMMIT = "1d182457606d5d18d850ae9170c90fa1330191f1"


class _BatchIds:
    """RLlib's test-case attribute `self.batch_id`: the id of the next added batch."""

    def __init__(self):
        self.batch_id = 0


def _add_data_to_buffer(ids, buffer, batch_size, num_batches=5, **kwargs):
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

    for _ in range(num_batches):
        data = [_generate_data() for _ in range(batch_size)]
        ids.batch_id += 1
        buffer.add(SampleBatch.concat_samples(data), **kwargs)


def _add_multi_agent_batch_to_buffer(ids, buffer, num_policies, num_batches=5, seq_lens=False,
                                     **kwargs):
    def _generate_data(policy_id):
        batch = SampleBatch({
            SampleBatch.T: [0, 1],
            SampleBatch.ACTIONS: 2 * [np.random.choice([0, 1])],
            SampleBatch.REWARDS: 2 * [np.random.rand()],
            SampleBatch.OBS: 2 * [np.random.random((4,))],
            SampleBatch.NEXT_OBS: 2 * [np.random.random((4,))],
            SampleBatch.DONES: [False, True],
            SampleBatch.EPS_ID: 2 * [ids.batch_id],
            SampleBatch.AGENT_INDEX: 2 * [0],
            SampleBatch.SEQ_LENS: [2],
            "batch_id": 2 * [ids.batch_id],
            "policy_id": 2 * [policy_id],
        })
        if not seq_lens:
            del batch[SampleBatch.SEQ_LENS]
        ids.batch_id += 1
        return batch

    for _ in range(num_batches):
        policy_batches = {idx: _generate_data(idx) for idx in range(num_policies)}
        buffer.add(MultiAgentBatch(policy_batches, num_batches * 2), **kwargs)


def test_stats():
    ids = _BatchIds()
    batch_size = 5
    buffer_size = 15
    buffer = ReplayBuffer(capacity=buffer_size)

    _add_data_to_buffer(ids, buffer, batch_size=batch_size, num_batches=1)
    # One batch added: not full.
    assert len(buffer) == 1
    assert buffer._num_timesteps_added == 5
    assert buffer._num_timesteps_added_wrap == 5
    assert buffer._next_idx == 1
    assert buffer._eviction_started is False

    # Sampling now yields the first batch.
    assert buffer.sample(1)["batch_id"][0] == 0
    # Three sampled batches of 5 timesteps each in all.
    buffer.sample(2)
    assert buffer._num_timesteps_sampled == 15

    _add_data_to_buffer(ids, buffer, batch_size=batch_size, num_batches=2)
    # Two more batches: full.
    assert len(buffer) == 3
    assert buffer._num_timesteps_added == 15
    assert buffer._num_timesteps_added_wrap == 0
    assert buffer._next_idx == 0
    assert buffer._eviction_started is True


def test_multi_agent_batches():
    ids = _BatchIds()
    buffer = ReplayBuffer(capacity=100, storage_unit="timesteps")

    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=2, num_batches=2)
    assert len(buffer) == 2
    assert buffer._num_timesteps_added == 8
    assert buffer._num_timesteps_added_wrap == 8
    assert buffer._next_idx == 2
    assert buffer._eviction_started is False

    buffer.sample(3)
    assert buffer._num_timesteps_sampled == 12

    _add_multi_agent_batch_to_buffer(ids, buffer, batch_size=100, num_policies=3,
                                     num_batches=3)
    assert len(buffer) == 5
    assert buffer._num_timesteps_added == 26
    assert buffer._num_timesteps_added_wrap == 26
    assert buffer._next_idx == 5


def test_timesteps_unit():
    ids = _BatchIds()
    batch_size = 5
    buffer_size = 15
    buffer = ReplayBuffer(capacity=buffer_size)

    _add_data_to_buffer(ids, buffer, batch_size=batch_size, num_batches=1)
    _add_data_to_buffer(ids, buffer, batch_size=batch_size, num_batches=2)

    # Each of the three batches comes out a third of the time.
    num_sampled_dict = {_id: 0 for _id in range(ids.batch_id)}
    num_samples = 200
    for _ in range(num_samples):
        num_sampled_dict[buffer.sample(1)["batch_id"][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       len(num_sampled_dict) * [1 / 3], atol=0.1)

    # get_state/set_state.
    state = buffer.get_state()
    other_buffer = ReplayBuffer(capacity=buffer_size)
    _add_data_to_buffer(ids, other_buffer, 1)
    other_buffer.set_state(state)

    assert other_buffer._storage == buffer._storage
    assert other_buffer._next_idx == buffer._next_idx
    assert other_buffer._num_timesteps_added == buffer._num_timesteps_added
    assert other_buffer._num_timesteps_added_wrap == buffer._num_timesteps_added_wrap
    assert other_buffer._num_timesteps_sampled == buffer._num_timesteps_sampled
    assert other_buffer._eviction_started == buffer._eviction_started
    assert other_buffer._est_size_bytes == buffer._est_size_bytes
    assert len(other_buffer) == len(other_buffer)


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
    buffer = ReplayBuffer(capacity=10, storage_unit="sequences")
    batches = [_sequence_batch(i, [i], i) for i in range(1, 4)]
    batches.append(_sequence_batch(4, [2, 2], 4))
    for batch in batches:
        buffer.add(batch)

    num_sampled_dict = {_id: 0 for _id in range(1, 5)}
    num_samples = 200
    for _ in range(num_samples):
        sample = buffer.sample(1)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample["batch_id"][0]] += 1
    # Five sequences: the last batch's two come out twice as often (stored separately).
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [1 / 5, 1 / 5, 1 / 5, 2 / 5], atol=0.1)

    # One more batch evicts the first.
    buffer.add(_sequence_batch(5, [5], 5))
    assert len(buffer) == 5
    assert buffer._num_timesteps_added == sum(range(1, 6))
    assert buffer._num_timesteps_added_wrap == 5
    assert buffer._next_idx == 1
    assert buffer._eviction_started is True

    num_sampled_dict = {_id: 0 for _id in range(2, 6)}
    for _ in range(num_samples):
        sample = buffer.sample(1)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample["batch_id"][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [1 / 5, 1 / 5, 2 / 5, 1 / 5], atol=0.1)


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
    buffer = ReplayBuffer(capacity=18, storage_unit="episodes")
    batches = [_episode_batch([0, 1, 2, 3], [False, False, False, True], [4], 4 * [i])
               for i in range(3)]
    batches.append(_episode_batch([0, 1, 0, 1], [False, True, False, True], [2, 2],
                                  [3, 3, 4, 4]))
    for batch in batches:
        buffer.add(batch)

    num_sampled_dict = {_id: 0 for _id in range(5)}
    num_samples = 200
    for _ in range(num_samples):
        sample = buffer.sample(1)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    # All episodes equally often, though they came in different batches.
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [1 / 5] * 5, atol=0.1)

    # Episode 6 does not end in this batch: it is not stored.
    buffer.add(_episode_batch([0, 1, 0, 1], [False, True, False, False], [2, 2],
                              [5, 5, 6, 6]))
    num_sampled_dict = {_id: 0 for _id in range(7)}
    for _ in range(num_samples):
        sample = buffer.sample(1)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [1 / 6] * 6 + [0], atol=0.1)

    # One more batch evicts the first.
    buffer.add(_episode_batch([0, 1, 2, 3], [False, False, False, True], [4], 4 * [7]))
    # 24 timesteps added, 2 of them dropped.
    assert len(buffer) == 6
    assert buffer._num_timesteps_added == 4 * 6 - 2
    assert buffer._num_timesteps_added_wrap == 4
    assert buffer._next_idx == 1
    assert buffer._eviction_started is True

    num_sampled_dict = {_id: 0 for _id in range(8)}
    for _ in range(num_samples):
        sample = buffer.sample(1)
        assert len(sample[SampleBatch.SEQ_LENS]) == 1
        num_sampled_dict[sample[SampleBatch.EPS_ID][0]] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       [0, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 0, 1 / 6], atol=0.1)
