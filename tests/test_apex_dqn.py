"""Ape-X DQN without Ray (num_workers=0): per-worker epsilons, config checks, priorities
computed at the worker reaching a shard, shard sampling and priority updates, the learner
thread's outputs, one algorithm step, and the error without Ray. (Ray workers and shards:
tests/test_apex_dqn_ray.py; learning: tests/test_apex_dqn_learning.py.)"""

import concurrent.futures
import sys

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.apex_dqn import ApexDQN, ApexDQNConfig, ApexDQNTFPolicy
from tfrl.algorithms.apex_dqn.apex_dqn_tf_policy import per_worker_epsilon
from tfrl.algorithms.apex_dqn.apex_learner_thread import ApexLearnerThread
from tfrl.algorithms.apex_dqn.replay_shards import ReplayShards, sample_and_store
from tfrl.algorithms.dqn import DQNConfig
from tfrl.execution.replay_buffer import BATCH_INDEXES, WEIGHTS, LocalReplayBuffer
from tfrl.policy.sample_batch import SampleBatch

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
SMALL = {"model": {"fcnet_hiddens": [16]}, "hiddens": [], "seed": 0,
         "train_batch_size": 8, "rollout_fragment_length": 8,
         "num_steps_sampled_before_learning_starts": 8, "timesteps_per_iteration": 0,
         "replay_buffer_config": {"capacity": 1000, "prioritized_replay_alpha": 1.0},
         "optimizer": {"num_replay_buffer_shards": 2}}


def make_policy(worker_index=0, **config):
    return ApexDQNTFPolicy(OBS_SPACE, gym.spaces.Discrete(2),
                           {**ApexDQNConfig.from_dict({**SMALL, **config}).to_dict(),
                            "worker_index": worker_index})


@pytest.fixture(scope="module")
def algo():
    algorithm = ApexDQN(config={**SMALL, "env": "CartPole-v1"})
    yield algorithm
    algorithm.stop()


# ------------------------------------------------------------------ exploration

def test_per_worker_epsilons_are_apex_formula():
    # 0.4 ** (1 + 7 * (i - 1) / (N - 1)): 0.4, 0.4 ** 4.5, 0.4 ** 8 for N = 3.
    np.testing.assert_allclose([per_worker_epsilon(i, 3) for i in (1, 2, 3)],
                               [0.4, 0.016190861, 0.00065536], rtol=1e-6)
    assert per_worker_epsilon(0, 3) == 0.0  # the learner's copy acts greedily
    assert per_worker_epsilon(1, 1) == 0.4
    assert per_worker_epsilon(0, 0) is None  # no remote workers: DQN's schedule


@pytest.mark.parametrize("worker_index, num_workers, epsilon", [
    (2, 3, 0.4 ** 4.5), (0, 3, 0.0), (0, 0, 1.0)])
def test_each_workers_policy_explores_with_its_epsilon(worker_index, num_workers, epsilon):
    policy = make_policy(num_workers=num_workers, worker_index=worker_index)
    assert policy.cur_epsilon == pytest.approx(epsilon)
    policy.global_timestep = 10**6  # constant for the workers; decayed on the schedule
    assert policy.cur_epsilon == pytest.approx(0.02 if num_workers == 0 else epsilon)


def test_the_rollout_worker_hands_its_index_to_the_policy(algo):
    assert algo.get_policy().config["worker_index"] == 0


# ------------------------------------------------------------------ config

def test_defaults_are_rllibs_apex_keys():
    config = ApexDQNConfig()
    assert config.optimizer == {"num_replay_buffer_shards": 4, "max_weight_sync_delay": 400,
                                "debug": False}
    assert (config.n_step, config.train_batch_size, config.training_intensity,
            config.target_network_update_freq, config.rollout_fragment_length,
            config.num_steps_sampled_before_learning_starts) == (3, 512, 1.0, 500_000, 50, 50_000)
    assert config.replay_buffer_config["capacity"] == 2_000_000
    assert config.replay_buffer_config["worker_side_prioritization"] is True
    assert config.exploration_config["type"] == "PerWorkerEpsilonGreedy"
    assert config.num_cpus_per_replay_shard == 0.0


@pytest.mark.parametrize("config, message", [
    ({"optimizer": {"num_replay_buffer_shard": 2}},
     r"Unknown ApexDQNConfig optimizer key 'num_replay_buffer_shard'. Did you mean "
     r"'num_replay_buffer_shards'"),
    ({"optimizer": {"num_replay_buffer_shards": 0}}, r"num_replay_buffer_shards.*>= 1"),
    ({"replay_buffer_config": {"type": "MultiAgentReplayBuffer"}},
     r"worker_side_prioritization'\]=True computes priorities for a prioritized buffer"),
    ({"exploration_config": {"type": "SoftQ"}},
     r"exploration_config\['type'\] must be one of \('PerWorkerEpsilonGreedy', "
     r"'EpsilonGreedy'\); received 'SoftQ'"),
    ({"noisy": True}, r"received noisy=True"),
    ({"custom_resources_per_replay_shard": {"node": -1}},
     r"custom_resources_per_replay_shard maps Ray resource names to amounts >= 0"),
])
def test_bad_configs_are_refused_with_a_clear_error(config, message):
    with pytest.raises(ValueError, match=message):
        ApexDQNConfig.from_dict(config)


def test_dqn_still_refuses_worker_side_prioritization():
    with pytest.raises(ValueError, match="not implemented for DQNConfig"):
        DQNConfig.from_dict({"replay_buffer_config": {"worker_side_prioritization": True}})


# ------------------------------------------------------------------ replay shards

def test_a_weights_column_gives_the_rows_their_priorities():
    buffer = LocalReplayBuffer(capacity=8, replay_batch_size=4000, seed=0,
                               prioritized_replay=True, prioritized_replay_alpha=1.0)
    buffer.add_batch(SampleBatch({"obs": np.arange(3.0), WEIGHTS: np.array([1.0, 2.0, 5.0])}))
    state = buffer.replay_buffers["default_policy"].get_state()
    np.testing.assert_allclose(state["priorities"], [1.0, 2.0, 5.0])  # p ** alpha, alpha 1
    replayed = buffer.replay()
    assert replayed[WEIGHTS].max() == 1.0  # importance weights now, not the priorities
    counts = np.bincount(replayed[BATCH_INDEXES], minlength=3) / replayed.count
    np.testing.assert_allclose(counts, [0.125, 0.25, 0.625], atol=0.03)
    np.testing.assert_allclose(np.unique(replayed["obs"]), [0.0, 1.0, 2.0])
    # The shard's update (the learner's TD errors) replaces them.
    buffer.update_priorities({"default_policy": (np.array([2]), np.array([-1.0]))})
    np.testing.assert_allclose(buffer.replay_buffers["default_policy"].get_state()["priorities"],
                               [1.0, 2.0, 1.0 + 1e-6])


class Recorder:
    """A shard that records what the worker sends, then stores it in a real one."""

    def __init__(self, shard):
        self.shard, self.batches = shard, []

    def add_batch(self, batch):
        self.batches.append(batch)
        self.shard.add_batch(batch)


def test_priorities_computed_at_the_worker_reach_the_shard(algo):
    shards = ReplayShards(algo.config, remote=False)
    recorder = Recorder(shards.local[1])
    worker = algo.workers.local_worker()
    counts = sample_and_store(worker, recorder, worker_side_prioritization=True)
    assert counts == {"env_steps": 8, "agent_steps": 8}
    sent = recorder.batches[0]
    # n-step transitions (3 steps), priorities |TD error| + eps under the worker's weights.
    assert sent["n_step"].max() == 3
    td = algo.get_policy().td_errors(sent)
    np.testing.assert_allclose(sent[WEIGHTS], np.abs(td) + 1e-6, rtol=1e-6)
    stored = shards.local[1].replay_buffers["default_policy"].get_state()["priorities"]
    np.testing.assert_allclose(stored, sent[WEIGHTS])  # alpha 1
    assert len(shards.local[0]) == 0  # the other shard got nothing
    # The shard builds no second n-step on top of the worker's.
    assert shards.local[1].n_step == 1


def test_the_learner_returns_new_priorities_for_the_replayed_rows(algo):
    shards = ReplayShards(algo.config, remote=False)
    sample_and_store(algo.workers.local_worker(), shards.local[0], True)
    replayed = shards.call(0, "replay").result()
    assert replayed.count == 8 and WEIGHTS in replayed
    learner = ApexLearnerThread(algo.workers.local_worker(), 8, 4, prioritized_replay=True)
    learner.inqueue.put((0, replayed))
    learner.step()  # on this thread: as the driver does without remote workers
    output = learner.outqueue.get_nowait()
    assert (output.shard_index, output.env_steps, output.num_nonfinite) == (0, 8, 0)
    indexes, td_errors = output.td_errors["default_policy"]
    np.testing.assert_array_equal(indexes, replayed[BATCH_INDEXES])
    np.testing.assert_allclose(td_errors, algo.get_policy().td_errors(replayed), rtol=1e-5)
    assert "learner_stats" in output.info["default_policy"]
    shards.call(0, "update_priorities", output.td_errors).result()
    stored = shards.local[0].replay_buffers["default_policy"].get_state()["priorities"]
    np.testing.assert_allclose(stored[np.unique(indexes)],
                               [np.abs(td_errors[indexes == i]).max() + 1e-6
                                for i in np.unique(indexes)], rtol=1e-6)


def test_training_steps_fill_the_shards_and_train(algo):
    for _ in range(3):
        result = algo.train()
    counters = result["counters"]
    assert counters["num_env_steps_sampled"] == 24
    # Replays start after 8 steps: one batch of 8 per 8 sampled (training_intensity 1),
    # each from a random shard among those that were sent rows.
    assert counters["num_replay_requests"] == 2
    assert counters["num_env_steps_trained"] == 16 == 8 * algo.learner_thread.num_steps
    assert sum(len(s) for s in algo.replay_shards.local) == 24
    assert result["info"]["replay_shard_0"]["policy_default_policy"]["added_count"] >= 0


class FakeHandle:
    """A remote worker's handle that records the calls it gets."""

    def __init__(self, worker_index):
        self.worker_index, self.calls = worker_index, []

    def share(self, value):
        return value

    def call(self, method, *args, **kwargs):
        self.calls.append((method, kwargs))
        future = concurrent.futures.Future()
        future.set_result(None)
        return future


def test_a_worker_gets_weights_once_it_sampled_max_weight_sync_delay_steps(algo, monkeypatch):
    handles = [FakeHandle(1), FakeHandle(2)]
    monkeypatch.setattr(algo.workers, "remote_workers", lambda: handles)
    delay = algo.config.optimizer["max_weight_sync_delay"]
    assert delay == 400
    algo._sync_worker_weights({1: delay - 1, 2: delay})
    assert [len(h.calls) for h in handles] == [0, 1]
    assert handles[1].calls[0][0] == "set_weights"
    algo._sync_worker_weights({1: 1})  # worker 1 reaches the delay
    algo._sync_worker_weights({2: delay - 1})  # worker 2 is 1 step short
    assert [len(h.calls) for h in handles] == [1, 1]
    algo._sync_worker_weights({2: 1})
    assert [len(h.calls) for h in handles] == [1, 2]
    assert algo.shared_metrics.counters["num_weight_syncs"] == 3


def test_remote_shards_without_ray_name_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "ray" or m.startswith(("ray.", "tfrl.backends.ray"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails
    with pytest.raises(ImportError, match=r"pip install 'tfrl\[ray\]'"):
        ReplayShards(ApexDQNConfig.from_dict(SMALL), remote=True)
