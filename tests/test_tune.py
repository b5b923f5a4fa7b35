"""Sweeps on Ray Tune (issue 31): `tfrl tune` and `tfrl.tune`.

The `--dry_run` and sweep-file checks need no Ray; the sweeps themselves (marked `ray`)
share the tests' local Ray runtime of 2 CPUs (conftest's `ray_runtime`) and run tiny PPO CartPole trials (64 steps an
iteration, no remote workers, half a CPU each, two at a time, actors reused between
trials): a grid of 4 reports all 4 and writes the best config; ASHA stops trials early;
PBT (examples/pbt_cartpole.py) copies one trial's weights into another (checked by the
checkpoint's trial directory and a weight fingerprint; 2 synchronous trials by default,
4 asynchronous ones whose best beats the same trials without PBT under `-m learning`); a trial whose env
raises is retried, reported and the sweep still finishes; MLflow and W&B (offline) log
each trial's config, metrics and final checkpoint. The Zoo's sweep file proposes, through
Tune's OptunaSearch, the raw values the Zoo's own suggest calls get from Optuna (no
trials); an Optuna sweep of searched variables runs the configs derived from them.
"""

import importlib.util
import json
import os
import sys

import gymnasium as gym
import numpy as np
import pytest
import yaml

from cli_helpers import run_tfrl
from tfrl.cli.experiment import load_experiment_file
from tfrl.cli.main import main

TINY = {"num_workers": 0, "train_batch_size": 64, "rollout_fragment_length": 8,
        "num_envs_per_worker": 2, "sgd_minibatch_size": 32, "num_sgd_iter": 1,
        "model": {"fcnet_hiddens": [8]}, "seed": 0}


def _write(tmp_path, doc, name="sweep.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _sweep_file(tmp_path, tune, env="CartPole-v1", stop=None, config=None):
    return _write(tmp_path, {"algo": "PPO", "env": env,
                             "stop": stop or {"training_iteration": 1},
                             "config": {**TINY, **(config or {})}, "tune": tune})


def _error_line(capsys, *args):
    from absl import flags

    try:
        with pytest.raises(SystemExit) as info:
            main(["tfrl", "tune", *args])
    finally:
        flags.FLAGS.unparse_flags()
    assert info.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ------------------------------------------------------------------ no Ray needed

def test_dry_run_checks_every_sampled_config(tmp_path):
    path = _sweep_file(tmp_path, {"num_samples": 2, "seed": 0, "space": {
        "lr": {"loguniform": [1.0e-4, 1.0e-2]},
        "model.fcnet_hiddens": {"grid_search": [[8], [16, 16]]},
        "num_sgd_iter": {"randint": [1, 4]}}})
    out = json.loads(run_tfrl("tune", f"--config={path}", "--dry_run"))
    assert out["trials"] == 4 and out["search"] == "random" and out["algo"] == "PPO"
    assert out["callbacks"] == {}
    assert [s["model.fcnet_hiddens"] for s in out["sampled"]] == [[8], [16, 16]] * 2
    assert all(1.0e-4 <= s["lr"] <= 1.0e-2 and s["num_sgd_iter"] in (1, 2, 3)
               for s in out["sampled"])


def test_dry_run_catches_a_bad_key_in_the_space(tmp_path, capsys):
    path = _sweep_file(tmp_path, {"space": {"lrr": {"choice": [0.1, 0.01]}}})
    line = _error_line(capsys, f"--config={path}", "--dry_run")
    assert line.startswith("tfrl tune: error: Sampled config 1 of 1 (lrr=")
    assert "Did you mean 'lr'?" in line


def test_dry_run_catches_a_bad_pbt_mutation_key(tmp_path, capsys):
    path = _sweep_file(tmp_path, {"scheduler": {
        "type": "pbt", "perturbation_interval": 1,
        "mutations": {"clip_parm": [0.1, 0.2]}}})
    line = _error_line(capsys, f"--config={path}", "--dry_run")
    assert "clip_parm" in line and "Did you mean 'clip_param'?" in line


@pytest.mark.parametrize("tune, expected", [
    ({"space": {"lr": {"logunifrom": [1, 2]}}},
     "tune.space.lr uses the unknown distribution 'logunifrom'. Did you mean 'loguniform'?"),
    ({"space": {"lr": {"loguniform": [0, 1]}}}, "loguniform needs low > 0; received [0, 1]"),
    ({"space": {"lr": {"uniform": [2, 1]}}}, "uniform needs low < high; received [2, 1]"),
    ({"space": {"lr": {"choice": []}}}, "choice takes a non-empty list of values"),
    ({"scheduler": "hyperband"}, "tune.scheduler type is 'hyperband'"),
    ({"scheduler": {"type": "asha", "grace": 1}}, "unknown key 'grace'. Did you mean "
                                                  "'grace_period'?"),
    ({"scheduler": {"type": "pbt"}}, "tune.scheduler (pbt) needs mutations"),
    ({"search": "optuna", "space": {"lr": {"grid_search": [1, 2]}}},
     "Optuna samples; it does not take grid_search"),
    ({"search": {"type": "optuna", "n_startup": 5}},
     "tune.search (optuna) has the unknown key 'n_startup'. Did you mean 'n_startup_trials'?"),
    ({"search": {"type": "optuna", "n_startup_trials": -1}},
     "tune.search.n_startup_trials (the random trials before TPE models the space) must be "
     "an integer >= 0; received -1"),
    ({"search": {"type": "random", "multivariate": True}},
     "tune.search (random) has the unknown key 'multivariate'. Its keys: none"),
    ({"search": "tpe"}, "tune.search is 'tpe'."),
    ({"scheduler": {"type": "median", "grace": 5}},
     "tune.scheduler (median) has the unknown key 'grace'. Did you mean 'grace_period'?"),
    ({"metrc": "x"}, "tune: has the unknown key 'metrc'. Did you mean 'metric'?"),
    ({"mode": "best"}, "tune.mode must be max or min; received 'best'"),
    ({"num_samples": 0}, "tune.num_samples must be an integer >= 1; received 0"),
    ({"callbacks": ["mlfow"]},
     "tune.callbacks has the unknown tracker 'mlfow'. Did you mean 'mlflow'?"),
    ({"callbacks": {"wandb": {"projct": "p"}}},
     "tune.callbacks.wandb has the unknown key 'projct'. Did you mean 'project'?"),
    ({"callbacks": {"mlflow": "file:./mlruns"}},
     "tune.callbacks.mlflow must be a mapping of options; received 'file:./mlruns'"),
])
def test_sweep_section_mistakes_are_one_line_errors(tmp_path, capsys, tune, expected):
    line = _error_line(capsys, f"--config={_sweep_file(tmp_path, tune)}", "--dry_run")
    assert expected in line, line


def test_a_tuned_file_with_a_sweep_file(tmp_path):
    """A tuned file as it is, the sweep in --sweep; --num_samples overrides."""
    sweep = _write(tmp_path, {"tune": {"space": {"gamma": {"uniform": [0.9, 0.99]}}}})
    out = json.loads(run_tfrl("tune", "--config=ppo_cartpole", f"--sweep={sweep}",
                              "--num_samples=3", "--dry_run"))
    assert out["trials"] == 3 and out["config"]["num_sgd_iter"] == 20
    assert all(0.9 <= s["gamma"] <= 0.99 for s in out["sampled"])


def test_the_shipped_zoo_sweep_file_checks():
    """examples/sweeps/ppo_cartpole_tpe.yaml (bench/bench_sweep.py's, the Zoo's PPO space):
    all its 16 sampled configs pass `tfrl train`'s checks, with Optuna's TPE options and
    the median stopping rule on env steps."""
    from tfrl.cli.sweep import check_sweep, parse_sweep

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "sweeps", "ppo_cartpole_tpe.yaml")
    exp = load_experiment_file(path)
    sweep = parse_sweep(exp.sweep)
    assert (exp.algo, exp.env, exp.stop) == ("PPO", "CartPole-v1", {"timesteps_total": 20000})
    assert sweep.num_samples == 16 and sweep.max_concurrent_trials == 2
    assert (sweep.search, sweep.search_options) == (
        "optuna", {"n_startup_trials": 5, "multivariate": True})
    assert sweep.metric == "evaluation/episode_reward_mean" and sweep.scheduler == "median"
    assert sweep.scheduler_options == {"time_attr": "timesteps_total", "grace_period": 5000,
                                       "min_samples_required": 5}
    assert list(sweep.variables) == ZOO_PPO_NAMES  # the Zoo's names in its order
    sampled = check_sweep(exp, sweep)
    assert len(sampled) == 16
    # the Zoo's minibatch within the rollout (SB3 takes the whole rollout then)
    assert all(s["sgd_minibatch_size"] <= s["train_batch_size"] for s in sampled)
    assert {len(s) for s in sampled} == {11}  # the Zoo's 11 sampled PPO parameters


def test_tune_needs_stop_criteria(tmp_path, capsys):
    path = _write(tmp_path, {"algo": "PPO", "env": "CartPole-v1", "config": TINY,
                             "tune": {"space": {"lr": {"choice": [0.1]}}}})
    assert "tfrl tune needs stop criteria" in _error_line(capsys, f"--config={path}")


# --------------------------------------------------------------------- on Ray Tune

ray = pytest.importorskip("ray")
pytest.importorskip("ray.tune")

import tfrl.tune  # noqa: E402  (registers tfrl's algorithms with Tune)
from tfrl.tune.registry import register_env  # noqa: E402

# Tune's trial processes cannot import this module: ship its classes by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class FailingCartPole(gym.Wrapper):
    """CartPole whose `step` raises after `fail_after` steps (`fail_after=0`: never)."""

    def __init__(self, env_config):
        super().__init__(gym.make("CartPole-v1"))
        self.fail_after, self.steps = int(env_config.get("fail_after", 0)), 0

    def step(self, action):
        self.steps += 1
        if self.fail_after and self.steps > self.fail_after:
            raise RuntimeError("FailingCartPole: the simulator crashed")
        return self.env.step(action)


def _rows(out):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TRIAL"))
    return [line.split() for line in lines[start + 1:] if line and not line.startswith("Best")]


@pytest.mark.ray
@pytest.mark.slow
def test_a_grid_reports_every_trial_and_writes_the_best(ray_runtime, tmp_path):
    # Two grid points, run side by side (queued trials and reused actors: the ASHA and
    # actor-reuse tests).
    path = _sweep_file(tmp_path, {"max_concurrent_trials": 2,
                                  "space": {"seed": {"grid_search": [0, 3]}}})
    best_file = str(tmp_path / "best.yaml")
    out = run_tfrl("tune", f"--config={path}", f"--logdir={tmp_path / 'sweep'}",
                   f"--output={best_file}", "--quiet")
    rows = _rows(out)
    assert len(rows) == 2 and all(r[1] == "OK" and r[3] == "1" for r in rows), out
    rewards = {int(r[4].split("=")[1]): float(r[2]) for r in rows}
    assert sorted(rewards) == [0, 3]
    assert len(set(rewards.values())) == 2, rewards  # the seeds differ, so "best" means one
    best = load_experiment_file(best_file)
    assert rewards[best.config["seed"]] == max(rewards.values())
    assert best.algo == "PPO" and best.env == "CartPole-v1" and not best.sweep
    assert {k: v for k, v in best.config.items() if k != "seed"} == \
        {k: v for k, v in TINY.items() if k != "seed"}
    run_tfrl("train", f"--config={best_file}", "--dry_run")  # a ready tuned file


@pytest.mark.ray
@pytest.mark.slow
def test_optuna_trials_run_the_configs_derived_from_their_variables(ray_runtime, tmp_path):
    """tune.variables on Optuna: each trial builds its algorithm from the derived keys
    (a variable left in the config would be refused as an unknown key), the table shows
    the variables and the derived keys, the best file holds the derived keys only."""
    path = _sweep_file(tmp_path, {
        "max_concurrent_trials": 2, "num_samples": 2, "search": "optuna", "seed": 0,
        "variables": {"n_steps_pow": {"randint_inclusive": [4, 5]},
                      "width": {"choice": ["narrow", "wide"]}},
        "derived": {"train_batch_size": {"product": [{"pow2": "n_steps_pow"}, 2]},
                    "sgd_minibatch_size": {"pow2": "n_steps_pow"},
                    "model.fcnet_hiddens": {"lookup": "width",
                                            "table": {"narrow": [4], "wide": [8]}}}},
        config={"rollout_fragment_length": "auto"})
    best_file = str(tmp_path / "best.yaml")
    out = run_tfrl("tune", f"--config={path}", f"--logdir={tmp_path / 'derived'}",
                   f"--output={best_file}", "--quiet")
    rows = _rows(out)
    assert len(rows) == 2 and all(r[1] == "OK" and r[3] == "1" for r in rows), out
    for row in rows:
        values = dict(v.split("=", 1) for v in row[4:])
        power = int(values["n_steps_pow"])
        assert int(values["train_batch_size"]) == 2 ** power * 2
        assert values["model.fcnet_hiddens"] == {"'narrow'": "[4]", "'wide'": "[8]"}[
            values["width"]]
    for params in (tmp_path / "derived").glob("*/params.json"):
        trial = json.loads(params.read_text())
        assert trial["_tfrl_derived"]["variables"] == ["n_steps_pow", "width"]
    best = load_experiment_file(best_file)
    assert best.config["train_batch_size"] == 2 * best.config["sgd_minibatch_size"]
    assert "n_steps_pow" not in best.config and "width" not in best.config
    run_tfrl("train", f"--config={best_file}", "--dry_run")  # a ready tuned file


@pytest.mark.ray
@pytest.mark.slow
def test_asha_stops_trials_early(ray_runtime, tmp_path):
    """8 trials, ASHA with rungs at iterations 1 and 2 (reduction factor 2): a trial
    continues past a rung only if its return is in the top half of those recorded there
    so far, so about half of them stop early, and none of those stopped is better at its
    rung than every trial that went on."""
    path = _sweep_file(tmp_path, {
        "max_concurrent_trials": 2, "space": {"seed": {"grid_search": list(range(8))}},
        "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 2, "max_t": 3}},
        stop={"training_iteration": 3})
    out = run_tfrl("tune", f"--config={path}", f"--logdir={tmp_path / 'asha'}", "--quiet")
    iterations = sorted(int(r[3]) for r in _rows(out))
    assert len(iterations) == 8 and iterations[-1] == 3, out
    assert sum(i < 3 for i in iterations) >= 3, out


def _load_example(name):
    """examples/<name>.py as a module, its classes shipped to Tune's trial processes by
    value."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"tfrl_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    ray.cloudpickle.register_pickle_by_value(module)
    return module


ITERATIONS = 2  # of the PBT test


@pytest.mark.ray
@pytest.mark.slow
def test_pbt_of_two_trials_exploits_the_other_trials_checkpoint(ray_runtime, tmp_path):
    """examples/pbt_cartpole.py's population at a tiny budget: the trial in the bottom half
    loads the checkpoint of the other trial (its path is in that trial's directory) and
    its weights are then ones that only the other trial reported.

    Two trials and two iterations: one synchronous perturbation, after iteration 1, at
    which the bottom trial (of two, quantile 0.5) always exploits the top one. Under
    synchronous PBT every trial pauses at every perturbation and Tune starts a new actor
    for it (it caches none once the search is over), each paying TensorFlow's start-up:
    4 trials x 3 iterations started 12 actors, this starts 4."""
    example = _load_example("pbt_cartpole")
    # A time budget: a stalled synchronous PBT (seen once, in a loaded full run) ends as
    # a failure of the iteration check below, not as a run that never returns.
    out = example.run_pbt(num_trials=2, iterations=ITERATIONS, batch=64,
                          perturbation_interval=1, synch=True,
                          storage_path=str(tmp_path), time_budget_s=600)
    _check_pbt_run(example, out, num_trials=2, iterations=2)


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.learning_long
def test_pbt_of_four_trials_exploits_checkpoints_and_beats_the_run_without_pbt(
        ray_runtime, tmp_path):
    """examples/pbt_cartpole.py's population: four PPO trials started with a learning
    rate too small to learn (1e-5), PBT every 2 iterations (asynchronous, quantile 0.5),
    explore drawing a new lr.

    - Exploits: a trial in the bottom half loads another trial's checkpoint (its path is
      in that trial's directory), and its weights are then ones that only the other trial
      reported, never its own.
    - The population's best final return beats the same four trials without PBT (same
      configs and seeds, trained in this process) by at least 25 %. Asynchronous PBT's
      choices depend on the order reports arrive in; the margin does not: alone, the four
      trials end at 21-24 (seeds 0-3), a trial with a drawn lr from iteration 3 on ends
      near 45-60."""
    example = _load_example("pbt_cartpole")
    # A time budget: a stalled PBT ends as a failure of the iteration check below, not as
    # a run that never returns.
    out = example.run_pbt(num_trials=4, iterations=8, batch=256,
                          storage_path=str(tmp_path), time_budget_s=900)
    _check_pbt_run(example, out, num_trials=4, iterations=8)
    results = out["results"]
    best = out["best"].metrics["episode_reward_mean"]
    assert any(r.config["lr"] != example.START_LR for r in results)

    without = example.run_without_pbt(num_trials=4, iterations=8, batch=256)
    assert sorted(without) == [0, 1, 2, 3]
    assert best >= 1.25 * max(without.values()), (best, without)


def _check_pbt_run(example, out, num_trials, iterations):
    """Every trial ran `iterations`; at least one exploit, whose weights are the source
    trial's as it reported them after the iteration it saved at, never the exploiting
    trial's own; `best` is the best final return."""
    results = out["results"]
    assert len(results) == num_trials and not results.errors
    assert all(r.metrics["training_iteration"] == iterations for r in results)
    # every report reached the driver's log, a trial's latest one last (under PBT a
    # trial's metrics_dataframe may have lost rows: the log is its whole history)
    reports = out["reports"]
    assert sorted(reports) == sorted(r.metrics["trial"] for r in results)
    for r in results:
        assert reports[r.metrics["trial"]][-1]["weights_fingerprint"] == r.metrics[
            "weights_fingerprint"]
        assert len(reports[r.metrics["trial"]]) >= iterations
    assert out["exploits"], {t: [row.get("restored_from") for row in rows]
                             for t, rows in reports.items()}
    for exploit in out["exploits"]:
        assert exploit["source"] != exploit["trial"] and exploit["source"] in reports
        assert exploit["weights_match"], exploit
        restored = exploit["restored_fingerprint"]
        # the weights the source reported after the iteration it saved at, never the
        # exploiting trial's own
        source = reports[exploit["source"]]
        reported = [row["weights_fingerprint"] for row in source
                    if row["training_iteration"] == exploit["source_iteration"]]
        assert example.fingerprint_in(restored, reported), (exploit, source)
        own = [row["weights_fingerprint"] for row in reports[exploit["trial"]]]
        assert not example.fingerprint_in(restored, own), (exploit, own)
    assert out["best"].metrics["episode_reward_mean"] == max(
        r.metrics["episode_reward_mean"] for r in results)


register_env("failing_cartpole", FailingCartPole)


@pytest.mark.ray
@pytest.mark.slow
def test_a_failing_trial_is_retried_and_reported(ray_runtime, tmp_path):
    path = _sweep_file(tmp_path, {"max_failures": 1, "max_concurrent_trials": 2, "space": {
        "env_config.fail_after": {"grid_search": [0, 20]}}}, env="failing_cartpole")
    out = run_tfrl("tune", f"--config={path}", f"--logdir={tmp_path / 'fail'}", "--quiet")
    rows = {r[4]: r for r in _rows(out)}
    assert rows["env_config.fail_after=0"][1] == "OK"
    assert rows["env_config.fail_after=20"][1] == "ERROR"
    assert "Best config written to" in out
    errors = [f for f, _, files in os.walk(tmp_path / "fail") if "error.txt" in files]
    assert len(errors) == 1
    with open(os.path.join(errors[0], "error.txt")) as f:
        text = f.read()
    assert "the simulator crashed" in text
    # max_failures=1: the first failure is retried, the second one is reported
    assert "Failure # 1 " in text and "Failure # 2 " in text, text


def test_sweep_objects_for_ray_tune():
    """No trials: the sweep's Tune objects (Optuna's searcher, PBT's nested mutations,
    the param space with Tune's distributions at dotted keys)."""
    from ray.tune.schedulers import MedianStoppingRule, PopulationBasedTraining
    from ray.tune.search.optuna import OptunaSearch
    from ray.tune.search.sample import Float

    from tfrl.cli.experiment import Experiment
    from tfrl.cli.sweep import parse_sweep
    from tfrl.cli.sweep_run import make_scheduler, make_search, param_space

    sweep = parse_sweep({"search": "optuna", "seed": 3, "space": {
        "lr": {"loguniform": [1e-4, 1e-2]}, "model.fcnet_hiddens": {"choice": [[8], [16]]}},
        "scheduler": {"type": "pbt", "perturbation_interval": 2,
                      "mutations": {"model.vf_share_layers": [True, False]}}})
    assert isinstance(make_search(sweep), OptunaSearch)
    tpe = make_search(parse_sweep({"search": {"type": "optuna", "n_startup_trials": 4,
                                              "multivariate": True}, "seed": 1}))
    assert tpe._sampler._n_startup_trials == 4 and tpe._sampler._multivariate
    median = make_scheduler(parse_sweep({"scheduler": {
        "type": "median", "time_attr": "timesteps_total", "grace_period": 500}}))
    assert isinstance(median, MedianStoppingRule)
    assert (median._time_attr, median._grace_period) == ("timesteps_total", 500)
    pbt = make_scheduler(sweep)
    assert isinstance(pbt, PopulationBasedTraining)
    assert pbt._hyperparam_mutations["model"]["vf_share_layers"].categories == [True, False]
    space = param_space(Experiment(algo="PPO", env="CartPole-v1", config=dict(TINY)), sweep)
    assert isinstance(space["lr"], Float) and space["env"] == "CartPole-v1"
    assert space["model"]["fcnet_hiddens"].categories == [[8], [16]]
    assert TINY["model"] == {"fcnet_hiddens": [8]}  # the base config is not changed


ZOO_PPO_NAMES = ["batch_size_pow", "n_steps_pow", "one_minus_gamma", "one_minus_gae_lambda",
                 "learning_rate", "ent_coef", "clip_range", "n_epochs", "max_grad_norm",
                 "net_arch", "activation_fn"]


def _zoo_ppo_suggestions(trial):
    """rl_zoo3 2.9.2's `sample_ppo_params` suggest calls, in its order (replicated: the
    Zoo is not a test dependency)."""
    trial.suggest_int("batch_size_pow", 2, 10)
    trial.suggest_int("n_steps_pow", 5, 12)
    trial.suggest_float("one_minus_gamma", 0.0001, 0.03, log=True)
    trial.suggest_float("one_minus_gae_lambda", 0.0001, 0.1, log=True)
    trial.suggest_float("learning_rate", 1e-5, 0.002, log=True)
    trial.suggest_float("ent_coef", 0.00000001, 0.1, log=True)
    trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4])
    trial.suggest_categorical("n_epochs", [1, 5, 10, 20])
    trial.suggest_float("max_grad_norm", 0.3, 2)
    trial.suggest_categorical("net_arch", ["tiny", "small", "medium"])
    trial.suggest_categorical("activation_fn", ["tanh", "relu"])


def test_the_zoo_sweep_proposes_the_zoos_values():
    """examples/sweeps/ppo_cartpole_tpe.yaml through Tune's OptunaSearch (as `tfrl tune`
    builds it) against an Optuna study with the Zoo's sampler and suggest calls, same
    seed, the same objective values told in the same order: the same names and
    distributions in the same order reach Optuna, so the 5 start-up trials and the TPE
    trials after them propose identical raw values. No trials run."""
    import optuna

    from tfrl.cli.sweep import parse_sweep
    from tfrl.cli.sweep_run import make_search, param_space

    exp = load_experiment_file(os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "examples", "sweeps", "ppo_cartpole_tpe.yaml"))
    sweep = parse_sweep({**exp.sweep, "seed": 7})
    search = make_search(sweep)
    space = param_space(exp, sweep)
    assert space["_tfrl_derived"]["derived"]["gamma"] == {"one_minus": "one_minus_gamma"}
    search.set_search_properties(sweep.metric, sweep.mode, space)
    zoo = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
        n_startup_trials=5, seed=7, multivariate=True))
    assert list(search._space) == ZOO_PPO_NAMES
    assert search._space["batch_size_pow"] == optuna.distributions.IntDistribution(2, 10)
    for i in range(7):  # 5 random start-up trials, then 2 of TPE
        value = float(i * 37 % 11)
        config = search.suggest(str(i))
        trial = zoo.ask()
        _zoo_ppo_suggestions(trial)
        assert {name: config[name] for name in ZOO_PPO_NAMES} == trial.params, i
        search.on_trial_complete(str(i), {sweep.metric: value})
        zoo.tell(trial, value)


def test_a_reused_actor_starts_the_next_trial_from_scratch():
    """Tune's `reuse_actors` (what `tfrl tune` uses) hands a finished trial's trainable
    the next trial's config through `reset`: the next trial runs with its own config,
    counts from zero, and starts from the weights a fresh trainable of that config and
    seed builds (not the previous trial's, not another draw of the initializer)."""
    from tfrl.tune.trainable import get_trainable

    cls = get_trainable("ppo")
    second = {**TINY, "env": "CartPole-v1", "lr": 0.01, "seed": 1,
              "model": {"fcnet_hiddens": [16]}}
    fresh = cls(config=second)
    expected = fresh.algorithm.get_policy().get_weights()
    fresh.stop()
    trainable = cls(config={**TINY, "env": "CartPole-v1"})
    try:
        trainable.train()
        assert trainable.train()["timesteps_total"] == 128
        assert trainable.reset(second) is True
        assert trainable.algorithm.config["lr"] == 0.01
        weights = trainable.algorithm.get_policy().get_weights()
        assert [w.shape for w in weights] == [w.shape for w in expected]
        assert [w.shape for w in weights][0] == (4, 16)
        for got, want in zip(weights, expected):
            np.testing.assert_array_equal(got, want)
        result = trainable.train()
        assert (result["training_iteration"], result["timesteps_total"]) == (1, 64)
    finally:
        trainable.stop()


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_logs_to_mlflow_and_wandb_offline(ray_runtime, tmp_path, monkeypatch):
    """`callbacks:` logs every trial through Ray Tune's loggers: MLflow's file store and
    W&B's offline run directories hold each trial's config, its metrics per iteration and
    its final checkpoint."""
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("wandb")
    from tracking_helpers import checkpoint_files, wandb_offline_runs

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3's file store switch
    uri = f"file:{tmp_path / 'mlruns'}"
    path = _sweep_file(tmp_path, {"max_concurrent_trials": 2,
                                  "space": {"seed": {"grid_search": [0, 1]}},
                                  "callbacks": {"mlflow": {"tracking_uri": uri},
                                                "wandb": {"mode": "offline"}}},
                       stop={"training_iteration": 2})
    out = run_tfrl("tune", f"--config={path}", f"--logdir={tmp_path / 'tracked'}", "--quiet")
    assert [r[1] for r in _rows(out)] == ["OK", "OK"], out
    trial_checkpoints = sorted(str(p) for p in (tmp_path / "tracked").glob(
        "PPOTrainable_*/checkpoint_*"))  # Tune's, each holding tfrl's checkpoint_NNNNNN
    assert len(trial_checkpoints) == 2, trial_checkpoints  # checkpoint_at_end
    saved = checkpoint_files(trial_checkpoints[0])  # checkpoint_NNNNNN/{state.json, ...}
    assert {os.path.basename(f) for f in saved} >= {"state.json", "arrays.npz"}

    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("tracked")  # the sweep's directory name
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    assert sorted(r.data.params["seed"] for r in runs) == ["0", "1"]
    for run in runs:
        rewards = client.get_metric_history(run.info.run_id, "episode_reward_mean")
        assert [m.step for m in rewards] == [64, 128]  # Tune steps by timesteps_total
        (inner,) = client.list_artifacts(run.info.run_id, "checkpoint")
        files = client.list_artifacts(run.info.run_id, inner.path)
        assert sorted(os.path.relpath(f.path, "checkpoint") for f in files) == saved

    wandb_runs = wandb_offline_runs(str(tmp_path / "tracked"))
    assert len(wandb_runs) == 2
    assert sorted(r["config"].get("seed") for r in wandb_runs) == [0, 1], [
        (r["path"], sorted(r["config"])[:20], len(r["history"])) for r in wandb_runs]
    for run in wandb_runs:
        rows = [row for row in run["history"] if "episode_reward_mean" in row]
        assert [row["training_iteration"] for row in rows] == [1, 2]
        (artifact_files,) = run["artifacts"].values()
        assert artifact_files == saved
