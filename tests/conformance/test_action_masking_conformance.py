"""Action masking for every registered algorithm with discrete actions: acting (sampled
and greedy) never picks a masked action, and a learning step on masked rows keeps the
weights finite (the feature itself: tests/test_action_masking.py)."""

import gymnasium as gym
import keras
import numpy as np
import pytest

from conformance_helpers import ALGORITHM_NAMES, algorithm_config, policy_twin, supports
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.examples.envs.masked_actions import MaskedActions
from tfrl.models.catalog import ModelCatalog
from tfrl.policy.sample_batch import SampleBatch

N = 100
RAW_SPACE = MaskedActions().observation_space
PREP = ModelCatalog.get_preprocessor_for_space(RAW_SPACE)
OBS_SPACE = PREP.observation_space
ACT_SPACE = gym.spaces.Discrete(N)


def masked_observations(rows, seed=0):
    env = MaskedActions()
    obs, _ = env.reset(seed=seed)
    out = [obs] + [env._draw() for _ in range(rows - 1)]
    return PREP.transform_batch({k: np.stack([o[k] for o in out]) for k in out[0]})


def invalid(obs, actions):
    return int((obs[np.arange(len(obs)), actions.astype(np.int64)] < 0.5).sum())


DISCRETE = [name for name in ALGORITHM_NAMES if supports(name, "discrete")]


# A policy twin (A3C: A2C's policy and config) runs as its twin.
@pytest.mark.parametrize("name", [name for name in DISCRETE if policy_twin(name) is None])
def test_every_discrete_algorithm_masks_acting_and_learns_finitely(name):
    keras.utils.set_random_seed(0)
    policy = get_algorithm_class(name).default_policy_class(
        OBS_SPACE, ACT_SPACE, algorithm_config(name, model={"fcnet_hiddens": [8]}))
    obs = masked_observations(65, seed=3)
    actions, _, extras = policy.compute_actions(obs[:-1], explore=True)
    assert invalid(obs[:-1], actions) == 0
    if name == "SAC":  # the actor's value head stays at 0 inside the masking wrapper
        np.testing.assert_array_equal(extras["vf_preds"], 0.0)
    greedy, _, _ = policy.compute_actions(obs[:-1], explore=False)
    assert invalid(obs[:-1], greedy) == 0
    rows = len(actions)
    batch = SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                        rewards=obs[np.arange(rows), N + actions],
                        terminateds=np.arange(rows) == rows - 1, truncateds=np.zeros(rows, bool),
                        eps_id=np.zeros(rows, np.int64), t=np.arange(rows), **extras)
    before = policy.get_weights()
    # The non-finite guard's default ("raise") raises on a NaN/inf loss or gradient.
    policy.learn_on_batch(policy.postprocess_trajectory(batch))
    after = policy.get_weights()
    assert all(np.isfinite(w).all() for w in after)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))  # a step applied


def test_discrete_algorithms_are_the_expected_ones():
    assert {"PPO", "APPO", "IMPALA", "A2C", "A3C", "PG", "DQN", "SAC", "BC",
            "MARWIL"} <= set(DISCRETE)
