"""SAC, TD3, DDPG and CQL act in [-1, 1] under `normalize_actions` (the default) and the
sampler unsquashes their actions into the env's bounds exactly once, as RLlib and
Stable-Baselines3 do; without it they act in the env's own bounds, sent unchanged.

A recording env (actions in Box([-2, 2]) or the asymmetric Box([0, 3])) keeps every
action it receives; the sampled batch's `actions` column is compared with it row by row.
"""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.cql import CQLConfig, CQLTFPolicy
from tfrl.algorithms.ddpg import DDPG
from tfrl.algorithms.policy_checks import policy_action_space
from tfrl.algorithms.sac import SAC, SACConfig, SACTFPolicy
from tfrl.algorithms.td3 import TD3, TD3TFPolicy
from tfrl.core.columns import Columns
from tfrl.env.registry import register_env

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOUNDS = {"symmetric": (-2.0, 2.0), "asymmetric": (0.0, 3.0)}
NETS = {"fcnet_hiddens": [16], "fcnet_activation": "relu"}
ROWS = 60


class RecordingEnv(gym.Env):
    """Random observations, reward 0, episodes of 20 steps; `received` (class-wide)
    holds every action `step` got, in order."""

    received: list = []

    def __init__(self, low: float, high: float):
        self.observation_space = OBS
        self.action_space = gym.spaces.Box(low, high, (2,), np.float32)
        self._rng = np.random.default_rng(0)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t = 0
        return self._rng.uniform(-1, 1, 3).astype(np.float32), {}

    def step(self, action):
        RecordingEnv.received.append(np.array(action, np.float32, copy=True))
        self._t += 1
        obs = self._rng.uniform(-1, 1, 3).astype(np.float32)
        return obs, 0.0, False, self._t >= 20, {}


for _name, (_low, _high) in BOUNDS.items():
    register_env(f"recording_{_name}", lambda ctx, lo=_low, hi=_high: RecordingEnv(lo, hi))


def algo_config(algo: str, bounds: str, normalize: bool) -> dict:
    common = {"env": f"recording_{bounds}", "seed": 0, "num_workers": 0,
              "num_envs_per_worker": 1, "rollout_fragment_length": ROWS,
              "normalize_actions": normalize}
    if algo == "SAC":
        return {**common, "q_model_config": NETS, "policy_model_config": NETS}
    nets = {"actor_hiddens": [16], "critic_hiddens": [16]}
    if algo == "TD3":  # noisy actions from the first step, large enough to hit the bounds
        return {**common, **nets, "exploration_config": {
            "type": "GaussianNoise", "random_timesteps": 0, "stddev": 0.8}}
    return {**common, **nets, "exploration_config": {  # DDPG: OU noise from the first step
        "type": "OrnsteinUhlenbeckNoise", "random_timesteps": 0, "ou_base_scale": 0.5}}


ALGOS = {"SAC": SAC, "TD3": TD3, "DDPG": DDPG}


def unsquash(actions, low, high):
    """The sampler's map from [-1, 1] to [low, high] (then clipped to the bounds)."""
    return np.clip(low + (actions + 1.0) * (high - low) / 2.0, low, high).astype(np.float32)


def sample(algo):
    RecordingEnv.received.clear()
    batch = algo.workers.local_worker().sample()
    return np.asarray(batch[Columns.ACTIONS], np.float32), np.stack(RecordingEnv.received)


@pytest.mark.parametrize("bounds", sorted(BOUNDS))
@pytest.mark.parametrize("name", sorted(ALGOS))
def test_env_gets_the_policy_actions_unsquashed_once(name, bounds):
    low, high = BOUNDS[bounds]
    algo = ALGOS[name](config=algo_config(name, bounds, normalize=True))
    try:
        actions, received = sample(algo)
        assert actions.shape == received.shape == (ROWS, 2)
        # The batch (and so replay) holds the policy's own, normalized actions.
        assert actions.min() >= -1.0 and actions.max() <= 1.0, (actions.min(), actions.max())
        # The env got each of them unsquashed exactly once, within its bounds ...
        np.testing.assert_allclose(received, unsquash(actions, low, high), atol=1e-6)
        assert received.min() >= low and received.max() <= high
        # ... and they spread over the bounds instead of piling up at one (a second
        # scaling of [0, 3] by 1.5 with a shift sends most of them to 3.0).
        middle = (low + high) / 2.0
        assert 0.1 < np.mean(received > middle) < 0.9, received
        assert np.mean(np.isclose(received, high)) < 0.5, received

        # compute_single_action unsquashes as the sampler does (`unsquash_action`
        # defaults to normalize_actions); the policy's own action is normalized.
        obs = np.array([0.3, -0.2, 0.5], np.float32)
        policy = algo.get_policy()
        own = policy.compute_single_action(obs, explore=False)[0]
        assert np.all(np.abs(own) <= 1.0), own
        single = algo.compute_single_action(obs, explore=False)
        np.testing.assert_allclose(single, unsquash(own, low, high), atol=1e-6)
        raw = algo.compute_single_action(obs, explore=False, unsquash_action=False)
        np.testing.assert_allclose(raw, own, atol=1e-6)
    finally:
        algo.stop()


@pytest.mark.parametrize("name", sorted(ALGOS))
def test_without_normalize_actions_the_policy_acts_in_env_units(name):
    low, high = BOUNDS["asymmetric"]
    algo = ALGOS[name](config=algo_config(name, "asymmetric", normalize=False))
    try:
        actions, received = sample(algo)
        np.testing.assert_array_equal(received, actions)  # sent unchanged
        assert received.min() >= low and received.max() <= high
        assert np.mean(received > 1.0) > 0.2, received  # not confined to [-1, 1]
        obs = np.array([0.3, -0.2, 0.5], np.float32)
        own = algo.get_policy().compute_single_action(obs, explore=False)[0]
        np.testing.assert_array_equal(algo.compute_single_action(obs, explore=False), own)
        assert np.all((own >= low) & (own <= high)), own
    finally:
        algo.stop()


def test_policy_action_space():
    box = gym.spaces.Box(np.array([0.0, -5.0], np.float32), np.array([3.0, 1.0], np.float32))
    normalized = policy_action_space(box, {"normalize_actions": True})
    assert normalized.shape == (2,)
    np.testing.assert_array_equal(normalized.low, [-1.0, -1.0])
    np.testing.assert_array_equal(normalized.high, [1.0, 1.0])
    assert policy_action_space(box, {"normalize_actions": False}) is box
    unbounded = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert policy_action_space(unbounded, {"normalize_actions": True}) is unbounded
    discrete = gym.spaces.Discrete(3)
    assert policy_action_space(discrete, {"normalize_actions": True}) is discrete


ASYM = gym.spaces.Box(0.0, 3.0, (2,), np.float32)


@pytest.mark.parametrize("normalize", [True, False])
def test_td3_exploration_noise_and_random_actions_clip_to_the_policy_bounds(normalize):
    low, high = (-1.0, 1.0) if normalize else (0.0, 3.0)
    obs = np.random.default_rng(0).uniform(-1, 1, (400, 3)).astype(np.float32)
    for exploration in ({"type": "GaussianNoise", "random_timesteps": 0, "stddev": 3.0},
                        {"type": "GaussianNoise", "random_timesteps": 10_000}):
        policy = TD3TFPolicy(OBS, ASYM, {"seed": 0, "actor_hiddens": [8], "critic_hiddens": [8],
                                         "normalize_actions": normalize,
                                         "exploration_config": exploration})
        actions = policy.compute_actions(obs, explore=True)[0]
        assert actions.min() >= low and actions.max() <= high
        if exploration["random_timesteps"]:  # uniform over the bounds
            np.testing.assert_allclose(actions.mean(), (low + high) / 2.0, atol=0.1)
        else:  # noise of std 3 reaches both bounds
            assert np.any(actions == low) and np.any(actions == high)
        greedy = policy.compute_actions(obs, explore=False)[0]
        assert greedy.min() > low and greedy.max() < high


@pytest.mark.parametrize("normalize", [True, False])
def test_sac_and_cql_act_within_the_policy_bounds(normalize):
    low, high = (-1.0, 1.0) if normalize else (0.0, 3.0)
    obs = np.random.default_rng(0).uniform(-1, 1, (400, 3)).astype(np.float32)
    config = {"seed": 0, "q_model_config": NETS, "policy_model_config": NETS,
              "normalize_actions": normalize}
    sac = SACTFPolicy(OBS, ASYM, SACConfig.from_dict(config).to_dict())
    cql = CQLTFPolicy(OBS, ASYM, CQLConfig.from_dict(config).to_dict())
    for policy in (sac, cql):
        actions = policy.compute_actions(obs, explore=True)[0]
        assert actions.min() >= low and actions.max() <= high
        # The initial policy spreads over the whole interval, not a part of it.
        assert actions.min() < low + 0.25 * (high - low)
        assert actions.max() > high - 0.25 * (high - low)
    # CQL's uniform actions and their log-density live in the same space.
    np.testing.assert_array_equal(cql._low, [low, low])
    np.testing.assert_array_equal(cql._high, [high, high])
    np.testing.assert_allclose(cql.random_log_density, -2 * np.log(high - low), rtol=1e-6)


@pytest.mark.parametrize("normalize", [True, False])
def test_td3_target_smoothing_clips_to_the_policy_bounds(monkeypatch, normalize):
    from tfrl.algorithms.td3 import td3_tf_policy
    from tfrl.policy.sample_batch import SampleBatch
    seen = {}
    original = td3_tf_policy.smoothed_target_action

    def spy(actions, noise, **kwargs):
        seen.update(low=np.asarray(kwargs["low"]), high=np.asarray(kwargs["high"]))
        return original(actions, noise, **kwargs)

    monkeypatch.setattr(td3_tf_policy, "smoothed_target_action", spy)
    policy = TD3TFPolicy(OBS, ASYM, {"seed": 0, "actor_hiddens": [8], "critic_hiddens": [8],
                                     "normalize_actions": normalize})
    rng = np.random.default_rng(0)
    low, high = (-1.0, 1.0) if normalize else (0.0, 3.0)
    rows = SampleBatch(obs=rng.uniform(-1, 1, (8, 3)).astype(np.float32),
                       new_obs=rng.uniform(-1, 1, (8, 3)).astype(np.float32),
                       actions=rng.uniform(low, high, (8, 2)).astype(np.float32),
                       rewards=rng.normal(size=8).astype(np.float32),
                       terminateds=np.zeros(8, bool))
    policy.compute_gradients(rows)
    np.testing.assert_array_equal(seen["low"], [low, low])
    np.testing.assert_array_equal(seen["high"], [high, high])
