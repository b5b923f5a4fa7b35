"""CQL learns Pendulum-v1 from data that tfrl writes itself (no downloads).

The data (tfrl.examples.offline_data.make_pendulum_dataset, once per module, in a
temporary directory): SAC with tfrl/tuned/sac_pendulum.yaml trains for 3,000 env
steps (seed 0), then its stochastic policy writes 10k steps (mean return about -675; the
env gets the policy's actions unsquashed, as the samplers send them).
CQL (tfrl/tuned/cql_pendulum.yaml, 2,550 gradient steps) reaches a greedy mean
return >= -400 over 10 real episodes, on the mean of three learner seeds (each above
the data).
"""

import math
import os

import pytest

from tfrl.algorithms.registry import get_algorithm_class
from tfrl.cli.experiment import build_config, resolve_experiment
from tfrl.examples.offline_data import make_pendulum_dataset

pytestmark = [pytest.mark.learning, pytest.mark.learning_long]

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "cql_pendulum.yaml")


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("offline_pendulum"))
    return out, make_pendulum_dataset(out, seed=0)


def cql_greedy_return(data, seed):
    """CQL's greedy mean return (10 episodes) after the tuned file's iterations."""
    exp = resolve_experiment(TUNED, overrides=[f"input={data}", f"seed={seed}"])
    algo = get_algorithm_class("CQL")(config=build_config(exp))
    try:
        for _ in range(int(exp.stop["training_iteration"])):
            result = algo.train()
    finally:
        algo.stop()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert math.isfinite(stats["total_loss"]) and stats["num_grad_updates"] == 2550, stats
    return result["evaluation"]["episode_reward_mean"]


def test_cql_from_partly_trained_sac_data_reaches_minus_400(pendulum_data):
    data, info = pendulum_data
    # The data are far from solved: the learner must do better than its data.
    assert info["steps"] == 10_000 and info["mean_return"] < -500, info
    # Three learner seeds in one test: a single evaluation (10 greedy episodes) is noisy,
    # so the bar is on their mean, with each seed above the data.
    returns = [cql_greedy_return(data, seed) for seed in (0, 1, 2)]
    print(f"CQL seeds 0-2: greedy mean returns {returns} (data {info['mean_return']:.1f})")
    # Measured (2026-11-27, data mean -629, SAC/CQL acting in [-1, 1] under
    # normalize_actions): seeds 0 / 1 / 2: -297 / -382 / -224 (mean -301). Before that fix
    # (the env got twice the policy's torque): data -555, -451 / -197 / -327. (Before the data writer unsquashed the actions, its env got
    # half the torque the sampler sends for the same policy action: data mean -820, and
    # -242 / -196 / -198 here.)
    assert sum(returns) / 3 >= -400, returns
    assert min(returns) >= info["mean_return"] + 50, (returns, info["mean_return"])
