"""QMIX solves the two-step cooperative matrix game (RLlib's TwoStepGame, both agents
grouped): mean return >= 7.9 (the optimum is 8, over the last 20 episodes) within 2,000
steps for 3 of 3 seeds, with the tuned example (tfrl/tuned/qmix_two_step_game.yaml: the
GRU agent network; seeds 0-2 got there after 600 steps each)."""

import os

import pytest

from tfrl.algorithms.qmix import QMix
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = pytest.mark.learning

MAX_STEPS = 2_000
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "qmix_two_step_game.yaml")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.more_seeds),
                                  pytest.param(2, marks=pytest.mark.more_seeds)])
def test_qmix_solves_the_two_step_game(seed):
    algo = QMix(config=build_config(resolve_experiment(TUNED, overrides=[f"seed={seed}"])))
    assert algo.config["mixer"] == "qmix" and algo.get_policy().is_recurrent()
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    try:
        while result["timesteps_total"] < MAX_STEPS:
            result = algo.train()
            if result["episode_reward_mean"] >= 7.9:
                break
        # The greedy joint policy is the optimum: agent 0 picks state 2B, both play 1 (the
        # GRU's state carried from the first step to the second).
        policy = algo.get_policy()
        preprocessor = algo.workers.local_worker().preprocessors["default_policy"]
        first, state, _ = policy.compute_single_action(
            preprocessor.transform((0, 3)), state=policy.get_initial_state(), explore=False)
        second, _, _ = policy.compute_single_action(
            preprocessor.transform((2, 5)), state=state, explore=False)
    finally:
        algo.stop()
    # episode_reward_mean: the mean over the last metrics_smoothing_episodes episodes.
    assert result["episode_reward_mean"] >= 7.9, result["episode_reward_mean"]
    assert result["timesteps_total"] <= MAX_STEPS
    assert int(first[0]) == 1 and (int(second[0]), int(second[1])) == (1, 1)
