"""The sweep of `tfrl tune`: the `tune:` section of an experiment file, checked.

An experiment file (a tuned file works as it is) gives the base config; its `tune:`
section (or a separate `--sweep` file holding that section) says what to vary and how:

    tune:
      metric: episode_reward_mean       # a result key ("evaluation/..." works too)
      mode: max                         # or min
      num_samples: 8                    # samples of the space (each grid point this often)
      search: random                    # or optuna (Optuna's TPE through Ray Tune), or
      #   {type: optuna, n_startup_trials: 5, multivariate: true}  (TPESampler's options)
      scheduler: asha                   # fifo (default), asha, median, pbt, or a mapping:
      #   {type: asha, grace_period: 1, reduction_factor: 2, max_t: 100}
      #   {type: median, time_attr: timesteps_total, grace_period: 5000}
      #   {type: pbt, perturbation_interval: 2, mutations: {lr: {loguniform: [1e-5, 1e-3]}}}
      max_concurrent_trials: 2          # default: as many as the CPUs allow
      max_failures: 1                   # retries of a failed trial (default 0)
      callbacks: [mlflow, wandb]        # experiment tracking through Tune's loggers, or
      #   {mlflow: {tracking_uri: "file:./mlruns"}, wandb: {mode: offline, project: p}}
      space:                            # config key (dotted for nested) -> distribution
        lr: {loguniform: [1.0e-5, 1.0e-3]}
        num_sgd_iter: {choice: [5, 10, 20]}
        model.fcnet_hiddens: {grid_search: [[32], [64, 64]]}
        clip_param: {uniform: [0.1, 0.3]}
        sgd_minibatch_size: {randint: [32, 256]}   # upper bound excluded, as in Tune
      variables:                        # searched variables that are not config keys
        n_steps_pow: {randint_inclusive: [5, 12]}  # both bounds included, as Optuna's
      derived:                          # config keys from variables (fixed transforms)
        train_batch_size: {product: [{pow2: n_steps_pow}, 8]}

Variables come first in the order Optuna sees them (RL Zoo's spaces draw for draw: see
docs/guides/sweeps.md); the transforms are `tfrl.utils.search_transforms`'.

`parse_sweep` checks the section and returns a `Sweep`; `sample_configs` draws configs
from it with numpy alone (no Ray), which `tfrl tune --dry_run` checks one by one, so an
unknown key or a bad value is reported before any trial starts. Running the sweep on Ray
Tune is `tfrl.cli.sweep_run`'s.

Example:
    >>> sweep = parse_sweep({"space": {"lr": {"grid_search": [0.1, 0.01]},
    ...                                "model.fcnet_hiddens": {"choice": [[8], [16]]}}})
    >>> [c["lr"] for c in sample_configs(sweep, {"gamma": 0.9}, seed=0)]
    [0.1, 0.01]
"""

import copy
import dataclasses
import difflib
import itertools
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, TextIO, Tuple

import numpy as np
import yaml

from tfrl.algorithms.registry import get_config_class
from tfrl.cli.experiment import CliError, Experiment, check_config
from tfrl.utils.search_transforms import DERIVED_KEY, derive_config, parse_transform
from tfrl.utils.trackers import TRACKERS
from tfrl.utils import yaml_io

#: Distributions of the search space -> what their value is.
DISTRIBUTIONS = {
    "grid_search": "a non-empty list of values (every one is tried)",
    "choice": "a non-empty list of values (one drawn per sample)",
    "uniform": "[low, high] numbers",
    "loguniform": "[low, high] positive numbers",
    "randint": "[low, high] integers (high excluded)",
    "randint_inclusive": "[low, high] integers (both included, Optuna's suggest_int)",
}
SEARCH_ALGORITHMS = ("random", "optuna")
#: Keys of a search mapping, per type (besides `type`): Optuna's TPESampler options.
SEARCH_KEYS = {"random": (), "optuna": ("n_startup_trials", "multivariate")}
SCHEDULERS = ("fifo", "asha", "median", "pbt")
#: Keys of a scheduler mapping, per type (besides `type`).
SCHEDULER_KEYS = {
    "fifo": (),
    "asha": ("grace_period", "reduction_factor", "max_t", "time_attr", "brackets"),
    # Tune's MedianStoppingRule (the closest to Optuna's MedianPruner).
    "median": ("grace_period", "min_samples_required", "min_time_slice", "time_attr",
               "hard_stop"),
    "pbt": ("perturbation_interval", "mutations", "quantile_fraction",
            "resample_probability", "time_attr", "burn_in_period"),
}
SWEEP_KEYS = ("metric", "mode", "num_samples", "search", "scheduler", "space", "variables",
              "derived", "max_concurrent_trials", "max_failures", "seed", "callbacks")


@dataclasses.dataclass
class Sweep:
    """A checked `tune:` section.

    Attributes:
        space: Dotted config key -> `(distribution, argument)`.
        metric: The result key to optimise.
        mode: "max" or "min".
        num_samples: Samples of the space (Tune's `num_samples`).
        search: "random" or "optuna".
        search_options: Optuna's TPESampler options (`n_startup_trials`, `multivariate`).
        scheduler: "fifo", "asha", "median" or "pbt".
        scheduler_options: The scheduler's keyword arguments (PBT's `mutations` as
            dotted key -> `(distribution, argument)`).
        max_concurrent_trials: Trials at once (None: as resources allow).
        max_failures: Retries of a failed trial.
        seed: Seed of the search algorithm's sampling (None: unseeded).
        callbacks: Tracker ("mlflow", "wandb") -> its options (`tfrl.tune.tracking`).
        variables: Searched variables that are not config keys -> `(distribution,
            argument)`, in the order Optuna sees them (before the space's keys).
        derived: Config key (dotted for nested) -> its transform of the variables, as
            written (`tfrl.utils.search_transforms`).
    """

    space: Dict[str, Tuple[str, Any]] = dataclasses.field(default_factory=dict)
    metric: str = "episode_reward_mean"
    mode: str = "max"
    num_samples: int = 1
    search: str = "random"
    search_options: Dict[str, Any] = dataclasses.field(default_factory=dict)
    scheduler: str = "fifo"
    scheduler_options: Dict[str, Any] = dataclasses.field(default_factory=dict)
    max_concurrent_trials: Optional[int] = None
    max_failures: int = 0
    seed: Optional[int] = None
    callbacks: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
    variables: Dict[str, Tuple[str, Any]] = dataclasses.field(default_factory=dict)
    derived: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def derivation(self) -> Optional[Dict[str, Any]]:
        """What a trial's config carries under `DERIVED_KEY` (None without variables)."""
        if not self.variables:
            return None
        return {"variables": list(self.variables), "derived": copy.deepcopy(self.derived)}


def _closest(key: str, valid: Any) -> str:
    prefixed = [v for v in valid if str(v).startswith(str(key))]  # grace -> grace_period
    match = prefixed or difflib.get_close_matches(str(key), list(valid), n=1, cutoff=0.5)
    return f" Did you mean {match[0]!r}?" if match else ""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_distribution(key: str, spec: Any, where: str = "tune.space") -> Tuple[str, Any]:
    """`{"loguniform": [1e-5, 1e-3]}` -> `("loguniform", [1e-5, 1e-3])`, checked.

    A list stands for `choice` (PBT's mutation lists).

    Raises:
        CliError: For anything but one known distribution with a valid argument.
    """
    if isinstance(spec, list) and where.endswith("mutations"):
        spec = {"choice": spec}
    if not isinstance(spec, dict) or len(spec) != 1:
        raise CliError(f"{where}.{key} is {spec!r}; write one distribution, e.g. "
                       f"{key}: {{choice: [1, 2]}} (distributions: "
                       f"{', '.join(DISTRIBUTIONS)}).")
    (name, arg), = spec.items()
    if name not in DISTRIBUTIONS:
        raise CliError(f"{where}.{key} uses the unknown distribution {name!r}."
                       f"{_closest(name, DISTRIBUTIONS)} Use one of "
                       f"{', '.join(DISTRIBUTIONS)}.")
    bad = f"{where}.{key}: {name} takes {DISTRIBUTIONS[name]}; received {arg!r}."
    if name in ("grid_search", "choice"):
        if not isinstance(arg, list) or not arg:
            raise CliError(bad)
    else:
        if not (isinstance(arg, list) and len(arg) == 2 and all(map(_number, arg))):
            raise CliError(bad)
        low, high = arg
        if not low < high:
            raise CliError(f"{where}.{key}: {name} needs low < high; received {arg!r}.")
        if name == "loguniform" and low <= 0:
            raise CliError(f"{where}.{key}: loguniform needs low > 0; received {arg!r}.")
        if name.startswith("randint") and not all(isinstance(v, int) for v in arg):
            raise CliError(bad)
    return name, arg


def _positive_int(doc: Dict[str, Any], key: str, default: Optional[int],
                  minimum: int = 1) -> Optional[int]:
    value = doc.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CliError(f"tune.{key} must be an integer >= {minimum}; received {value!r}.")
    return value


def _parse_scheduler(spec: Any) -> Tuple[str, Dict[str, Any]]:
    if spec is None:
        return "fifo", {}
    options = dict(spec) if isinstance(spec, dict) else {"type": spec}
    kind = options.pop("type", None)
    if kind not in SCHEDULERS:
        raise CliError(f"tune.scheduler type is {kind!r}.{_closest(str(kind), SCHEDULERS)} "
                       f"Use one of {', '.join(SCHEDULERS)} (e.g. scheduler: asha, or "
                       "scheduler: {type: pbt, perturbation_interval: 2, mutations: ...}).")
    for key in options:
        if key not in SCHEDULER_KEYS[kind]:
            valid = ", ".join(SCHEDULER_KEYS[kind]) or "none"
            raise CliError(f"tune.scheduler ({kind}) has the unknown key {key!r}."
                           f"{_closest(key, SCHEDULER_KEYS[kind])} Its keys: {valid}.")
    if kind == "pbt":
        mutations = options.get("mutations")
        if not isinstance(mutations, dict) or not mutations:
            raise CliError("tune.scheduler (pbt) needs mutations: a mapping of config key to "
                           "a distribution or a list, e.g. mutations: {lr: {loguniform: "
                           "[1.0e-5, 1.0e-3]}}.")
        options["mutations"] = {
            key: parse_distribution(key, spec, "tune.scheduler.mutations")
            for key, spec in mutations.items()}
        for key, (name, _) in options["mutations"].items():
            if name == "grid_search":
                raise CliError(f"tune.scheduler.mutations.{key}: PBT cannot mutate by "
                               "grid_search; use choice or a distribution.")
    return kind, options


def _parse_search(spec: Any) -> Tuple[str, Dict[str, Any]]:
    """`random`, `optuna` or `{type: optuna, n_startup_trials: 5, multivariate: true}`."""
    options = dict(spec) if isinstance(spec, dict) else {"type": spec or "random"}
    kind = options.pop("type", None)
    if kind not in SEARCH_ALGORITHMS:
        raise CliError(f"tune.search is {kind!r}.{_closest(str(kind), SEARCH_ALGORITHMS)} "
                       f"Use one of {', '.join(SEARCH_ALGORITHMS)} (or a mapping: search: "
                       "{type: optuna, n_startup_trials: 5, multivariate: true}).")
    for key, value in options.items():
        if key not in SEARCH_KEYS[kind]:
            valid = ", ".join(SEARCH_KEYS[kind]) or "none"
            raise CliError(f"tune.search ({kind}) has the unknown key {key!r}."
                           f"{_closest(key, SEARCH_KEYS[kind])} Its keys: {valid}.")
        if key == "n_startup_trials" and (isinstance(value, bool) or not isinstance(
                value, int) or value < 0):
            raise CliError("tune.search.n_startup_trials (the random trials before TPE "
                           f"models the space) must be an integer >= 0; received {value!r}.")
        if key == "multivariate" and not isinstance(value, bool):
            raise CliError(f"tune.search.multivariate must be true or false; received "
                           f"{value!r}.")
    return kind, options


def _parse_callbacks(spec: Any) -> Dict[str, Dict[str, Any]]:
    """`[mlflow, wandb]` or `{mlflow: {...}, wandb: {...}}` -> tracker -> options."""
    if spec is None:
        return {}
    if isinstance(spec, str):
        spec = [spec]
    if isinstance(spec, list):
        if not all(isinstance(name, str) for name in spec):
            raise CliError(f"tune.callbacks lists trackers by name ({', '.join(TRACKERS)}); "
                           f"received {spec!r}.")
        spec = {name: {} for name in spec}
    if not isinstance(spec, dict):
        raise CliError(f"tune.callbacks must be a list of trackers ({', '.join(TRACKERS)}) "
                       f"or a mapping of tracker to options; received {spec!r}.")
    parsed = {}
    for name, options in spec.items():
        if name not in TRACKERS:
            raise CliError(f"tune.callbacks has the unknown tracker {name!r}."
                           f"{_closest(str(name), TRACKERS)} Use {', '.join(TRACKERS)}.")
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise CliError(f"tune.callbacks.{name} must be a mapping of options; received "
                           f"{options!r}.")
        for key in options:
            if key not in TRACKERS[name]:
                raise CliError(f"tune.callbacks.{name} has the unknown key {key!r}."
                               f"{_closest(str(key), TRACKERS[name])} Its keys: "
                               f"{', '.join(TRACKERS[name])}.")
        parsed[name] = dict(options)
    return parsed


def _parse_derived(variables_doc: Any, derived_doc: Any, space: Dict[str, Tuple[str, Any]]
                   ) -> Tuple[Dict[str, Tuple[str, Any]], Dict[str, Any]]:
    """`tune.variables` (name -> distribution) and `tune.derived` (config key -> transform),
    checked together: every derived key uses declared variables only, every variable is
    used, and no name is both searched in `space` and derived."""
    variables_doc = variables_doc or {}
    derived_doc = derived_doc or {}
    example = ("e.g. variables: {n_steps_pow: {randint_inclusive: [5, 12]}} with derived: "
               "{train_batch_size: {product: [{pow2: n_steps_pow}, 8]}}")
    if not isinstance(variables_doc, dict):
        raise CliError(f"tune.variables must map variable names to distributions, {example}; "
                       f"received {variables_doc!r}.")
    if not isinstance(derived_doc, dict):
        raise CliError(f"tune.derived must map config keys to transforms of tune.variables, "
                       f"{example}; received {derived_doc!r}.")
    if bool(variables_doc) != bool(derived_doc):
        given, missing = ("variables", "derived") if variables_doc else ("derived", "variables")
        raise CliError(f"tune.{given} needs tune.{missing} ({example}); or put config keys "
                       "to search directly in tune.space.")
    variables = {}
    for name, spec in variables_doc.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise CliError(f"tune.variables: the name {name!r} is not an identifier; name a "
                           "variable with letters, digits and underscores (no dots: it is "
                           "not a config key).")
        if name in space:
            raise CliError(f"tune.variables.{name} is also searched in tune.space; keep one.")
        variables[name] = parse_distribution(name, spec, "tune.variables")
        if variables[name][0] == "grid_search":
            raise CliError(f"tune.variables.{name}: a variable is drawn, not a grid; use "
                           "choice (or put a grid on a config key in tune.space).")
    choices = {name: arg for name, (dist, arg) in variables.items() if dist == "choice"}
    derived = {}
    for key, spec in derived_doc.items():
        key = str(key)
        if key in space:
            raise CliError(f"tune.derived.{key} is also searched in tune.space; keep one.")
        if key in variables:
            raise CliError(f"tune.derived.{key}: {key!r} is a variable's name too; name the "
                           "variable differently from the config key it sets.")
        try:
            parse_transform(key, spec, variables, choices)
        except ValueError as e:
            raise CliError(str(e)) from None
        derived[key] = copy.deepcopy(spec)
    used = set()
    for spec in derived.values():
        used.update(_names(spec))
    unused = [name for name in variables if name not in used]
    if unused:
        raise CliError(f"tune.variables.{unused[0]} is used by no key of tune.derived; use it "
                       "there (e.g. lr: learning_rate) or remove it.")
    return variables, derived


def _names(spec: Any) -> List[str]:
    """The variable names a (checked) transform spec uses."""
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, list):
        return [n for item in spec for n in _names(item)]
    if isinstance(spec, dict):
        found = [spec["lookup"]] if "lookup" in spec else []
        return found + [n for k, v in spec.items() if k not in ("lookup", "table")
                        for n in _names(v)]
    return []


def parse_sweep(doc: Any, num_samples: Optional[int] = None) -> Sweep:
    """Checks a `tune:` section; `num_samples` (the flag) overrides the section's.

    Raises:
        CliError: For an unknown key, distribution, search algorithm or scheduler, or a
            bad value; the message names it and what is expected.
    """
    if not isinstance(doc, dict):
        raise CliError(f"The tune: section must be a mapping; it is a {type(doc).__name__}.")
    for key in doc:
        if key not in SWEEP_KEYS:
            raise CliError(f"tune: has the unknown key {key!r}.{_closest(key, SWEEP_KEYS)} "
                           f"Keys: {', '.join(SWEEP_KEYS)}.")
    space_doc = doc.get("space") or {}
    if not isinstance(space_doc, dict):
        raise CliError("tune.space must map config keys to distributions, e.g. space: "
                       f"{{lr: {{loguniform: [1.0e-5, 1.0e-3]}}}}; received {space_doc!r}.")
    space = {str(key): parse_distribution(str(key), spec) for key, spec in space_doc.items()}
    variables, derived = _parse_derived(doc.get("variables"), doc.get("derived"), space)
    mode = doc.get("mode", "max")
    if mode not in ("max", "min"):
        raise CliError(f"tune.mode must be max or min; received {mode!r}.")
    metric = doc.get("metric", "episode_reward_mean")
    if not isinstance(metric, str) or not metric:
        raise CliError(f"tune.metric must be a result key such as episode_reward_mean; "
                       f"received {metric!r}.")
    search, search_options = _parse_search(doc.get("search"))
    if search == "optuna":
        grids = [key for key, (name, _) in {**variables, **space}.items()
                 if name == "grid_search"]
        if grids:
            raise CliError(f"tune.space.{grids[0]}: Optuna samples; it does not take "
                           "grid_search. Use choice (or search: random).")
    scheduler, options = _parse_scheduler(doc.get("scheduler"))
    seed = doc.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise CliError(f"tune.seed must be an integer; received {seed!r}.")
    return Sweep(space=space, metric=metric, mode=mode,
                 num_samples=num_samples or _positive_int(doc, "num_samples", 1) or 1,
                 search=search, search_options=search_options, scheduler=scheduler,
                 scheduler_options=options,
                 max_concurrent_trials=_positive_int(doc, "max_concurrent_trials", None),
                 max_failures=_positive_int(doc, "max_failures", 0, minimum=0) or 0,
                 seed=seed, callbacks=_parse_callbacks(doc.get("callbacks")),
                 variables=variables, derived=derived)


def set_dotted(config: Dict[str, Any], key: str, value: Any) -> None:
    """Sets `config["a"]["b"] = value` for `key="a.b"`, creating (copies of) the dicts on
    the way.

    Raises:
        CliError: If a part of the path holds a non-dict value.
    """
    parts = key.split(".")
    node = config
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = {}
        if not isinstance(child, dict):
            where = ".".join(parts[:i + 1])
            raise CliError(f"tune.space.{key}: the config's {where} is a "
                           f"{type(child).__name__}, not a dict; vary {where} itself.")
        node[part] = child = dict(child)
        node = child
    node[parts[-1]] = value


def get_dotted(config: Dict[str, Any], key: str) -> Any:
    """`config["a"]["b"]` for `key="a.b"` (None if missing)."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _draw(rng: np.random.Generator, name: str, arg: Any) -> Any:
    if name == "choice":
        return copy.deepcopy(arg[int(rng.integers(len(arg)))])
    low, high = arg
    if name == "uniform":
        return float(rng.uniform(low, high))
    if name == "loguniform":
        return float(math.exp(rng.uniform(math.log(low), math.log(high))))
    if name == "randint_inclusive":
        return int(rng.integers(low, high + 1))
    return int(rng.integers(low, high))  # randint


def sample_configs(sweep: Sweep, base: Dict[str, Any], seed: Optional[int] = None
                   ) -> List[Dict[str, Any]]:
    """The configs a sweep would start: every grid point `num_samples` times, the other
    keys drawn (numpy; Tune's own draws differ), each merged into a copy of `base`."""
    rng = np.random.default_rng(sweep.seed if seed is None else seed)
    grid_keys = [k for k, (name, _) in sweep.space.items() if name == "grid_search"]
    grids = list(itertools.product(*(sweep.space[k][1] for k in grid_keys)))
    configs = []
    for _ in range(sweep.num_samples):
        for point in grids:
            config = copy.deepcopy(base)
            for key, value in zip(grid_keys, point):
                set_dotted(config, key, copy.deepcopy(value))
            drawn = {key: _draw(rng, name, arg) for key, (name, arg) in sweep.variables.items()}
            for key, (name, arg) in sweep.space.items():
                if name != "grid_search":
                    set_dotted(config, key, _draw(rng, name, arg))
            configs.append(_derived(sweep, config, drawn))
    return configs


def _derived(sweep: Sweep, config: Dict[str, Any], values: Dict[str, Any]) -> Dict[str, Any]:
    """`config` with the derived keys set from the variables' `values`."""
    if not sweep.variables:
        return config
    try:
        return derive_config({**config, **values, DERIVED_KEY: sweep.derivation()})
    except ValueError as e:  # e.g. a lookup table that misses a drawn value
        raise CliError(f"tune.derived: {e}") from None


def trial_values(sweep: Sweep, config: Dict[str, Any]) -> Dict[str, Any]:
    """A trial's searched values, as Tune records its config: the variables (as drawn),
    then the derived, searched and mutated config keys (computed from the variables)."""
    shown = {name: config.get(name) for name in sweep.variables}
    derived = derive_config(config)
    for key in list(sweep.derived) + list(sweep.space) + list(
            sweep.scheduler_options.get("mutations", {})):
        shown.setdefault(key, get_dotted(derived, key))
    return shown


def mutated_configs(sweep: Sweep, configs: List[Dict[str, Any]], seed: Optional[int] = None
                    ) -> List[Dict[str, Any]]:
    """With PBT: each config with one draw of every mutation (what an exploiting trial
    may run with); else an empty list."""
    if sweep.scheduler != "pbt":
        return []
    rng = np.random.default_rng(sweep.seed if seed is None else seed)
    mutated = []
    for config in configs:
        config = copy.deepcopy(config)
        for key, (name, arg) in sweep.scheduler_options["mutations"].items():
            set_dotted(config, key, _draw(rng, name, arg))
        mutated.append(config)
    return mutated


def load_sweep_file(path: str) -> Dict[str, Any]:
    """`--sweep=FILE`: a YAML file holding a `tune:` section (or just its keys).

    Raises:
        CliError: If the file is missing, not YAML or not a mapping.
    """
    if not os.path.isfile(path):
        raise CliError(f"--sweep={path!r} does not exist; pass a YAML file with the keys of "
                       "a tune: section (space, search, scheduler, ...).")
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml_io.load(f.read())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise CliError(f"--sweep={path!r} is not valid YAML ({' '.join(str(e).split())}); "
                       "fix the syntax.") from None
    if isinstance(doc, dict) and set(doc) == {"tune"}:
        doc = doc["tune"]
    if not isinstance(doc, dict):
        raise CliError(f"--sweep={path!r} holds a {type(doc).__name__}; it must hold a "
                       "mapping (space:, search:, scheduler:, ...).")
    return doc


def _varied(sweep: Sweep, config: Dict[str, Any]) -> Dict[str, Any]:
    keys = list(sweep.derived) + list(sweep.space) + list(
        sweep.scheduler_options.get("mutations", {}))
    return {key: get_dotted(config, key) for key in keys}


def check_sweep(exp: Experiment, sweep: Sweep) -> List[Dict[str, Any]]:
    """Checks every config the sweep would start (and, with PBT, a mutation of each)
    as `tfrl train` checks one, without TensorFlow; returns the varied values of each.

    Raises:
        CliError: For the first config with an unknown key or a bad value, naming the
            sampled values.
    """
    if sweep.variables:
        keys = get_config_class(exp.algo).from_dict({}).to_dict()
        taken = [name for name in sweep.variables if name in keys or name in exp.config]
        if taken:
            raise CliError(f"tune.variables.{taken[0]} is a config key of {exp.algo}; a "
                           "variable is not a config key (its value reaches the config "
                           "through tune.derived): rename it, e.g. "
                           f"{taken[0]}_raw, or search the key in tune.space.")
    configs = sample_configs(sweep, exp.config)
    checked = configs + mutated_configs(sweep, configs)
    for i, config in enumerate(checked):
        try:
            check_config(dataclasses.replace(exp, config=config))
        except CliError as e:
            values = ", ".join(f"{k}={v!r}" for k, v in _varied(sweep, config).items())
            raise CliError(f"Sampled config {i + 1} of {len(checked)} ({values}): {e}") from None
    return [_varied(sweep, config) for config in configs]


def dry_run(exp: Experiment, sweep: Sweep, stream: Optional[TextIO] = None) -> Dict[str, Any]:
    """Checks the sweep (`check_sweep`) and prints it as JSON; returns what it printed."""
    samples = check_sweep(exp, sweep)
    summary = {**exp.to_json(), "metric": sweep.metric, "mode": sweep.mode,
               "search": sweep.search, "search_options": sweep.search_options,
               "scheduler": sweep.scheduler,
               "num_samples": sweep.num_samples, "trials": len(samples),
               "callbacks": sweep.callbacks,
               "space": {k: {name: arg} for k, (name, arg) in sweep.space.items()},
               "variables": {k: {name: arg} for k, (name, arg) in sweep.variables.items()},
               "derived": sweep.derived,
               "sampled": samples}
    (stream or sys.stdout).write(json.dumps(summary, indent=2, default=repr) + "\n")
    return summary
