"""RLlib's `rllib/utils/replay_buffers/tests/test_multi_agent_replay_buffer.py`
(commit 0254a46cb8c7cc6033a7f262ca7d9eecbb6dd482), ported to tfrl.

Covers `TestMultiAgentReplayBuffer` of RLlib 2.x's
`ray.rllib.utils.replay_buffers.multi_agent_replay_buffer`:
test_policy_id_of_multi_agent_batches_independent, test_lockstep_mode,
test_independent_mode_sequences_storage_unit, test_independent_mode_multiple_policies,
test_lockstep_with_underlying_replay_buffer,
test_independent_with_underlying_prioritized_replay_buffer, test_set_get_state.
"""

import numpy as np

from tfrl.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from tfrl.utils.replay_buffers.multi_agent_replay_buffer import MultiAgentReplayBuffer
from tfrl.utils.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from tfrl.utils.replay_buffers.replay_buffer import ReplayBuffer

RLLIB_PATH = "rllib/utils/replay_buffers/tests/test_multi_agent_replay_buffer.py"
RLLIB_COMMIT = "0254a46cb8c7cc6033a7f262ca7d9eecbb6dd482"


def get_batch_id(batch, policy_id=DEFAULT_POLICY_ID):
    return batch.policy_batches[policy_id]["batch_id"][0]


class _Ids:
    """RLlib's test-case attributes `self.batch_id` and `self.eps_id`."""

    def __init__(self):
        self.batch_id = 0
        self.eps_id = 0


def _add_sample_batch_to_buffer(ids, buffer, batch_size, num_batches=5, **kwargs):
    ids.eps_id = 0

    def _generate_data():
        ids.eps_id += 1
        return SampleBatch({
            SampleBatch.T: [0, 1],
            SampleBatch.ACTIONS: 2 * [np.random.choice([0, 1])],
            SampleBatch.REWARDS: 2 * [np.random.rand()],
            SampleBatch.OBS: 2 * [np.random.random((4,))],
            SampleBatch.NEXT_OBS: 2 * [np.random.random((4,))],
            SampleBatch.DONES: 2 * [np.random.choice([False, True])],
            SampleBatch.EPS_ID: 2 * [ids.eps_id],
            SampleBatch.AGENT_INDEX: 2 * [0],
            "batch_id": 2 * [ids.batch_id],
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
        buffer.add(MultiAgentBatch(policy_batches, 1), **kwargs)


def test_policy_id_of_multi_agent_batches_independent():
    ids = _Ids()
    buffer = MultiAgentReplayBuffer(capacity=10, replay_mode="independent",
                                    min_size_for_sampling=0, num_shards=1)
    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=1, num_batches=1)
    mabatch = buffer.sample(1)
    assert list(mabatch.policy_batches.keys())[0] == 0


def test_lockstep_mode():
    # SampleBatches only: stored as MultiAgentBatches of one policy.
    ids = _Ids()
    batch_size = 5
    buffer_size = 30
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="lockstep",
                                    min_size_for_sampling=0, num_shards=1)

    _add_sample_batch_to_buffer(ids, buffer, batch_size=batch_size, num_batches=1)
    # Sampling now yields the first batch.
    assert get_batch_id(buffer.sample(1)) == 0

    _add_sample_batch_to_buffer(ids, buffer, batch_size=batch_size, num_batches=2)
    # Each batch a third of the time.
    num_sampled_dict = {_id: 0 for _id in range(ids.batch_id)}
    num_samples = 200
    for _ in range(num_samples):
        num_sampled_dict[get_batch_id(buffer.sample(1))] += 1
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       len(num_sampled_dict) * [1 / 3], atol=0.1)


def test_independent_mode_sequences_storage_unit():
    ids = _Ids()
    buffer_size = 15
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="independent",
                                    storage_unit="sequences", replay_sequence_length=2,
                                    min_size_for_sampling=0, num_shards=1)

    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=2, num_batches=1, seq_lens=True)
    # Sampling now yields the first batch.
    assert get_batch_id(buffer.sample(1), 0) == 0

    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=2, num_batches=2, seq_lens=True)
    # Each policy batch that went into a MultiAgentBatch a sixth of the time.
    num_sampled_dict = {_id: 0 for _id in range(ids.batch_id)}
    num_samples = 200
    for _ in range(num_samples):
        sample = buffer.sample(1)
        num_sampled_dict[get_batch_id(sample, np.random.choice([0, 1]))] += 1
        # A random policy's batch holds one sequence of length 2.
        assert len(sample.policy_batches[np.random.choice([0, 1])]) == 2
    assert np.allclose(np.array(list(num_sampled_dict.values())) / num_samples,
                       len(num_sampled_dict) * [1 / 6], atol=0.1)


def test_independent_mode_multiple_policies():
    ids = _Ids()
    num_batches = 3
    buffer_size = 15
    num_policies = 2
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="independent",
                                    min_size_for_sampling=0, num_shards=1)
    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=num_policies,
                                     num_batches=num_batches)

    # 4 items of one policy only.
    for _id in range(num_policies):
        for __id in buffer.sample(4, policy_id=_id).policy_batches[_id]["policy_id"]:
            assert __id == _id

    # Without a policy id: as many items of each policy.
    num_sampled_dict = {_id: 0 for _id in range(num_policies)}
    num_samples = 200
    for _ in range(num_samples):
        num_items = np.random.randint(0, 5)
        for _id, batch in buffer.sample(num_items=num_items).policy_batches.items():
            num_sampled_dict[_id] += 1
            assert len(batch) == num_items
    assert np.allclose(np.array(list(num_sampled_dict.values())),
                       len(num_sampled_dict) * [200], atol=0.1)


def test_lockstep_with_underlying_replay_buffer():
    # A plain underlying buffer without constructor arguments, lockstep sampling.
    replay_buffer_config = {"type": ReplayBuffer}
    num_policies = 2
    buffer_size = 200
    num_batches = 20
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="lockstep",
                                    min_size_for_sampling=0, num_shards=1,
                                    underlying_buffer_config=replay_buffer_config)
    ids = _Ids()
    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=num_policies - 1,
                                     num_batches=num_batches)
    # Samples of a single policy.
    sample = buffer.sample(2)
    assert len(sample) == 2
    assert len(sample.policy_batches) == 1

    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=num_policies,
                                     num_batches=num_batches)
    # Out of 100 samples, some of each policy.
    sample = buffer.sample(100)
    assert len(sample) == 100
    assert len(sample.policy_batches) == 2


def test_independent_with_underlying_prioritized_replay_buffer():
    # A prioritized underlying buffer with constructor arguments, independent sampling.
    prioritized_replay_buffer_config = {"type": PrioritizedReplayBuffer, "alpha": 0.6,
                                        "beta": 0.4}
    num_policies = 2
    buffer_size = 15
    num_batches = 1
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="independent",
                                    min_size_for_sampling=0, num_shards=1,
                                    underlying_buffer_config=prioritized_replay_buffer_config)
    ids = _Ids()
    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=num_policies,
                                     num_batches=num_batches)
    sample = buffer.sample(2)
    assert len(sample) == 4
    assert len(sample.policy_batches) == 2


def test_set_get_state():
    num_policies = 2
    buffer_size = 15
    num_batches = 1
    buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="independent",
                                    min_size_for_sampling=0, num_shards=1)
    ids = _Ids()
    _add_multi_agent_batch_to_buffer(ids, buffer, num_policies=num_policies,
                                     num_batches=num_batches)
    state = buffer.get_state()
    another_buffer = MultiAgentReplayBuffer(capacity=buffer_size, replay_mode="independent",
                                            min_size_for_sampling=0, num_shards=1)
    another_buffer.set_state(state)
    # The state is the set of the underlying buffers' states.
    for _id, _buffer in buffer.replay_buffers.items():
        assert _buffer.get_state() == another_buffer.replay_buffers[_id].get_state()
    assert buffer._num_added == another_buffer._num_added
