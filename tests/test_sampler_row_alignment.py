"""Every row the samplers record is the transition the env took, with the action the
policy computed for that row's observation.

Each sub-env of a gymnasium vector env (NEXT_STEP autoreset) logs what it was really
stepped with; the batches of the array-based loop and of the generic loop must hold
exactly those episodes (obs, new_obs, actions, rewards, terminateds, truncateds, t,
prev_actions, prev_rewards), each action and extra output equal to what the policy
returned for that observation, no action computed on an ended episode's last
observation, and the policy's `global_timestep` equal to the env steps taken (for a
recording policy and for the PPO, DQN and SAC policies).
"""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.algorithms.sac import SACConfig
from tfrl.algorithms.sac.sac_tf_policy import SACTFPolicy
from tfrl.env.base_env import BaseEnv
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop
from tfrl.policy.sample_batch import SampleBatch

from sampler_helpers import DictOnlyBaseEnv, FakePolicy, FakeWorker, make_sampler

RUNNERS = {"vector": VectorSamplingLoop, "generic": SamplingLoop}


class StepLog(gym.Wrapper):
    """Logs the episodes of one sub-env as it is really reset and stepped: per episode
    `obs` (reset obs first), `actions`, `rewards`, `terminateds`, `truncateds`."""

    def __init__(self, env, log):
        super().__init__(env)
        self.episodes = []
        log.append(self.episodes)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.episodes.append({"obs": [obs], "actions": [], "rewards": [], "terminateds": [],
                              "truncateds": []})
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        episode = self.episodes[-1]
        for key, value in (("obs", obs), ("actions", action), ("rewards", reward),
                           ("terminateds", terminated), ("truncateds", truncated)):
            episode[key].append(value)
        return obs, reward, terminated, truncated, info


def logged_env(env_id, num_envs, max_episode_steps=None):
    log = []
    env = gym.make_vec(env_id, num_envs, vectorization_mode="sync",
                       wrappers=[lambda e: StepLog(e, log)],
                       **({"max_episode_steps": max_episode_steps} if max_episode_steps else {}))
    env.reset(seed=7)
    env.action_space.seed(7)
    return env, log


class RecordingRandomPolicy(FakePolicy):
    """Random actions and extras (seeded); remembers what it returned for each
    observation and counts the rows acted on, as TFPolicy does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rng = np.random.default_rng(0)
        self.acted = {}

    def compute_actions(self, obs_batch, *args, **kwargs):
        obs = np.asarray(obs_batch, np.float32)
        n = len(obs)
        actions = self.rng.integers(0, self.action_space.n, n)
        vf = self.rng.standard_normal(n).astype(np.float32)
        logp = self.rng.standard_normal(n).astype(np.float32)
        for o, a, v, lp in zip(obs, actions, vf, logp):
            assert o.tobytes() not in self.acted, "an observation was acted on twice"
            self.acted[o.tobytes()] = (a, v, lp)
        self.batch_sizes.append(n)
        self.global_timestep += n
        return actions, [], {"vf_preds": vf, "action_logp": logp}


def make(path, env, policy_cls, config=None, **kwargs):
    worker = FakeWorker({"default_policy": (policy_cls, env.single_observation_space,
                                            env.single_action_space, config or {})})
    base = BaseEnv.to_base_env(env)
    sampler = make_sampler(worker, base if path == "vector" else DictOnlyBaseEnv(base), **kwargs)
    assert type(sampler.runner) is RUNNERS[path]
    return sampler, base, worker.policy_map["default_policy"]


def env_steps(log):
    return sum(len(e["actions"]) for episodes in log for e in episodes)


def check_rows(batch, log):
    """The rows of each (env_id, eps_id) are the logged episode of that sub-env, in order;
    only the last episode of a sub-env may be cut short. Returns the complete episodes'
    lengths."""
    lengths = []
    for k, episodes in enumerate(log):
        logged = [e for e in episodes if e["actions"]]  # (a reset without a step: dropped)
        rows = batch["env_id"] == k
        eps_ids = list(dict.fromkeys(batch["eps_id"][rows].tolist()))
        assert 2 <= len(eps_ids) <= len(logged), (k, len(eps_ids), len(logged))
        for j, eps_id in enumerate(eps_ids):
            idx = np.flatnonzero(batch["eps_id"] == eps_id)
            ep = {key: np.asarray(batch[key])[idx] for key in batch.keys()}
            m, want = len(idx), logged[j]
            assert np.all(ep["env_id"] == k)
            np.testing.assert_array_equal(ep["t"], np.arange(m))
            np.testing.assert_array_equal(ep["obs"], np.array(want["obs"][:m]))
            if "new_obs" in ep:  # (PPO's batches drop it)
                np.testing.assert_array_equal(ep["new_obs"], np.array(want["obs"][1:m + 1]))
                np.testing.assert_array_equal(ep["obs"][1:], ep["new_obs"][:-1])
            np.testing.assert_array_equal(ep["actions"], np.array(want["actions"][:m]))
            np.testing.assert_allclose(ep["rewards"], np.array(want["rewards"][:m], np.float32))
            np.testing.assert_array_equal(ep["terminateds"], want["terminateds"][:m])
            np.testing.assert_array_equal(ep["truncateds"], want["truncateds"][:m])
            if "prev_actions" in ep:
                np.testing.assert_array_equal(ep["prev_actions"][1:], ep["actions"][:-1])
                assert ep["prev_actions"][0] == 0
                np.testing.assert_array_equal(ep["prev_rewards"][1:], ep["rewards"][:-1])
                assert ep["prev_rewards"][0] == 0.0
            complete = bool(ep["dones"][-1])
            assert not ep["dones"][:-1].any()
            if j < len(eps_ids) - 1:  # an earlier episode: recorded whole
                assert complete and m == len(want["actions"]), (k, j, m, len(want["actions"]))
            if complete:
                lengths.append(m)
    return lengths


@pytest.mark.parametrize("max_episode_steps", [None, 14])  # terminations / also truncations
@pytest.mark.parametrize("fragment", [7, 32])
@pytest.mark.parametrize("path", ["vector", "generic"])
def test_recorded_rows_are_the_env_transitions_and_the_policy_outputs(path, fragment,
                                                                     max_episode_steps):
    env, log = logged_env("CartPole-v1", 3, max_episode_steps)
    sampler, base, policy = make(path, env, RecordingRandomPolicy,
                                 rollout_fragment_length=fragment)
    batches = [sampler.next() for _ in range(150 // fragment + 2)]
    assert all(b.count == fragment for b in batches)
    batch = SampleBatch.concat_samples(batches)
    lengths = check_rows(batch, log)
    assert len(lengths) >= 6
    if max_episode_steps:
        assert batch["truncateds"].any() and max(lengths) == max_episode_steps
    assert batch["terminateds"].any()
    # Each row's action and extras are what the policy returned for its observation.
    for o, a, v, lp in zip(batch["obs"], batch["actions"], batch["vf_preds"],
                           batch["action_logp"]):
        assert policy.acted[o.astype(np.float32).tobytes()] == (a, v, lp)
    # No action for an ended episode's last observation.
    last_obs = {np.asarray(e["obs"][-1], np.float32).tobytes() for episodes in log
                for e in episodes if e["terminateds"][-1:] == [True] or
                e["truncateds"][-1:] == [True]}
    assert last_obs and not last_obs & set(policy.acted)
    # Every action computed is taken by the env (the last ones in its next step).
    base.poll()
    assert policy.global_timestep == len(policy.acted) == env_steps(log)


def _real_policy(algo, path, num_envs, **kwargs):
    if algo == "SAC":
        env, log = logged_env("Pendulum-v1", num_envs, max_episode_steps=15)
        cls, config = SACTFPolicy, SACConfig.from_dict({
            "seed": 3, "q_model_config": {"fcnet_hiddens": [8]},
            "policy_model_config": {"fcnet_hiddens": [8]}}).to_dict()
    else:
        env, log = logged_env("CartPole-v1", num_envs)
        config = {"seed": 3, "model": {"fcnet_hiddens": [8]}}
        if algo == "DQN":
            cls = DQNTFPolicy
            config.update(hiddens=[8], exploration_config={
                "type": "EpsilonGreedy", "initial_epsilon": 1.0, "final_epsilon": 0.0,
                "epsilon_timesteps": 400})
        else:
            cls = PPOTFPolicy
    # (SAC's squashed actions lie within the env's bounds already: not unsquashed.)
    sampler, base, policy = make(path, env, cls, config, normalize_actions=algo != "SAC",
                                 **kwargs)
    return sampler, base, policy, log


@pytest.mark.parametrize("path", ["vector", "generic"])
@pytest.mark.parametrize("algo", ["PPO", "DQN", "SAC"])
def test_global_timestep_counts_env_steps(algo, path):
    sampler, base, policy, log = _real_policy(algo, path, 3, rollout_fragment_length=20)
    batch = SampleBatch.concat_samples([sampler.next() for _ in range(8)])
    assert batch["dones"].sum() >= 3  # episodes ended on the way
    check_rows(batch, log)
    base.poll()  # takes the actions computed on the last poll
    assert policy.global_timestep == env_steps(log) >= batch.count


def test_dqn_epsilon_follows_the_env_steps_of_one_sub_env():
    # One sub-env, whole episodes: a batch is emitted at the poll that ended the episode,
    # after which no action was computed, so the counter equals the steps in the batches.
    sampler, _, policy, log = _real_policy("DQN", "vector", 1,
                                           rollout_fragment_length=float("inf"),
                                           multiple_episodes_in_batch=False)
    steps = 0
    for _ in range(6):
        batch = sampler.next()
        steps += batch.count
        assert batch["terminateds"][-1]
        assert policy.global_timestep == steps == env_steps(log)
    assert policy.cur_epsilon == pytest.approx(max(0.0, 1.0 - steps / 400))
