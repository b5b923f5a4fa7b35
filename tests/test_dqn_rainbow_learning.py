"""Rainbow's parts learn CartPole-v1 within DQN's tuned 50k-step budget, 3 of 3 seeds
(seed 0 by default, seeds 1-2 with `-m more_seeds`):

- QR-DQN (tfrl/tuned/dqn_qrdqn_cartpole.yaml: 51 quantiles) reaches a mean return of 475;
- noisy nets without epsilon-greedy (tfrl/tuned/dqn_noisy_cartpole.yaml: exploration from
  the noisy layers alone) reach 400;
- Rainbow (tfrl/tuned/dqn_rainbow_cartpole.yaml: double Q, dueling, 3-step, prioritized
  replay, C51 and noisy nets together) reaches 475.

Steps to the target per seed are in bench/RESULTS.md (sessions 19 and 23).
"""

import os

import pytest

from learning_helpers import train_to_reward
from tfrl.algorithms.dqn import DQN
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = [pytest.mark.learning, pytest.mark.learning_long]

MAX_STEPS = 50_000
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned")
SEEDS = [0, pytest.param(1, marks=pytest.mark.more_seeds),
         pytest.param(2, marks=pytest.mark.more_seeds)]


def _train_to(algo, target):
    result = train_to_reward(algo, target, MAX_STEPS)
    # episode_reward_mean: the mean over the last metrics_smoothing_episodes episodes.
    assert result["episode_reward_mean"] >= target, result["episode_reward_mean"]
    assert result["timesteps_total"] <= MAX_STEPS


@pytest.mark.parametrize("seed", SEEDS)
def test_qr_dqn_reaches_475_on_cartpole(seed):
    algo = DQN(config=build_config(resolve_experiment(
        os.path.join(TUNED, "dqn_qrdqn_cartpole.yaml"), overrides=[f"seed={seed}"])))
    assert algo.config["num_atoms"] == 51 and algo.get_policy().distributional == "quantile"
    _train_to(algo, 475.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_noisy_dqn_without_epsilon_reaches_400_on_cartpole(seed):
    algo = DQN(config=build_config(resolve_experiment(
        os.path.join(TUNED, "dqn_noisy_cartpole.yaml"), overrides=[f"seed={seed}"])))
    assert algo.config["noisy"] and algo.config["num_atoms"] == 1
    _train_to(algo, 400.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_rainbow_reaches_475_on_cartpole(seed):
    algo = DQN(config=build_config(resolve_experiment(
        os.path.join(TUNED, "dqn_rainbow_cartpole.yaml"), overrides=[f"seed={seed}"])))
    config = algo.config
    assert (config["num_atoms"], config["noisy"], config["dueling"], config["double_q"],
            config["n_step"]) == (51, True, True, True, 3)
    assert config["replay_buffer_config"]["type"] == "MultiAgentPrioritizedReplayBuffer"
    _train_to(algo, 475.0)
