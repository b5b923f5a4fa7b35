"""bench/bench_qrdqn.py's translation of sb3-contrib's QRDQN settings into tfrl's DQN keys:
the numbers it derives, the keys it refuses, and the tuned files that must say the same.
No training, no SB3 import."""

import importlib
import os
import sys

import pytest

from tfrl import tuned
from tfrl.cli.experiment import load_experiment_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, os.path.join(REPO, "bench"))  # its sibling imports are bare
    try:
        yield importlib.import_module("bench_qrdqn")
    finally:
        sys.path.remove(os.path.join(REPO, "bench"))


def test_cartpole_translates_the_zoo_entry(bench):
    config = bench.tfrl_config("CartPole", seed=3)
    # 128 minibatches of 64 after every 256 steps; epsilon over 16 % of 50k steps.
    assert config["rollout_fragment_length"] == 256
    assert config["training_intensity"] == 32.0
    assert config["exploration_config"]["epsilon_timesteps"] == 8000
    assert config["exploration_config"]["final_epsilon"] == 0.04
    assert config["adam_epsilon"] == pytest.approx(0.01 / 64)
    assert config["num_atoms"] == 10 and config["distributional"] == "quantile"
    assert config["model"] == {"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"}
    assert (config["double_q"], config["dueling"], config["hiddens"]) == (False, False, [])
    assert (config["grad_clip"], config["tau"], config["n_step"]) == (None, 1.0, 1)
    assert config["seed"] == 3 and config["metrics_smoothing_episodes"] == 100


def test_a_smaller_budget_scales_warm_up_and_exploration_alike(bench):
    tfrl_side = bench.tfrl_config("CartPole", seed=0, steps=1500)
    _, sb3_side = bench.sb3_kwargs("CartPole", seed=0, steps=1500)
    assert tfrl_side["num_steps_sampled_before_learning_starts"] == 375
    assert sb3_side["learning_starts"] == 375
    assert tfrl_side["exploration_config"]["epsilon_timesteps"] == 240  # 0.16 x 1500
    assert sb3_side["exploration_fraction"] == 0.16


def test_sb3_gets_the_same_settings_and_sb3_contribs_defaults_explicitly(bench):
    policy, kwargs = bench.sb3_kwargs("MinAtarBreakout", seed=1)
    assert policy == "MlpPolicy"
    assert kwargs["policy_kwargs"] == {"net_arch": [], "n_quantiles": 200,
                                       "features_extractor": "minatar"}
    for key, value in bench.SB3_CONTRIB_DEFAULTS.items():
        assert kwargs[key] == value
    assert (kwargs["train_freq"], kwargs["gradient_steps"], kwargs["batch_size"]) == (4, 1, 32)
    assert bench.tfrl_config("MinAtarBreakout", seed=1)["training_intensity"] == 8.0


def test_an_unmapped_setting_is_refused(bench, monkeypatch):
    original = bench.SECTIONS["CartPole"]["zoo"]
    zoo = dict(original, optimize_memory_usage=True)
    monkeypatch.setitem(bench.SECTIONS["CartPole"], "zoo", zoo)
    with pytest.raises(ValueError, match=r"no tfrl translation .*'optimize_memory_usage'"):
        bench.tfrl_config("CartPole", seed=0)
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        bench.sb3_kwargs("CartPole", seed=0)
    zoo = dict(original, policy_kwargs={"net_arch": [64], "dueling": True})
    monkeypatch.setitem(bench.SECTIONS["CartPole"], "zoo", zoo)
    with pytest.raises(ValueError, match=r"policy_kwargs \['dueling'\]"):
        bench.tfrl_config("CartPole", seed=0)


@pytest.mark.parametrize("section", ["CartPole"])
def test_the_tuned_file_says_what_the_bench_runs(bench, section):
    info = bench.SECTIONS[section]
    experiment = load_experiment_file(tuned.path(info["tuned"]))
    expected = bench.tfrl_config(section, seed=0)
    assert experiment.env == expected.pop("env")
    assert experiment.algo == "DQN"
    assert experiment.stop == {"timesteps_total": info["zoo"]["n_timesteps"]}
    assert experiment.config == expected


def test_only_minatar_caps_its_greedy_episodes(bench):
    # CartPole keeps its own 500-step limit; MinAtar has none, so the bench sets one.
    assert "eval_max_steps" not in bench.SECTIONS["CartPole"]
    assert bench.SECTIONS["MinAtarBreakout"]["eval_max_steps"] == bench.EVAL_MAX_STEPS
