"""`tfrl tune`'s run: a checked `Sweep` on Ray Tune, a trial table, the best config file.

`run_sweep` starts (or joins) a Ray runtime, runs the trials through `tfrl.tune.Tuner`
with the sweep's search algorithm and scheduler, prints one line per trial (its values
of the varied keys, the metric, the iterations and how it ended) and writes the best
trial's config as an experiment file that `tfrl train --config=FILE` runs as it is.
This module imports Ray Tune; `tfrl.cli.main` imports it only for `tfrl tune`.
"""

import copy
import datetime
import importlib.util
import os
import sys
from typing import Any, Dict, List, Optional, TextIO

import yaml
from ray import tune
from ray.tune.schedulers import (ASHAScheduler, FIFOScheduler, MedianStoppingRule,
                                 PopulationBasedTraining)
from ray.tune.search.basic_variant import BasicVariantGenerator
from ray.tune.search.optuna import OptunaSearch  # imports optuna only when used

import tfrl.tune
from tfrl.backends.ray import init_ray
from tfrl.cli.experiment import CliError, Experiment, resolve_classes
from tfrl.cli.sweep import Sweep, get_dotted, set_dotted, trial_values
from tfrl.tune.tracking import tracking_callbacks
from tfrl.utils.search_transforms import DERIVED_KEY, derive_config

BEST_FILE = "best_config.yaml"


def _domain(name: str, arg: Any) -> Any:
    if name == "grid_search":
        return tune.grid_search(list(arg))
    if name == "choice":
        return tune.choice(list(arg))
    if name == "randint_inclusive":  # Tune's randint excludes high; Optuna sees [low, high]
        return tune.randint(arg[0], arg[1] + 1)
    return {"uniform": tune.uniform, "loguniform": tune.loguniform,
            "randint": tune.randint}[name](*arg)


def param_space(exp: Experiment, sweep: Sweep) -> Dict[str, Any]:
    """The trials' config: the experiment's config (classes named as strings imported)
    with the env, and Tune's distributions at the varied keys.

    With `tune.variables`, their distributions come first, at top-level keys of their
    own names, in the file's order (Tune's OptunaSearch passes a space's distributions
    to Optuna in the config's order, named by their keys), and the derivation under
    `DERIVED_KEY`, which the trial applies (`tfrl.tune.AlgorithmTrainable`)."""
    variables = {name: _domain(dist, arg) for name, (dist, arg) in sweep.variables.items()}
    config = resolve_classes({**copy.deepcopy(exp.config), "env": exp.env})
    for key, (name, arg) in sweep.space.items():
        set_dotted(config, key, _domain(name, arg))
    if sweep.variables:
        config = {**variables, **config, DERIVED_KEY: sweep.derivation()}
    return config


def _nested(flat: Dict[str, Any]) -> Dict[str, Any]:
    nested: Dict[str, Any] = {}
    for key, value in flat.items():
        set_dotted(nested, key, value)
    return nested


def make_scheduler(sweep: Sweep) -> Any:
    """Tune's scheduler for the sweep (metric and mode come from the TuneConfig)."""
    options = dict(sweep.scheduler_options)
    if sweep.scheduler == "asha":
        options.setdefault("time_attr", "training_iteration")
        return ASHAScheduler(**options)
    if sweep.scheduler == "median":
        options.setdefault("time_attr", "training_iteration")
        return MedianStoppingRule(**options)
    if sweep.scheduler == "pbt":
        mutations = _nested({key: _domain(name, arg)
                             for key, (name, arg) in options.pop("mutations").items()})
        options.setdefault("time_attr", "training_iteration")
        return PopulationBasedTraining(hyperparam_mutations=mutations, **options)
    return FIFOScheduler()


def make_search(sweep: Sweep) -> Any:
    """Tune's search algorithm: random sampling (and grids), or Optuna's TPE (with the
    sweep's TPESampler options, if any)."""
    if sweep.search == "optuna":
        if importlib.util.find_spec("optuna") is None:
            raise CliError("tune.search: optuna needs the optuna package: pip install "
                           "'tfrl[tune]'.")
        if not sweep.search_options:
            return OptunaSearch(seed=sweep.seed)
        from optuna.samplers import TPESampler

        return OptunaSearch(sampler=TPESampler(seed=sweep.seed, **sweep.search_options))
    return BasicVariantGenerator(random_state=sweep.seed)


def _values(sweep: Sweep, config: Dict[str, Any]) -> str:
    return " ".join(f"{key}={value!r}" for key, value in trial_values(sweep, config).items())


def trial_table(results: Any, sweep: Sweep, stream: TextIO) -> List[Dict[str, Any]]:
    """Prints one line per trial; returns the rows (trial, status, metric, iterations,
    values of the varied keys)."""
    rows = []
    for result in results:
        metrics = result.metrics or {}
        value = metrics.get(sweep.metric)
        if value is None and "/" in sweep.metric:
            value = get_dotted(metrics, sweep.metric.replace("/", "."))
        rows.append({"trial": metrics.get("trial_id", str(result.path).rsplit("_", 1)[-1]),
                     "status": "ERROR" if result.error else "OK",
                     "metric": value, "iterations": metrics.get("training_iteration", 0),
                     "values": _values(sweep, result.config or {})})
    stream.write(f"{'TRIAL':<14}{'STATUS':<8}{sweep.metric[:24]:>24}{'ITER':>6}  VALUES\n")
    for row in rows:
        shown = "-" if row["metric"] is None else f"{row['metric']:.4g}"
        stream.write(f"{row['trial']:<14}{row['status']:<8}{shown:>24}{row['iterations']:>6}"
                     f"  {row['values']}\n")
    return rows


def best_experiment(exp: Experiment, sweep: Sweep, config: Dict[str, Any]) -> Experiment:
    """`exp` with the varied keys (and PBT's mutated keys) set to a trial's values."""
    best = copy.deepcopy(exp)
    best.sweep = {}
    config = derive_config(config)
    keys = list(sweep.derived) + list(sweep.space) + list(
        sweep.scheduler_options.get("mutations", {}))
    for key in keys:
        set_dotted(best.config, key, copy.deepcopy(get_dotted(config, key)))
    return best


def write_best(best: Experiment, path: str, sweep: Sweep, value: Any) -> str:
    """Writes `best` as a tuned experiment file (algo, env, stop, config); returns its
    path."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    header = (f"# The best trial of `tfrl tune` ({datetime.datetime.now():%Y-%m-%d %H:%M}): "
              f"{sweep.metric} = {value}.\n# Run it: tfrl train --config={path}\n")
    doc = {"algo": best.algo, "env": best.env, "stop": dict(best.stop),
           "config": best.config}
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
    return path


def run_sweep(exp: Experiment, sweep: Sweep, logdir: str, output: Optional[str] = None,
              num_cpus: Optional[int] = None, verbose: int = 1,
              stream: Optional[TextIO] = None) -> Dict[str, Any]:
    """Runs the sweep; prints the trial table; writes the best config file.

    Args:
        exp: The checked experiment (base config, stop criteria).
        sweep: The checked sweep.
        logdir: Tune's experiment directory (the trials' results and checkpoints).
        output: The best config file (default `<logdir>/best_config.yaml`).
        num_cpus: CPUs of a Ray runtime started here (None: all; a running runtime is
            joined as it is).
        verbose: Tune's verbosity (0 silent, 1 status tables, 2 every result).
        stream: Where the trial table goes (default stdout).

    Returns:
        `{"rows": trial rows, "best_config": the best trial's config, "best_file": path,
        "results": Tune's ResultGrid}`.

    Raises:
        CliError: If no trial reported the metric.
    """
    stream = stream or sys.stdout
    logdir = os.path.abspath(os.path.expanduser(logdir))
    init_ray(num_cpus=num_cpus, log_to_driver=verbose > 0, configure_logging=False)
    callbacks = tracking_callbacks(sweep.callbacks, logdir)
    tuner = tfrl.tune.Tuner(
        exp.algo, param_space=param_space(exp, sweep),
        tune_config=tune.TuneConfig(
            metric=sweep.metric, mode=sweep.mode, num_samples=sweep.num_samples,
            search_alg=make_search(sweep), scheduler=make_scheduler(sweep),
            max_concurrent_trials=sweep.max_concurrent_trials, reuse_actors=True),
        run_config=tune.RunConfig(
            name=os.path.basename(logdir), storage_path=os.path.dirname(logdir),
            stop=dict(exp.stop) or None, verbose=verbose, callbacks=callbacks or None,
            # the trackers log each trial's final checkpoint as an artifact
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=bool(callbacks)),
            failure_config=tune.FailureConfig(max_failures=sweep.max_failures)))
    results = tuner.fit()
    rows = trial_table(results, sweep, stream)
    scored = [r for r in rows if r["metric"] is not None]
    if not scored:
        raise CliError(f"No trial reported {sweep.metric!r} (every trial failed, or the "
                       "metric is not a result key); see the errors above and the trial "
                       f"directories in {logdir}.")
    best = results.get_best_result(metric=sweep.metric, mode=sweep.mode)
    value = best.metrics.get(sweep.metric, get_dotted(best.metrics,
                                                      sweep.metric.replace("/", ".")))
    path = write_best(best_experiment(exp, sweep, best.config), output or os.path.join(
        logdir, BEST_FILE), sweep, value)
    stream.write(f"Best trial: {sweep.metric} = {value} "
                 f"({_values(sweep, best.config)}).\n"
                 f"Best config written to {path}; run it with tfrl train --config={path}\n")
    return {"rows": rows, "best_config": best.config, "best_file": path, "results": results}
