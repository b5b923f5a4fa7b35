"""tfrl.utils.progress: the script parser, progress lines and the train-until loop."""

import io

import numpy as np
import pytest

from tfrl.utils import progress
from tfrl.utils.progress import format_result, print_result, script_parser, train_until

RESULT = {"training_iteration": 2, "timesteps_total": 256, "episode_reward_mean": 21.456,
          "custom_metrics": {"angle_mean": np.float32(0.0125)}, "num_healthy_workers": 2}


class CountingAlgo:
    """train() returns results whose iteration, steps and reward grow by 1, 100, 10."""

    def __init__(self):
        self.calls = 0

    def train(self):
        self.calls += 1
        return {"training_iteration": self.calls, "timesteps_total": 100 * self.calls,
                "episode_reward_mean": 10.0 * self.calls}


def test_format_result_default_and_extra_columns():
    assert format_result(RESULT) == "iter   2  steps    256  reward   21.46"
    line = format_result(RESULT, {"angle": ("custom_metrics/angle_mean", ".3f"),
                                  "angle4": "custom_metrics/angle_mean",
                                  "healthy workers": "num_healthy_workers"})
    assert line == ("iter   2  steps    256  reward   21.46  angle 0.013  angle4 0.0125  "
                    "healthy workers 2")


def test_format_result_shows_missing_values_as_nan_in_the_column_width():
    assert format_result({}) == "iter nan  steps    nan  reward     nan"
    assert format_result({"training_iteration": 1}, {"x": ("a/b", "8.3f")}).endswith(
        "x      nan")


def test_print_result_writes_one_line():
    out = io.StringIO()
    print_result(RESULT, {"healthy workers": "num_healthy_workers"}, file=out)
    assert out.getvalue() == "iter   2  steps    256  reward   21.46  healthy workers 2\n"


def test_train_until_stops_at_the_first_criterion_met(capsys):
    algo = CountingAlgo()
    result = train_until(algo, {"training_iteration": 5, "episode_reward_mean": 30})
    assert algo.calls == 3 and result["episode_reward_mean"] == 30.0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"iter   {i}  steps    {100 * i}  reward   {10 * i}.00" for i in (1, 2, 3)]


def test_train_until_quiet_and_nan_never_stops_early(capsys):
    class NanReward(CountingAlgo):
        def train(self):
            return {**super().train(), "episode_reward_mean": float("nan")}

    algo = NanReward()
    train_until(algo, {"episode_reward_mean": 0, "timesteps_total": 400}, verbose=False)
    assert algo.calls == 4
    assert capsys.readouterr().out == ""


def test_train_until_needs_a_stop_criterion():
    with pytest.raises(ValueError, match=r"at least one stop criterion. Received: stop=\{\}"):
        train_until(CountingAlgo(), {})


def test_script_parser_smoke_switch_and_env_default(monkeypatch):
    monkeypatch.delenv(progress.SMOKE_ENV_VAR, raising=False)
    parser = script_parser("Trains PPO on CartPole.\n\nDetails.", "2 iterations")
    assert parser.description == "Trains PPO on CartPole."
    assert parser.parse_args([]).smoke is False
    assert parser.parse_args(["--smoke"]).smoke is True
    assert "tiny budget (2 iterations) for CI" in parser.format_help()
    monkeypatch.setenv(progress.SMOKE_ENV_VAR, "1")
    assert script_parser("Doc.", "1 iteration").parse_args([]).smoke is True
