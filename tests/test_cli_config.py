"""The CLI's flag/file -> config conversion and its progress display (no training)."""

import io
import json
import importlib.util
import os
import re

import pytest

from tfrl.algorithms.registry import ALGORITHMS
from tfrl.cli.experiment import (CliError, Experiment, apply_overrides, build_config,
                                 load_experiment_file, parse_override, parse_stop,
                                 resolve_experiment, yaml_value)
from tfrl.cli.commands import PROGRESS_COLUMNS
from tfrl.utils.progress import format_duration, result_value, stop_reason
from tfrl.utils.progress_callbacks import ProgressLogger, StopOnCriteria

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNED = os.path.join(REPO_ROOT, "tfrl", "tuned")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------ values and overrides

def test_yaml_value_reads_scalars_lists_dicts_and_exponent_floats():
    assert yaml_value("1e-3") == 0.001 and isinstance(yaml_value("1e5"), float)
    assert yaml_value("1.0e-3") == 0.001
    assert yaml_value("3") == 3 and isinstance(yaml_value("3"), int)
    assert yaml_value("[64, 64]") == [64, 64]
    assert yaml_value("{a: 1, b: [x]}") == {"a": 1, "b": ["x"]}
    assert yaml_value("true") is True and yaml_value("null") is None
    assert yaml_value("relu") == "relu"


def test_parse_override_splits_dotted_keys():
    assert parse_override("lr=0.5") == (["lr"], 0.5)
    assert parse_override("model.fcnet_hiddens=[64,64]") == (["model", "fcnet_hiddens"], [64, 64])
    assert parse_override("env_config={a: 1}") == (["env_config"], {"a": 1})
    assert parse_override("x==y") == (["x"], "=y")  # only the first '=' splits


@pytest.mark.parametrize("text", ["foo", "=3", "model..x=1", ""])
def test_parse_override_rejects_text_without_key_value(text):
    with pytest.raises(CliError, match=r"is not KEY=VALUE; write e\.g\. --config_override=lr"):
        parse_override(text)


def test_parse_override_rejects_malformed_yaml_value():
    with pytest.raises(CliError, match=r"the value is not a YAML value .* write lists as"):
        parse_override("model.fcnet_hiddens=[64, 64")


def test_apply_overrides_sets_nested_keys_in_order_without_mutating():
    base = {"lr": 0.1, "model": {"fcnet_hiddens": [8], "fcnet_activation": "relu"}}
    out = apply_overrides(base, ["lr=0.2", "model.fcnet_hiddens=[4]", "lr=0.3",
                                 "env_config.size=5"])
    assert out == {"lr": 0.3, "model": {"fcnet_hiddens": [4], "fcnet_activation": "relu"},
                   "env_config": {"size": 5}}
    assert base["model"]["fcnet_hiddens"] == [8]


def test_apply_overrides_rejects_dotted_key_through_a_scalar():
    with pytest.raises(CliError, match=r"lr is a float, not a dict, so it has no key 'x'; "
                                       r"set lr=<value> instead"):
        apply_overrides({"lr": 0.1}, ["lr.x=1"])


# --------------------------------------------------------------------------- stop

def test_parse_stop_reads_numbers():
    assert parse_stop("timesteps_total=1e5, episode_reward_mean=475,") == {
        "timesteps_total": 100000.0, "episode_reward_mean": 475}
    assert parse_stop("evaluation/episode_reward_mean=200") == {
        "evaluation/episode_reward_mean": 200}


@pytest.mark.parametrize("text,message", [
    ("timesteps=100", r"Unknown stop criterion 'timesteps' in --stop\. Did you mean "
                      r"'timesteps_total'\?"),
    ("timesteps_total=lots", r"timesteps_total='lots' in --stop is not a number; write e\.g\. "
                             r"timesteps_total=100000"),
    ("timesteps_total", r"--stop item 'timesteps_total' is not KEY=NUMBER"),
    ("training_iteration=true", r"is not a number"),
])
def test_parse_stop_errors(text, message):
    with pytest.raises(CliError, match=message):
        parse_stop(text)


def test_stop_reason_and_nested_results():
    result = {"timesteps_total": 100, "episode_reward_mean": float("nan"),
              "evaluation": {"episode_reward_mean": 30.0}}
    assert stop_reason(result, {"episode_reward_mean": 0}) is None  # NaN never stops
    assert stop_reason(result, {"timesteps_total": 101}) is None
    assert stop_reason(result, {"timesteps_total": 100}) == "timesteps_total=100 >= 100"
    assert stop_reason(result, {"evaluation/episode_reward_mean": 25}) == (
        "evaluation/episode_reward_mean=30 >= 25")
    assert result_value(result, "evaluation/missing") is None


# -------------------------------------------------------------------------- files

def test_load_yaml_file(tmp_path):
    path = _write(tmp_path, "e.yaml", "algo: PG\nenv: CartPole-v1\nstop: {training_iteration: 3}\n"
                                      "config:\n  lr: 1e-3\n  model: {fcnet_hiddens: [8]}\n")
    exp = load_experiment_file(path)
    assert exp == Experiment(algo="PG", env="CartPole-v1", config={
        "lr": 0.001, "model": {"fcnet_hiddens": [8]}}, stop={"training_iteration": 3})


def test_load_json_file_and_rllib_tuned_example_form(tmp_path):
    path = _write(tmp_path, "e.json", json.dumps({"algo": "A2C", "config": {"gamma": 0.9}}))
    assert load_experiment_file(path) == Experiment(algo="A2C", config={"gamma": 0.9})
    rllib = _write(tmp_path, "r.yaml", "cartpole-ppo:\n  env: CartPole-v1\n  run: PPO\n"
                                       "  stop: {episode_reward_mean: 150}\n"
                                       "  config: {num_workers: 0}\n")
    assert load_experiment_file(rllib) == Experiment(
        algo="PPO", env="CartPole-v1", config={"num_workers": 0},
        stop={"episode_reward_mean": 150})


@pytest.mark.parametrize("name,text,message", [
    ("a.yaml", "algo: PPO\nlr: 0.1\n", r"unknown top-level key 'lr'.*algorithm settings go "
                                       r"under config:"),
    ("b.yaml", "algo: PPO\nconfg: {}\n", r"unknown top-level key 'confg'\. Did you mean "
                                         r"'config'\?"),
    ("c.yaml", "algo: [PPO\n", r"is not valid YAML .*fix the syntax"),
    ("d.json", "{'algo': 1}", r"is not valid JSON"),
    ("e.yaml", "- PPO\n", r"holds a list; it must hold a mapping"),
    ("f.yaml", "algo: PPO\nrun: PG\n", r"sets both algo \('PPO'\) and run \('PG'\); keep one"),
    ("g.yaml", "config: [1]\n", r"config must be a mapping; it is a list"),
    ("h.yaml", "stop: {reward: 1}\n", r"Unknown stop criterion 'reward' in file"),
])
def test_file_errors(tmp_path, name, text, message):
    with pytest.raises(CliError, match=message):
        load_experiment_file(_write(tmp_path, name, text))


def test_missing_file():
    with pytest.raises(CliError, match=r"Config file 'nope\.yaml' does not exist\. Pass "
                                       r"--config=<path"):
        load_experiment_file("nope.yaml")


def test_flags_override_the_file_in_order(tmp_path):
    path = _write(tmp_path, "e.yaml", "algo: PG\nenv: CartPole-v1\nstop: {timesteps_total: 9}\n"
                                      "config: {lr: 0.1, seed: 1, num_workers: 3}\n")
    exp = resolve_experiment(path, algo="PPO", env="Pendulum-v1",
                             settings={"seed": 5, "num_workers": None},
                             overrides=["lr=0.2", "seed=7"], stop="training_iteration=2")
    assert exp.algo == "PPO" and exp.env == "Pendulum-v1"
    assert exp.config == {"lr": 0.2, "seed": 7, "num_workers": 3}
    assert exp.stop == {"timesteps_total": 9, "training_iteration": 2}
    # env may also come from the config dict (RLlib style); it moves to exp.env.
    exp = resolve_experiment(overrides=["env=CartPole-v1"])
    assert exp.env == "CartPole-v1" and "env" not in exp.config


# ------------------------------------------------------------- config building

def test_tuned_ppo_cartpole_is_the_main_example_config():
    # tests/test_ppo_learning.py and the benches load the yaml; the README's main job
    # (examples/ppo_cartpole.py) spells the same config with the builder API.
    spec = importlib.util.spec_from_file_location(
        "ppo_cartpole_example", os.path.join(REPO_ROOT, "examples", "ppo_cartpole.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    path = os.path.join(TUNED, "ppo_cartpole.yaml")
    exp = resolve_experiment(path)
    assert exp.stop == {"episode_reward_mean": 475, "timesteps_total": 100_000}
    assert build_config(exp) == example.make_config(0)
    assert build_config(resolve_experiment(path, overrides=["seed=2"])) == example.make_config(2)
    assert build_config(exp) != example.make_config(1)


def test_tuned_pg_a2c_pendulum_are_their_learning_test_configs():
    from tfrl.algorithms.a2c import A2CConfig
    from tfrl.algorithms.a3c import A3CConfig
    from tfrl.algorithms.pg import PGConfig
    from tfrl.algorithms.ppo import PPOConfig

    cartpole = {"env": "CartPole-v1", "num_envs_per_worker": 8, "gamma": 0.99,
                "model": {"fcnet_hiddens": [64, 64]}, "seed": 0}
    expected = {
        "pg_cartpole.yaml": PGConfig.from_dict({**cartpole, "rollout_fragment_length": 64,
                                                "train_batch_size": 512, "lr": 0.005}),
        "a2c_cartpole.yaml": A2CConfig.from_dict({
            **cartpole, "rollout_fragment_length": 8, "train_batch_size": 64, "lr": 1e-3,
            "grad_clip": 0.5, "entropy_coeff": 0.0, "min_iter_time_s": 0}),
        "a3c_cartpole.yaml": A3CConfig.from_dict({
            **cartpole, "num_workers": 2, "num_cpus_per_worker": 0.5,
            "rollout_fragment_length": 8, "lr": 1e-3, "grad_clip": 0.5, "entropy_coeff": 0.0,
            "min_iter_time_s": 0, "timesteps_per_iteration": 2000, "sample_timeout_s": 60,
            "worker_health_probe_timeout_s": 60}),
        "ppo_pendulum.yaml": PPOConfig.from_dict({
            "env": "Pendulum-v1", "num_workers": 0, "num_envs_per_worker": 4,
            "rollout_fragment_length": 256, "train_batch_size": 1024,
            "sgd_minibatch_size": 64, "num_sgd_iter": 10, "gamma": 0.9, "lambda": 0.95,
            "clip_param": 0.2, "vf_clip_param": 1e6, "vf_loss_coeff": 0.5, "kl_coeff": 0.0,
            "grad_clip": 0.5, "lr": 1e-3, "observation_filter": "MeanStdFilter",
            "model": {"fcnet_hiddens": [64, 64], "free_log_std": False}, "seed": 0}),
    }
    for name, config in expected.items():
        assert build_config(resolve_experiment(os.path.join(TUNED, name))) == config, name


TUNED_FILES = sorted(f for f in os.listdir(TUNED) if f.endswith((".yaml", ".yml", ".json")))


@pytest.mark.parametrize("name", TUNED_FILES)
def test_every_tuned_file_builds_its_algorithms_config_and_is_listed(name, tmp_path):
    # Each file's keys and values pass its algorithm's config checks (without making its
    # env: the Atari, MuJoCo and MinAtar files need their extras for that), and
    # tfrl/tuned/README.md has a row for it. The offline files read data made by
    # their tests (`input` under /tmp): here an existing directory stands in for it.
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.models.catalog import merge_model_config

    exp = resolve_experiment(os.path.join(TUNED, name))
    assert exp.algo in ALGORITHMS and exp.env, (exp.algo, exp.env)
    config = dict(exp.config, env=exp.env)
    if isinstance(config.get("input"), str) and config["input"] != "sampler":
        (tmp_path / "data.json").write_text("")
        config["input"] = str(tmp_path)
    config_class = get_algorithm_class(exp.algo, return_config=True)[1]
    config = config_class.from_dict(config)
    merge_model_config(config.model)
    with open(os.path.join(TUNED, "README.md"), encoding="utf-8") as f:
        assert f"`{name}`" in f.read(), f"tfrl/tuned/README.md has no row for {name}"


@pytest.mark.parametrize("exp,message", [
    (Experiment(algo="PPX", env="CartPole-v1"),
     r"^Unknown algorithm 'PPX'\. Did you mean 'PPO'\? Pass --algo with one of "
     + re.escape(", ".join(sorted(ALGORITHMS))) + r"\.$"),
    (Experiment(env="CartPole-v1"), r"^No algorithm given; pass --algo=PPO"),
    (Experiment(algo="PPO"), r"^No env given; pass --env=CartPole-v1"),
    (Experiment(algo="PPO", env="CartPol-v1"),
     r"^Unknown env 'CartPol-v1'.*Did you mean 'CartPole-v1'.*Pass --env=<gymnasium id>"),
    (Experiment(algo="PPO", env="CartPole-v1", config={"num_wrkers": 1}),
     r"^Unknown PPOConfig key 'num_wrkers'\. Did you mean 'num_workers'\? Fix it in "
     r"--config or --config_override \(run with --dry_run to see every key\)\.$"),
    (Experiment(algo="PPO", env="CartPole-v1", config={"model": {"fcnet_hidens": [4]}}),
     r"Unknown model config key\. Received: 'fcnet_hidens'\. Did you mean 'fcnet_hiddens'\?"),
    (Experiment(algo="PPO", env="CartPole-v1", config={"sgd_minibatch_size": 512,
                                                       "train_batch_size": 256}),
     r"sgd_minibatch_size \(512\) must be <= train_batch_size \(256\)"),
    (Experiment(algo="PG", env="CartPole-v1", config={"callbacks": "no_such_module:CB"}),
     r"^callbacks='no_such_module:CB' cannot be imported \(ModuleNotFoundError"),
])
def test_build_config_errors(exp, message):
    with pytest.raises(CliError, match=message):
        build_config(exp)


def test_unknown_algorithm_lists_every_registered_algorithm():
    with pytest.raises(CliError) as error:
        build_config(Experiment(algo="PPX", env="CartPole-v1"))
    listed = str(error.value).split("Pass --algo with one of ")[1].rstrip(".").split(", ")
    assert listed == sorted(ALGORITHMS)  # every registered name, sorted, nothing else
    assert {"PG", "A2C", "PPO", "DQN", "SAC", "TD3", "DDPG", "IMPALA", "BC", "CQL"} <= set(listed)


def test_build_config_imports_callbacks_by_name():
    from tfrl.algorithms.callbacks import DefaultCallbacks

    config = build_config(Experiment(algo="PG", env="CartPole-v1", config={
        "callbacks": "tfrl.algorithms.callbacks:DefaultCallbacks"}))
    assert config.callbacks_class is DefaultCallbacks


# ---------------------------------------------------------------------- progress

def _progress(stop, times, refresh=False, **params):
    """A `tfrl train` ProgressLogger on a fake clock, begun as `fit` begins it."""
    out = io.StringIO()
    progress = ProgressLogger(stop=stop, columns=PROGRESS_COLUMNS, refresh=refresh,
                              stream=out, clock=iter(times).__next__)
    progress.set_params(params)
    progress.on_train_begin()
    return progress, out


def test_progress_lines_rate_and_eta():
    progress, out = _progress({"timesteps_total": 1000, "episode_reward_mean": 475},
                              [0.0, 4.0, 8.0, 9.0])
    progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 200,
                              "episodes_total": 10, "episode_reward_mean": 20.0})
    progress.on_epoch_end(1, {"training_iteration": 2, "timesteps_total": 400,
                              "episodes_total": 15, "episode_reward_mean": 30.25})
    progress.summary("timesteps_total=400 >= 400", "/tmp/ck/checkpoint_000002")
    assert out.getvalue().splitlines() == [
        "iter   1  steps    200  reward   20.00  episodes    10     50 steps/s  "
        "elapsed 0:00:04  ETA 0:00:16",
        "iter   2  steps    400  reward   30.25  episodes    15     50 steps/s  "
        "elapsed 0:00:08  ETA 0:00:12",
        "Finished (timesteps_total=400 >= 400): 2 iterations, 400 env steps, 15 episodes, "
        "episode_reward_mean 30.25, in 0:00:09",
        "Checkpoint: /tmp/ck/checkpoint_000002"]


def test_progress_after_restore_counts_this_run_and_uses_earliest_eta():
    # fit's params: the run starts at iteration 10 after 1000 steps.
    progress, out = _progress({"training_iteration": 12, "timesteps_total": 10_000,
                               "time_total_s": 100}, [0.0, 10.0],
                              initial_epoch=10, start_timesteps=1000)
    progress.on_epoch_end(10, {"training_iteration": 11, "timesteps_total": 1100,
                               "time_total_s": 60.0, "episodes_total": 3,
                               "episode_reward_mean": 1.0})
    # 100 steps in 10 s; iterations: 1 more at 10 s/iteration; time: 40 s left.
    assert out.getvalue().strip().endswith("   10 steps/s  elapsed 0:00:10  ETA 0:00:10")


def test_progress_eta_from_the_fit_budget_without_stop_criteria():
    progress, out = _progress(None, [0.0, 5.0, 6.0], epochs=4)  # fit(iterations=4)
    progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 50})
    assert out.getvalue().endswith("elapsed 0:00:05  ETA 0:00:15\n")
    progress, out = _progress(None, [0.0, 2.0], target_timesteps=1000)  # total_timesteps
    progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 200})
    assert out.getvalue().endswith("  100 steps/s  elapsed 0:00:02  ETA 0:00:08\n")


def test_progress_without_predictable_stop_has_no_eta_and_refreshes():
    progress, out = _progress({"episode_reward_mean": 475}, [0.0, 1.0, 2.0, 3.0],
                              refresh=True)
    progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 10})
    progress.on_epoch_end(1, {"training_iteration": 2, "timesteps_total": 20})
    progress.summary("interrupted")
    text = out.getvalue()
    assert text.startswith("\r\033[Kiter   1  steps     10  reward     nan  episodes   nan"
                           "     10 steps/s  elapsed 0:00:01\r\033[Kiter   2")
    assert "ETA" not in text and "\nFinished (interrupted): 2 iterations" in text
    assert "Checkpoint" not in text


def test_progress_quiet_prints_only_the_summary():
    progress, out = _progress({}, [0.0, 1.0])
    progress.quiet = True
    progress.on_epoch_end(0, {"training_iteration": 1, "timesteps_total": 10})
    progress.on_train_end()
    progress.summary("done", "/c")
    assert out.getvalue().splitlines() == [
        "Finished (done): 1 iterations, 10 env steps, 0 episodes, episode_reward_mean nan, "
        "in 0:00:01", "Checkpoint: /c"]
    assert format_duration(59.6) == "0:01:00" and format_duration(-3) == "0:00:00"


def test_progress_every_nth_iteration_and_the_last_one_at_the_end():
    out = io.StringIO()
    progress = ProgressLogger(every=2, timing=False, stream=out)
    progress.on_train_begin()
    for i in (1, 2, 3):
        progress.on_epoch_end(i - 1, {"training_iteration": float(i),  # fit's float logs
                                      "timesteps_total": 64.0 * i})
    assert out.getvalue() == "iter   2  steps    128  reward     nan\n"
    progress.on_train_end()
    assert out.getvalue().splitlines()[-1] == "iter   3  steps    192  reward     nan"
    with pytest.raises(ValueError, match=r"ProgressLogger\(every=0\): expected a positive"):
        ProgressLogger(every=0)


def test_stop_on_criteria_sets_stop_training_and_the_reason():
    class Model:
        stop_training = False
        last_result = None

    stop = StopOnCriteria({"episode_reward_mean": 475, "evaluation/episode_reward_mean": 400})
    stop.set_model(Model())
    stop.on_train_begin()
    stop.on_epoch_end(0, {"episode_reward_mean": 200.0, "evaluation/episode_reward_mean": 9.0})
    assert stop.reason is None and stop.model.stop_training is False
    stop.model.last_result = {"episode_reward_mean": 200.0,
                              "evaluation": {"episode_reward_mean": 401.5}}  # preferred
    stop.on_epoch_end(1, {})
    assert stop.reason == "evaluation/episode_reward_mean=401.5 >= 400"
    assert stop.model.stop_training is True
    with pytest.raises(TypeError, match=r"stop\['timesteps_total'\]=None is not a number"):
        StopOnCriteria({"timesteps_total": None})
    assert result_value({"a": {"b": 1}}, "a/b") == 1 and stop_reason({}, {"a": 1}) is None
