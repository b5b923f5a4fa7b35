"""Env suites whose ids gymnasium learns only from their package (ALE, MinAtar): usable by
id in a config, registered on first use."""

import sys

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env import registry
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator, register_suite
from tfrl.env.wrappers import atari


def test_minatar_ids_work_by_name_and_give_10x10_frames():
    pytest.importorskip("minatar")
    env = get_env_creator("MinAtar/Breakout-v1")(EnvContext({}, worker_index=0))
    assert env.observation_space == gym.spaces.Box(0, 1, (10, 10, 4), bool)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == bool and obs.shape == (10, 10, 4)
    assert env.action_space == gym.spaces.Discrete(3)


def test_ale_ids_work_by_name():
    pytest.importorskip("ale_py")
    env = get_env_creator("ALE/Pong-v5")(EnvContext({"frameskip": 1}, worker_index=0))
    assert env.observation_space.shape == (210, 160, 3) and atari.is_atari(env)
    assert register_suite("ALE/Pong-v5") and not register_suite("ALE/NoSuchGame-v5")


def test_missing_suite_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(registry._SUITES, "Fake", ("no_such_module_for_tfrl", None, "fake-pkg"))
    with pytest.raises(ImportError, match=r"'Fake/Game-v0' needs no_such_module_for_tfrl: "
                                          r"pip install 'fake-pkg'"):
        get_env_creator("Fake/Game-v0")
    monkeypatch.setitem(sys.modules, "ale_py", None)  # as if ale-py were not installed
    with pytest.raises(ImportError, match=r"Atari envs need ale-py: pip install 'tfrl\[atari\]'"):
        atari.make_atari("ALE/Pong-v5")


def test_minatar_frames_reach_the_default_minatar_encoder():
    pytest.importorskip("minatar")
    from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
    from tfrl.evaluation.rollout_worker import RolloutWorker

    worker = RolloutWorker(env_creator=get_env_creator("MinAtar/Breakout-v1"),
                           policy_spec=PPOTFPolicy, rollout_fragment_length=32, seed=0,
                           policy_config={"seed": 0})
    batch = worker.sample()
    assert batch["obs"].dtype == bool and batch["obs"].shape == (32, 10, 10, 4)
    kernels = [tuple(w.shape) for w in worker.get_policy().model.trainable_weights
               if "kernel" in w.path]
    assert kernels[:2] == [(3, 3, 4, 16), (1024, 128)]
    assert np.all(np.isin(batch["actions"], [0, 1, 2]))
