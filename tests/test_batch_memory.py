"""Memory of the sampled batches: columns the loss does not read are dropped after
postprocessing (RLlib's view-requirement rule, for `new_obs`), `obs`/`new_obs` of a chunk
share one copy, and the execution pipeline holds no batch while the next is sampled."""

import gc
import weakref

import numpy as np
import pytest

from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.impala.impala_tf_policy import ImpalaTFPolicy
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.evaluation.sampling.vector_chunks import ChunkBuffer
from tfrl.execution.iter import LocalIterator, SharedMetrics
from tfrl.execution.rollout_ops import ConcatBatches
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.output_writer import OutputWriter
from tfrl.policy.train_columns import MissingColumnError


def _worker(policy_cls, policy_config=None, **kwargs):
    import gymnasium as gym

    return RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                         policy_spec=policy_cls, rollout_fragment_length=32, num_envs=2,
                         seed=0, policy_config={"seed": 0, **(policy_config or {})}, **kwargs)


def test_ppo_batches_drop_new_obs_after_bootstrapping():
    worker = _worker(PPOTFPolicy)
    policy = worker.get_policy()
    assert not policy.view_requirements["new_obs"].used_for_training
    batch = worker.sample()
    assert batch.count == 64 and "new_obs" not in batch
    # Postprocessing still bootstrapped from new_obs: truncated pieces have value targets
    # that differ from the discounted rewards alone.
    assert {"obs", "advantages", "value_targets", "vf_preds"} <= set(batch.keys())
    policy.learn_on_batch(batch, sgd_minibatch_size=32, num_sgd_iter=1)


def test_columns_are_kept_for_offline_output_and_for_losses_that_read_them():
    class Collect(OutputWriter):
        written = []

        def write(self, sample_batch):
            self.written.append(sample_batch)

    # A worker that writes its batches keeps every column.
    batch = _worker(PPOTFPolicy, output_creator=lambda ioctx: Collect()).sample()
    assert "new_obs" in batch and Collect.written[0] is batch
    same = batch["eps_id"][:-1] == batch["eps_id"][1:]  # consecutive rows of one episode
    assert same.sum() > 50
    np.testing.assert_array_equal(batch["new_obs"][:-1][same], batch["obs"][1:][same])
    # DQN's loss reads new_obs; IMPALA's V-trace bootstraps from it unless it drops the
    # last step.
    assert "new_obs" in _worker(DQNTFPolicy).sample()
    assert "new_obs" in _worker(ImpalaTFPolicy).sample()
    assert "new_obs" not in _worker(ImpalaTFPolicy, {"vtrace_drop_last_ts": True}).sample()


def test_a_loss_reading_a_dropped_column_says_how_to_keep_it():
    class NextObsPPO(PPOTFPolicy):
        def loss_and_stats(self, model, dist_class, train_batch):
            loss, stats = super().loss_and_stats(model, dist_class, train_batch)
            return loss + 0.0 * model(train_batch["new_obs"])[1][0], stats

    worker = _worker(NextObsPPO)
    batch = worker.sample()
    with pytest.raises(MissingColumnError, match=r"override loss_reads_next_obs\(\)"):
        worker.get_policy().learn_on_batch(batch, sgd_minibatch_size=32, num_sgd_iter=1)

    class KeepingPPO(NextObsPPO):
        def loss_reads_next_obs(self):
            return True

    worker = _worker(KeepingPPO)
    stats = worker.get_policy().learn_on_batch(worker.sample(), sgd_minibatch_size=32,
                                               num_sgd_iter=1)
    assert np.isfinite(stats["learner_stats"]["total_loss"])


def test_chunk_obs_and_new_obs_share_one_copy():
    buffer = ChunkBuffer(1, rollout_fragment_length=8, clip_rewards=None)

    class Poll:
        infos = None

    for t in range(4):
        poll = Poll()
        poll.rewards = np.ones(1, np.float32)
        buffer.write_slot(np.full((1, 2), float(t), np.float32), poll)
        buffer.write_actions(t, np.zeros(1, np.int64), {})
        if t == 0:  # slot 0 holds the reset observation: transitions start at slot 1
            buffer.start_chunk_after_current(0)
    chunk = buffer.chunk(0, 3, episode_id=0)
    assert chunk["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]
    assert chunk["new_obs"][:, 0].tolist() == [1.0, 2.0, 3.0]
    assert np.shares_memory(chunk["obs"], chunk["new_obs"])  # n + 1 rows, not 2n
    assert not np.shares_memory(chunk["obs"], buffer._buf["obs"])  # a copy of the buffers


def test_pipeline_stages_hold_no_batch_while_the_next_is_pulled():
    made, released = [], []

    def make(i):
        if made:  # the consumer dropped the previous batch: nothing else may hold it
            gc.collect()
            released.append(made[-1]() is None)
        batch = SampleBatch({"obs": np.full((8, 3), i, np.float32)})
        made.append(weakref.ref(batch))
        return batch

    def source(timeout=None):
        for i in range(3):
            yield make(i)

    pipeline = (LocalIterator(source, SharedMetrics()).for_each(lambda b: b)
                .filter(lambda b: True).combine(ConcatBatches(min_batch_size=8))
                .for_each(lambda b: b))
    for i in range(3):
        batch = next(pipeline)
        assert batch["obs"][0, 0] == i
        assert batch is made[i]()  # one batch passes ConcatBatches uncopied
        del batch
    assert released == [True, True]
