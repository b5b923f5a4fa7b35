"""One source for each default: policies take their missing keys from their algorithm's
config class, and `policy.config` is read-only."""

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.env.multi_agent_env import make_multi_agent
from tfrl.examples.envs.two_step_game import TwoStepGameWithGroupedAgents
from tfrl.models.catalog import ModelCatalog
from tfrl.policy.policy_config import FrozenConfig, PolicyConfig
from tfrl.policy.tf_policy import DEFAULT_CONFIG, TFPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)
BOX_ACT = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
# A group of two agents (QMIX's spaces): the Tuple of their spaces, flattened.
GROUPED_OBS = ModelCatalog.get_preprocessor_for_space(
    gym.spaces.Tuple([gym.spaces.Discrete(6)] * 2)).observation_space
GROUPED_ACT = gym.spaces.Tuple([gym.spaces.Discrete(2)] * 2)


def _discrete(algo_class) -> bool:
    """Whether the algorithm's policy takes Discrete actions (else: Box, on Pendulum)."""
    types = getattr(algo_class.default_policy_class, "action_space_types", None)
    return types is None or isinstance(ACT, types)


def _grouped(algo_class) -> bool:
    """Whether the algorithm's policy acts for a group of agents (QMIX: Tuple actions, on
    the grouped TwoStepGame)."""
    types = getattr(algo_class.default_policy_class, "action_space_types", None)
    return types is not None and isinstance(GROUPED_ACT, types)


def _env(algo_class):
    if _grouped(algo_class):
        return TwoStepGameWithGroupedAgents
    env = "CartPole-v1" if _discrete(algo_class) else "Pendulum-v1"
    # An algorithm for several agents (MAPPO): two agents, each in a copy of the env.
    return make_multi_agent(env) if getattr(algo_class, "multi_agent_only", False) else env


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_policy_built_by_the_algorithm_sees_exactly_the_default_config(name):
    algo_class, config_class = get_algorithm_class(name, return_config=True)
    config = config_class().environment(_env(algo_class), env_config={"num_agents": 2}
                                        if getattr(algo_class, "multi_agent_only", False)
                                        else {})
    algo = algo_class(config=config)
    # Keys the algorithm fills in from its env before building the policies (MAPPO's
    # critic input: the agents and their observation sizes), and the index of the worker
    # that built the policy (RLlib's policy configs carry it too; Ape-X's per-worker
    # epsilons read it).
    from_env = getattr(algo_class, "settings_from_env", None)
    expected = {**config.to_dict(), "worker_index": 0,
                **(from_env(config) if from_env else {})}
    try:
        policy = algo.get_policy()
        assert type(policy) is algo_class.default_policy_class
        assert policy.config_class is config_class
        assert dict(policy.config) == expected
    finally:
        algo.stop()


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_policy_built_from_a_partial_dict_takes_the_algorithm_defaults(name):
    algo_class, config_class = get_algorithm_class(name, return_config=True)
    obs, act = (GROUPED_OBS, GROUPED_ACT) if _grouped(algo_class) else (
        OBS, ACT if _discrete(algo_class) else BOX_ACT)
    policy = algo_class.default_policy_class(obs, act, {"lr": 1e-3, "seed": 0})
    assert dict(policy.config) == {**config_class().to_dict(), "lr": 1e-3, "seed": 0}
    if hasattr(type(policy), "cur_lr"):  # SAC learns at its `optimization` rates, not `lr`
        assert policy.cur_lr == pytest.approx(1e-3)


def test_ppo_policy_defaults_are_ppo_configs():
    from tfrl.algorithms.ppo import PPOConfig, PPOTFPolicy

    policy = PPOTFPolicy(OBS, ACT, {"seed": 0})
    defaults = PPOConfig()
    assert (policy.config["lr"], policy.config["num_sgd_iter"],
            policy.config["sgd_minibatch_size"]) == (defaults.lr, defaults.num_sgd_iter,
                                                     defaults.sgd_minibatch_size) == (5e-5, 30, 128)


def test_tf_policy_defaults_come_from_policy_config():
    assert TFPolicy.config_class is PolicyConfig
    assert DEFAULT_CONFIG == PolicyConfig().to_dict()
    from tfrl.algorithms.algorithm_config import AlgorithmConfig

    # AlgorithmConfig extends PolicyConfig: the policy keys are declared once.
    assert issubclass(AlgorithmConfig, PolicyConfig)
    common = AlgorithmConfig().to_dict()
    assert {k: common[k] for k in DEFAULT_CONFIG} == DEFAULT_CONFIG


def test_policy_config_is_read_only():
    from tfrl.algorithms.pg import PGTFPolicy

    policy = PGTFPolicy(OBS, ACT, {"seed": 0, "lr": 0.01})
    assert policy.config["lr"] == 0.01 and isinstance(policy.config, dict)
    message = (r"policy.config is read-only \(it was fixed when the policy was built\); cannot "
               r"set 'lr'. Build the policy with the config you want; pass per-call learning "
               r"settings to learn_on_batch\(samples, num_sgd_iter=..., "
               r"sgd_minibatch_size=...\)")
    with pytest.raises(TypeError, match=message):
        policy.config["lr"] = 0.5
    with pytest.raises(TypeError, match="cannot delete 'lr'"):
        del policy.config["lr"]
    with pytest.raises(TypeError, match="cannot update it"):
        policy.config.update(lr=0.5)
    with pytest.raises(TypeError, match="cannot update it"):
        policy.config |= {"lr": 0.5}
    with pytest.raises(TypeError, match="cannot pop 'lr'"):
        policy.config.pop("lr")
    with pytest.raises(TypeError, match="cannot setdefault 'foo'"):
        policy.config.setdefault("foo", 1)
    with pytest.raises(TypeError, match="cannot clear it"):
        policy.config.clear()
    with pytest.raises(TypeError, match="cannot pop an item"):
        policy.config.popitem()
    assert policy.config["lr"] == 0.01


def test_frozen_config_copies_are_plain_or_frozen_as_asked():
    config = FrozenConfig({"lr": 0.1, "model": {"fcnet_hiddens": [8]}})
    plain = config.copy()
    plain["lr"] = 0.2
    assert type(plain) is dict and config["lr"] == 0.1
    for clone in (copy.copy(config), copy.deepcopy(config), pickle.loads(pickle.dumps(config))):
        assert type(clone) is FrozenConfig and clone == config
    assert {**config, "lr": 0.3}["lr"] == 0.3
