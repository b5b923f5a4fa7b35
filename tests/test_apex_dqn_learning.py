"""Ape-X DQN learns CartPole-v1 with 2 Ray rollout workers and 2 replay-shard actors: mean
return >= 400 within 100k env steps and 150 s of training, with the tuned example
(tfrl/tuned/apex_cartpole.yaml; the returns are those of worker 2, the one with the
smaller epsilon). Seed 0 by default, seeds 1-2 with `-m more_seeds`.

Skipped without Ray; marked `ray`, `slow` and `learning`. A local Ray runtime of 2 CPUs
(the workers take half a CPU each; the shards none).
"""

import os
import time

import pytest

from tfrl.algorithms.apex_dqn import ApexDQN
from tfrl.cli.experiment import build_config, resolve_experiment

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.learning, pytest.mark.learning_long, pytest.mark.ray,
              pytest.mark.slow]

TARGET = 400.0
MAX_STEPS = 100_000
MAX_TRAIN_S = 150.0  # a run that has not learned by then fails; it does not hang
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "apex_cartpole.yaml")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.more_seeds),
                                  pytest.param(2, marks=pytest.mark.more_seeds)])
def test_apex_with_2_ray_workers_reaches_400_on_cartpole(ray_runtime, seed):
    config = build_config(resolve_experiment(TUNED, overrides=[f"seed={seed}"]))
    assert config.num_workers == 2 and config.num_cpus_per_worker <= 0.5
    algo = ApexDQN(config=config)
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    start = time.monotonic()
    try:
        while (result["timesteps_total"] < MAX_STEPS
               and time.monotonic() - start < MAX_TRAIN_S):
            result = algo.train()
            if result["episode_reward_mean"] >= TARGET:
                break
    finally:
        algo.stop()
    wall = time.monotonic() - start
    print(f"seed {seed}: {result['episode_reward_mean']:.1f} after "
          f"{result['timesteps_total']} steps, {wall:.1f} s")
    assert result["episode_reward_mean"] >= TARGET, (
        result["episode_reward_mean"], result["timesteps_total"], wall)
    assert result["timesteps_total"] <= MAX_STEPS
    assert result["counters"]["num_weight_syncs"] > 0
