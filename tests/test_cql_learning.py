"""CQL learns Pendulum-v1 from data that tfrl writes itself (no downloads).

The data (tfrl.examples.offline_data.make_pendulum_dataset, once per module, in a
temporary directory): SAC with examples/tuned/sac_pendulum.yaml trains for 3,000 env
steps (seed 0), then its stochastic policy writes 10k steps (mean return about -820).
CQL (examples/tuned/cql_pendulum.yaml, 2,550 gradient steps) reaches a greedy mean
return >= -400 over 10 real episodes, for each of three learner seeds.
"""

import math
import os

import pytest

from tfrl.algorithms.registry import get_algorithm_class
from tfrl.cli.experiment import build_config, resolve_experiment
from tfrl.examples.offline_data import make_pendulum_dataset

pytestmark = pytest.mark.learning

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "examples", "tuned", "cql_pendulum.yaml")


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("offline_pendulum"))
    return out, make_pendulum_dataset(out, seed=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cql_from_partly_trained_sac_data_reaches_minus_400(pendulum_data, seed):
    data, info = pendulum_data
    # The data are far from solved: the learner must do better than its data.
    assert info["steps"] == 10_000 and info["mean_return"] < -600, info
    exp = resolve_experiment(TUNED, overrides=[f"input={data}", f"seed={seed}"])
    algo = get_algorithm_class("CQL")(config=build_config(exp))
    try:
        for _ in range(int(exp.stop["training_iteration"])):
            result = algo.train()
    finally:
        algo.stop()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert math.isfinite(stats["total_loss"]) and stats["num_grad_updates"] == 2550, stats
    mean_return = result["evaluation"]["episode_reward_mean"]
    print(f"CQL seed {seed}: greedy mean return {mean_return:.1f} "
          f"(data {info['mean_return']:.1f})")
    # Measured (2026-11-27): seeds 0 / 1 / 2: -241.7 / -196.2 / -197.9 (3 iterations,
    # 1,300 steps: -403 / -396 / -329, too close).
    assert mean_return >= -400
