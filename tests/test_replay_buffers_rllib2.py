"""tfrl's own tests of the RLlib 2.x item buffers (tfrl.execution.replay_buffers, served at
tfrl.utils.replay_buffers) and the mix-in buffer: their error messages and the parts
RLlib's ported tests (tests/rllib_compat) leave out."""

import numpy as np
import pytest

from tfrl.execution.buffers.mixin_replay_buffer import MixInMultiAgentReplayBuffer
from tfrl.policy.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.utils import replay_buffers
from tfrl.utils.replay_buffers import (FifoReplayBuffer, MultiAgentPrioritizedReplayBuffer,
                                       MultiAgentReplayBuffer, PrioritizedReplayBuffer,
                                       ReplayBuffer, StorageUnit)


def _rows(n, start=0, **extra):
    return SampleBatch({"obs": np.arange(start, start + n, dtype=np.float32), **extra})


def test_rllib_path_serves_the_execution_layer_classes():
    from tfrl.execution.replay_buffers import replay_buffer

    assert replay_buffers.ReplayBuffer is replay_buffer.ReplayBuffer
    assert StorageUnit("fragments") is StorageUnit.FRAGMENTS


def test_replay_buffer_errors():
    with pytest.raises(ValueError, match=r"ReplayBuffer\(capacity=...\) must be an int >= 1 "
                                         r"\(timesteps\); received 0"):
        ReplayBuffer(0)
    with pytest.raises(ValueError, match=r"storage_unit=...\) must be one of \['timesteps', "
                                         r"'sequences', 'episodes', 'fragments'\].*received 'rows'"):
        ReplayBuffer(10, "rows")
    buffer = ReplayBuffer(10, seed=0)
    with pytest.raises(TypeError, match="takes a SampleBatch or MultiAgentBatch; received dict"):
        buffer.add({"obs": [1]})
    with pytest.raises(ValueError, match=r"received an empty batch \(count 0\)"):
        buffer.add(SampleBatch())
    with pytest.raises(ValueError, match=r"sample\(3\): the buffer is empty"):
        buffer.sample(3)
    with pytest.raises(ValueError, match=r"sample\(num_items=...\) must be an int >= 0; "
                                         "received -1"):
        buffer.sample(-1)
    assert buffer.sample(0).count == 0  # nothing asked, nothing drawn
    multi = MultiAgentBatch({"p": _rows(2)}, 2)
    with pytest.raises(ValueError, match="a MultiAgentBatch cannot be stored with "
                                         "storage_unit='episodes'"):
        ReplayBuffer(10, "episodes").add(multi)
    with pytest.raises(ValueError, match="storage_unit='sequences' needs a batch with seq_lens"):
        ReplayBuffer(10, "sequences").add(_rows(2))


def test_prioritized_replay_buffer_errors_and_weights():
    with pytest.raises(ValueError, match=r"alpha=...\) must be a finite number >= 0; "
                                         "received -0.5"):
        PrioritizedReplayBuffer(10, alpha=-0.5)
    buffer = PrioritizedReplayBuffer(10, alpha=1.0, seed=0)
    with pytest.raises(ValueError, match=r"add\(weight=...\) must be positive and finite; "
                                         "received nan"):
        buffer.add(_rows(1), weight=float("nan"))
    assert len(buffer) == 0  # the refused item was not stored
    buffer.add(_rows(2), weight=1.0)  # one item of two rows
    buffer.add(_rows(1, 2), weight=3.0)
    batch = buffer.sample(20, beta=1.0)
    # Weights and indexes repeat over each item's rows; w = (p_i / p_min) ** -beta.
    np.testing.assert_array_equal(batch["batch_indexes"], np.where(batch["obs"] < 2, 0, 1))
    np.testing.assert_allclose(batch["weights"], np.where(batch["obs"] < 2, 1.0, 1 / 3))
    with pytest.raises(ValueError, match=r"sample\(beta=...\) must be a finite number >= 0; "
                                         "received -1"):
        buffer.sample(1, beta=-1)
    with pytest.raises(ValueError, match="received 2 indices and 1 priorities"):
        buffer.update_priorities(np.array([0, 1]), np.array([1.0]))
    with pytest.raises(ValueError, match="indices must be integers; received dtype float64"):
        buffer.update_priorities(np.array([0.0]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"priorities must be positive and finite; received "
                                         r"\[0.0\]"):
        buffer.update_priorities(np.array([0]), np.array([0.0]))
    with pytest.raises(ValueError, match=r"indices must be in \[0, 2\) \(the items stored\); "
                                         "received 0..5"):
        buffer.update_priorities(np.array([0, 5]), np.array([1.0, 1.0]))


def test_multi_agent_replay_buffer_errors():
    with pytest.raises(ValueError, match="received learning_starts=0 and "
                                         "min_size_for_sampling=0; they are one setting"):
        MultiAgentReplayBuffer(10, learning_starts=0, min_size_for_sampling=0)
    with pytest.raises(ValueError, match=r"replay_burn_in=2\): burn-in sequences are not "
                                         "supported"):
        MultiAgentReplayBuffer(10, replay_burn_in=2)
    with pytest.raises(ValueError, match=r"replay_mode=...\) must be 'independent' or "
                                         "'lockstep'; received 'both'"):
        MultiAgentReplayBuffer(10, replay_mode="both")
    with pytest.raises(ValueError, match="lockstep' stores whole env steps; it does not work "
                                         "with storage_unit='episodes'"):
        MultiAgentReplayBuffer(10, replay_mode="lockstep", storage_unit="episodes")
    with pytest.raises(ValueError, match=r"'type' must be a ReplayBuffer class or one of "
                                         r"\['PrioritizedReplayBuffer', 'ReplayBuffer'\]; "
                                         "received 'Nope'"):
        MultiAgentReplayBuffer(10, underlying_buffer_config={"type": "Nope"})
    with pytest.raises(TypeError, match="takes a SampleBatch or MultiAgentBatch; received list"):
        MultiAgentReplayBuffer(10).add([1])
    lockstep = MultiAgentReplayBuffer(10, replay_mode="lockstep", learning_starts=0)
    lockstep.add(_rows(2, eps_id=[0, 0], t=[0, 1], agent_index=[0, 0]))
    with pytest.raises(ValueError, match=r"sample\(policy_id='p'\): lockstep mode samples all "
                                         "policies together"):
        lockstep.sample(1, policy_id="p")


def test_multi_agent_buffer_waits_for_learning_starts_and_cuts_timesteps():
    buffer = MultiAgentReplayBuffer(10, learning_starts=4, replay_sequence_length=2, seed=0)
    buffer.add(_rows(3))
    assert buffer.sample(2).count == 0  # 3 < 4 timesteps added
    buffer.add(_rows(2, start=3))
    assert len(buffer) == 3  # slices of 2 rows per add: [0, 1], [2]; [3, 4]
    assert [b.count for b in buffer.replay_buffers["default_policy"]._storage] == [2, 1, 2]
    assert buffer.sample(5).policy_batches["default_policy"].count in range(5, 11)
    buffer.add(None)  # ignored, as RLlib's


def test_multi_agent_prioritized_buffer_weights_and_errors():
    with pytest.raises(ValueError, match=r"prioritized_replay_eps=...\) must be a finite "
                                         "number >= 0; received -1"):
        MultiAgentPrioritizedReplayBuffer(10, prioritized_replay_eps=-1)
    buffer = MultiAgentPrioritizedReplayBuffer(10, learning_starts=0, seed=0)
    # The `weights` column's mean is the item's priority.
    buffer.add(_rows(1, weights=np.array([4.0])))
    assert buffer.replay_buffers["default_policy"]._it_sum[0] == pytest.approx(4.0 ** 0.6)
    with pytest.raises(KeyError, match="no items of policy 'other' are stored"):
        buffer.update_priorities({"other": (np.array([0]), np.array([1.0]))})
    plain = MultiAgentPrioritizedReplayBuffer(
        10, learning_starts=0, underlying_buffer_config={"type": ReplayBuffer})
    plain.add(_rows(1))
    with pytest.raises(TypeError, match="is a ReplayBuffer, not a PrioritizedReplayBuffer"):
        plain.update_priorities({"default_policy": (np.array([0]), np.array([1.0]))})


class _MultiAgentSampling(ReplayBuffer):
    """A user's underlying buffer that hands back a MultiAgentBatch."""

    def sample(self, num_items, **kwargs):
        return super().sample(num_items, **kwargs).as_multi_agent()


def test_an_underlying_buffer_that_samples_no_sample_batch_is_a_clear_error():
    buffer = MultiAgentReplayBuffer(
        10, learning_starts=0, underlying_buffer_config={"type": _MultiAgentSampling})
    buffer.add(_rows(2))
    for call in (lambda: buffer.sample(1), lambda: buffer.sample(1, policy_id="default_policy")):
        with pytest.raises(TypeError, match=r"underlying buffer of policy 'default_policy' "
                                            r"\(_MultiAgentSampling\) returned MultiAgentBatch "
                                            r"from sample\(\); in independent mode"):
            call()


def test_fifo_and_mixin_errors():
    from tfrl.utils.replay_buffers import MultiAgentMixInReplayBuffer

    with pytest.raises(ValueError, match=r"MultiAgentMixInReplayBuffer\(replay_ratio=...\) must "
                                         r"be a number in \[0, 1\]; received -0.1"):
        MultiAgentMixInReplayBuffer(10, replay_ratio=-0.1)
    with pytest.raises(TypeError, match="FifoReplayBuffer.add\\(\\) takes a SampleBatch"):
        FifoReplayBuffer().add("batch")
    with pytest.raises(ValueError, match=r"capacity=...\) must be an int >= 1 \(batches\); "
                                         "received 0"):
        MixInMultiAgentReplayBuffer(0, 0.5)
    with pytest.raises(ValueError, match=r"replay_ratio=...\) must be a number in \[0, 1\]"):
        MixInMultiAgentReplayBuffer(4, 1.5)
    with pytest.raises(TypeError, match="MixInMultiAgentReplayBuffer.add\\(\\) takes a "
                                        "SampleBatch"):
        MixInMultiAgentReplayBuffer(4, 0.5).add({"obs": [1]})
    lockstep = MixInMultiAgentReplayBuffer(4, 0.5, replay_mode="lockstep")
    with pytest.raises(ValueError, match="in lockstep mode all policies replay together; "
                                         "pass policy_id='__all__'"):
        lockstep.replay()
