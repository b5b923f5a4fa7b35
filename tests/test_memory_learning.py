"""Recurrent PPO learns a task that needs memory, and an MLP provably cannot.

Repeat-after-me (k=1, two symbols, 20-step episodes; `tfrl.examples.envs.repeat_after_me`):
optimum 19, and 0 for every memoryless policy (the symbol to repeat is independent of the
current observation). The LSTM run is the tuned example
`tfrl/tuned/ppo_lstm_repeat_after_me.yaml`; the MLP run is the same config with
`use_lstm` off and the same budget. Wall time: ~10 s each on a quiet core (~25 s loaded).
"""

import os

import pytest

from learning_helpers import train_to_reward
from tfrl.algorithms.ppo import PPO
from tfrl.cli.experiment import build_config, resolve_experiment
from tfrl.examples.envs import RepeatAfterMe

pytestmark = pytest.mark.learning

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "ppo_lstm_repeat_after_me.yaml")
ENV = RepeatAfterMe(delay=1, num_symbols=2, episode_len=20)
#: 95 % of the optimum (19): the mean return over the last 100 training episodes.
TARGET = 0.95 * ENV.optimal_return
#: Every one of 12 seeds reached TARGET after 2,880-3,680 env steps (median 3,040); the
#: budget is 1.7x the slowest.
BUDGET = 6400
#: Episodes of the greedy evaluation after training.
EVAL_EPISODES = 400


def _algo(use_lstm: bool) -> PPO:
    exp = resolve_experiment(TUNED, overrides=[f"model.use_lstm={str(use_lstm).lower()}"])
    assert exp.stop == {"episode_reward_mean": TARGET, "timesteps_total": BUDGET}
    return PPO(config=build_config(exp, extra={
        "evaluation_num_workers": 0, "evaluation_interval": None,
        "evaluation_duration": EVAL_EPISODES, "evaluation_duration_unit": "episodes",
        "evaluation_config": {"explore": False}}))


def _train_and_evaluate(use_lstm: bool):
    algo = _algo(use_lstm)
    try:
        result = train_to_reward(algo, TARGET, BUDGET)
        evaluation = algo.evaluate()["evaluation"]
    finally:
        algo.stop()
    return result, evaluation


def test_ppo_lstm_repeats_after_me():
    result, evaluation = _train_and_evaluate(use_lstm=True)
    assert result["episode_reward_mean"] >= TARGET, result
    assert result["timesteps_total"] <= BUDGET
    # Acting greedily, the learned policy answers every scored step right.
    assert evaluation["episode_reward_mean"] == ENV.optimal_return, evaluation


def test_ppo_mlp_stays_at_chance_on_repeat_after_me():
    assert ENV.chance_return == 0.0
    result, evaluation = _train_and_evaluate(use_lstm=False)
    assert result["timesteps_total"] >= BUDGET  # it never reached the target
    # The last 100 training episodes: each return is a sum of 19 fair +-1 coins (std
    # 4.36), so their mean has std 0.44; +-2 is > 4.5 standard deviations.
    assert abs(result["episode_reward_mean"] - ENV.chance_return) <= 2.0, result
    # 400 greedy episodes (7,600 scored answers): the mean return has std 0.22; +-1 is
    # > 4.5 standard deviations, and 19 (the optimum) is far outside.
    assert abs(evaluation["episode_reward_mean"] - ENV.chance_return) <= 1.0, evaluation
