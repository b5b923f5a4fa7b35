"""tfrl.utils.progress: the script parser, progress lines, stop criteria, the quiet start
and the train-until loop (through the real `fit` loop)."""

import io
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from tfrl.algorithms.fit_loop import fit
from tfrl.utils import progress
from tfrl.utils.progress import (check_stop, format_result, print_result, result_value,
                                 script_parser, stop_reason)
from tfrl.utils.progress_callbacks import train_until

RESULT = {"training_iteration": 2, "timesteps_total": 256, "episode_reward_mean": 21.456,
          "custom_metrics": {"angle_mean": np.float32(0.0125)}, "num_healthy_workers": 2}


class CountingAlgo:
    """train() returns results whose iteration, steps and reward grow by 1, 100, 10; `fit`
    is `Algorithm.fit`'s loop (what fit reads of an algorithm: `iteration`, the step
    counter, `train()`)."""

    def __init__(self):
        self.calls = 0
        self.shared_metrics = types.SimpleNamespace(counters={"num_env_steps_sampled": 0})

    @property
    def iteration(self):
        return self.calls

    def train(self):
        self.calls += 1
        self.shared_metrics.counters["num_env_steps_sampled"] = 100 * self.calls
        return {"training_iteration": self.calls, "timesteps_total": 100 * self.calls,
                "episode_reward_mean": 10.0 * self.calls}

    def fit(self, **kwargs):
        return fit(self, **kwargs)


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


def test_train_until_counts_from_a_later_iteration(capsys):
    algo = CountingAlgo()
    algo.train()
    result = train_until(algo, {"timesteps_total": 300})
    assert algo.calls == 3 and result["timesteps_total"] == 300
    assert capsys.readouterr().out.splitlines() == [
        "iter   2  steps    200  reward   20.00", "iter   3  steps    300  reward   30.00"]


def test_result_value_and_stop_reason():
    result = {"a": {"b": 2}, "x/y": 3.0, "r": float("nan"), "flag": True}
    assert result_value(result, "a/b") == 2 and result_value(result, "x/y") == 3.0
    assert result_value(result, "a/c") is None and result_value(result, "a/b/c") is None
    assert stop_reason(result, {"r": 0, "flag": 0, "a/c": 0}) is None  # nan, bool, absent
    assert stop_reason(result, {"a/b": 3, "x/y": 2.5}) == "x/y=3 >= 2.5"
    assert stop_reason({"t": 1.25}, {"t": 1}) == "t=1.25 >= 1"


@pytest.mark.parametrize("stop, match", [
    ([("training_iteration", 1)], "stop must be a dict of result key -> threshold"),
    ({"training_iteration": "10"}, r"stop\['training_iteration'\]='10' is not a number"),
    ({"done": True}, r"stop\['done'\]=True is not a number"),
])
def test_check_stop_rejects_non_numbers(stop, match):
    with pytest.raises(TypeError, match=match):
        check_stop(stop)
    assert check_stop({"timesteps_total": 5, "time_total_s": 1.5}) == {
        "timesteps_total": 5, "time_total_s": 1.5}


def test_script_parser_smoke_switch_and_env_default(monkeypatch):
    monkeypatch.delenv(progress.SMOKE_ENV_VAR, raising=False)
    parser = script_parser("Trains PPO on CartPole.\n\nDetails.", "2 iterations")
    assert parser.description == "Trains PPO on CartPole."
    assert parser.parse_args([]).smoke is False
    assert parser.parse_args(["--smoke"]).smoke is True
    assert parser.parse_args([]).verbose is False
    assert parser.parse_args(["--verbose"]).verbose is True
    assert "tiny budget (2 iterations) for CI" in parser.format_help()
    monkeypatch.setenv(progress.SMOKE_ENV_VAR, "1")
    assert script_parser("Doc.", "1 iteration").parse_args([]).smoke is True


def test_quiet_tensorflow_sets_the_log_level_unless_verbose_or_set(monkeypatch):
    monkeypatch.delenv(progress.TF_LOG_LEVEL_VAR, raising=False)
    progress.quiet_tensorflow(verbose=True)
    assert progress.TF_LOG_LEVEL_VAR not in os.environ
    monkeypatch.setattr(sys, "argv", ["script.py", "--verbose"])
    progress.quiet_tensorflow()  # verbose=None reads --verbose from sys.argv
    assert progress.TF_LOG_LEVEL_VAR not in os.environ
    monkeypatch.setattr(sys, "argv", ["script.py", "--smoke"])
    progress.quiet_tensorflow()
    assert os.environ[progress.TF_LOG_LEVEL_VAR] == "3"
    monkeypatch.setenv(progress.TF_LOG_LEVEL_VAR, "0")  # the user's own setting stays
    progress.quiet_tensorflow(verbose=False)
    assert os.environ[progress.TF_LOG_LEVEL_VAR] == "0"


NOTICES = ("oneDNN", "cpu_feature_guard", "TF_ENABLE_ONEDNN_OPTS", "cuda", "absl::InitializeLog")
PROBE = ("import sys; from tfrl.utils.progress import quiet_tensorflow; quiet_tensorflow(); "
         "import tensorflow as tf; tf.constant(1.0) + 1.0; print('level', "
         "__import__('os').environ.get('TF_CPP_MIN_LOG_LEVEL'))")
GC_PROBE = ("import gc, sys; {before}; from tfrl.utils.progress import quiet_tensorflow; "
            "quiet_tensorflow(); print('tensorflow' in sys.modules, gc.isenabled(), "
            "gc.get_freeze_count())")


@pytest.mark.slow  # two fresh interpreters import TensorFlow
def test_quiet_tensorflow_hides_the_start_up_notices_in_a_fresh_process():
    env = {k: v for k, v in os.environ.items() if k != progress.TF_LOG_LEVEL_VAR}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    quiet = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           env=env, timeout=300)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stdout == "level 3\n"
    assert not [line for line in quiet.stderr.splitlines()
                if any(n.lower() in line.lower() for n in NOTICES)], quiet.stderr
    verbose = subprocess.run([sys.executable, "-c", PROBE, "--verbose"], capture_output=True,
                             text=True, env=env, timeout=300)
    assert verbose.returncode == 0, verbose.stderr[-2000:]
    assert verbose.stdout == "level None\n"  # TensorFlow logs at its own default level


@pytest.mark.slow  # fresh interpreters import TensorFlow
@pytest.mark.parametrize("before, enabled", [("pass", True), ("gc.disable()", False)])
def test_quiet_tensorflow_imports_tensorflow_then_freezes_what_survives(before, enabled):
    env = dict(os.environ,
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", GC_PROBE.format(before=before)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    imported, collecting, frozen = out.stdout.split()
    assert imported == "True"
    assert collecting == str(enabled)  # the collector is back as the program had it
    assert int(frozen) > 100_000  # TensorFlow's objects are out of later collections
