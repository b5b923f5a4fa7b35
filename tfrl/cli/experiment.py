"""Experiments for the CLI: files, `key=value` overrides and stop criteria → a config.

An `Experiment` is what `tfrl train` runs: an algorithm name, an env, a plain config
dict (only YAML/JSON values, so it can be written next to the checkpoints and read back
by `tfrl evaluate` / `tfrl export`) and stop criteria. `load_experiment_file` reads the
file format described in `tfrl.cli.main`; `apply_overrides` applies
`--config_override` strings; `check_config` checks an experiment's config without
TensorFlow and `build_config` turns it into the algorithm's config object, reporting
every user mistake as a one-line `CliError`; `tuned_for` finds the tuned files of an
algorithm and env.

Example:
    >>> apply_overrides({"model": {"fcnet_hiddens": [32]}},
    ...                 ["lr=1e-3", "model.fcnet_hiddens=[64, 64]"])
    {'model': {'fcnet_hiddens': [64, 64]}, 'lr': 0.001}
    >>> parse_stop("timesteps_total=100000,episode_reward_mean=475")
    {'timesteps_total': 100000, 'episode_reward_mean': 475}
"""

import copy
import dataclasses
import difflib
import importlib
import json
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import gymnasium as gym
import yaml

from tfrl import tuned
from tfrl.algorithms.registry import ALGORITHMS, canonical_name, get_config_class
from tfrl.env.registry import _ENV_CREATORS, TF_ENV_PREFIX, get_env_creator
from tfrl.models.model_defaults import check_model_keys
from tfrl.utils import yaml_io
from tfrl.utils.yaml_io import yaml_value

# Top-level keys of an experiment file (`run` is RLlib's name for `algo`; `tune` is the
# sweep section that `tfrl tune` reads, see tfrl.cli.sweep).
FILE_KEYS = ("algo", "run", "env", "stop", "config", "tune")
# Result keys `--stop` accepts (a key with "/" addresses a nested result, e.g.
# "evaluation/episode_reward_mean").
STOP_KEYS = ("timesteps_total", "episode_reward_mean", "episode_reward_min",
             "episode_reward_max", "episode_len_mean", "training_iteration", "time_total_s",
             "episodes_total", "agent_timesteps_total", "num_env_steps_sampled",
             "num_env_steps_trained")


class CliError(Exception):
    """A user mistake on the command line or in a file; the message says how to fix it."""


@dataclasses.dataclass
class Experiment:
    """What `tfrl train` runs.

    Attributes:
        algo: Registered algorithm name ("PPO", ...), or None if not given yet.
        env: Env name (registered or gymnasium id), or None.
        config: The algorithm config keys the user set (plain YAML/JSON values).
        stop: Result key -> threshold; training stops when any is reached.
        config_file: The experiment file it was read from (None: flags only); recorded,
            not read back.
        sweep: The file's `tune:` section (search space, search algorithm, scheduler),
            which only `tfrl tune` reads; empty if there is none.
    """

    algo: Optional[str] = None
    env: Optional[str] = None
    config: Dict[str, Any] = dataclasses.field(default_factory=dict)
    stop: Dict[str, float] = dataclasses.field(default_factory=dict)
    config_file: Optional[str] = None
    sweep: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        """The experiment as a JSON-serializable dict (the file format, plus
        `config_file` when there is one)."""
        out = {"algo": self.algo, "env": self.env, "stop": dict(self.stop),
               "config": copy.deepcopy(self.config)}
        if self.config_file:
            out["config_file"] = self.config_file
        return out


def _closest(key: str, valid: Iterable[str]) -> str:
    match = difflib.get_close_matches(str(key), list(valid), n=1, cutoff=0.5)
    return f" Did you mean {match[0]!r}?" if match else ""


def load_experiment_file(path: str) -> Experiment:
    """Reads a YAML (`.yaml`, `.yml`) or JSON (`.json`) experiment file.

    The file holds a mapping with the keys `algo` (or `run`), `env`, `stop`, `config`
    (all optional), or RLlib's tuned-example form: one experiment name mapping to such a
    mapping.

    Raises:
        CliError: If the file is missing, unreadable, not UTF-8, unparsable or has unknown
            top-level keys.
    """
    if not os.path.isfile(path):
        stem = os.path.splitext(os.path.basename(path))[0]
        if tuned.path(stem):
            raise CliError(f"Config file {path!r} does not exist. A tuned file of that name "
                           f"ships with tfrl: pass --config={stem} (tfrl list shows them).")
        raise CliError(f"Config file {path!r} does not exist. Pass --config=<path to a "
                       ".yaml or .json file> or the name of a tuned file (tfrl list shows "
                       "them), e.g. --config=ppo_cartpole.")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise CliError(f"Config file {path!r} is not UTF-8 text (byte 0x{e.object[e.start]:02x} "
                       f"at offset {e.start}); pass a YAML or JSON file saved as UTF-8.") from None
    except OSError as e:
        raise CliError(f"Config file {path!r} cannot be read ({e.strerror}); check its "
                       "permissions.") from None
    try:
        doc = json.loads(text) if path.endswith(".json") else yaml_io.load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as e:
        reason = " ".join(str(e).split())
        raise CliError(f"Config file {path!r} is not valid "
                       f"{'JSON' if path.endswith('.json') else 'YAML'} ({reason}); fix the "
                       "syntax.") from None
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise CliError(f"Config file {path!r} holds a {type(doc).__name__}; it must hold a "
                       "mapping with the keys algo, env, stop, config.")
    if (len(doc) == 1 and not set(doc) & set(FILE_KEYS)
            and isinstance(next(iter(doc.values())), dict)):
        doc = next(iter(doc.values()))  # RLlib's form: {experiment_name: {run: ..., ...}}
    for key in doc:
        if key == "config_file":  # written into experiment.json; not an input
            continue
        if key not in FILE_KEYS:
            raise CliError(f"Config file {path!r} has the unknown top-level key {key!r}."
                           f"{_closest(key, FILE_KEYS)} Top-level keys are algo, env, stop, "
                           "config (algorithm settings go under config:) and tune (the "
                           "sweep of tfrl tune).")
    if "algo" in doc and "run" in doc and doc["algo"] != doc["run"]:
        raise CliError(f"Config file {path!r} sets both algo ({doc['algo']!r}) and run "
                       f"({doc['run']!r}); keep one.")
    config = doc.get("config") or {}
    stop = doc.get("stop") or {}
    sweep = doc.get("tune") or {}
    for name, value in (("config", config), ("stop", stop), ("tune", sweep)):
        if not isinstance(value, dict):
            raise CliError(f"In config file {path!r}, {name} must be a mapping; it is a "
                           f"{type(value).__name__}.")
    return Experiment(algo=doc.get("algo", doc.get("run")), env=doc.get("env"),
                      config=dict(config), stop=_check_stop(dict(stop), f"file {path!r}"),
                      sweep=dict(sweep))


def parse_override(text: str) -> Tuple[List[str], Any]:
    """`"model.fcnet_hiddens=[64,64]"` -> `(["model", "fcnet_hiddens"], [64, 64])`.

    Raises:
        CliError: If `text` has no `=` or an empty key.
    """
    key, sep, value = text.partition("=")
    path = key.strip().split(".")
    if not sep or not all(path):
        raise CliError(f"--config_override={text!r} is not KEY=VALUE; write e.g. "
                       "--config_override=lr=0.001 or "
                       "--config_override=model.fcnet_hiddens=[64,64].")
    try:
        return path, yaml_value(value)
    except yaml.YAMLError as e:
        raise CliError(f"--config_override={text!r}: the value is not a YAML value "
                       f"({' '.join(str(e).split())}); quote strings, write lists as "
                       "[1,2] and dicts as {a: 1}.") from None


def apply_overrides(config: Dict[str, Any], overrides: Sequence[str]) -> Dict[str, Any]:
    """A copy of `config` with each `KEY=VALUE` override applied in order (dotted keys
    set entries of nested dicts, creating them).

    Raises:
        CliError: For a malformed override or a dotted key through a non-dict value.
    """
    config = copy.deepcopy(config)
    for text in overrides:
        path, value = parse_override(text)
        node = config
        for i, part in enumerate(path[:-1]):
            node = node.setdefault(part, {})
            if node is None:
                node = {}
            if not isinstance(node, dict):
                where = ".".join(path[:i + 1])
                raise CliError(f"--config_override={text!r}: {where} is a "
                               f"{type(node).__name__}, not a dict, so it has no key "
                               f"{path[i + 1]!r}; set {where}=<value> instead.")
        node[path[-1]] = value
    return config


def _check_stop(stop: Dict[str, Any], where: str) -> Dict[str, Any]:
    for key, value in stop.items():
        if key not in STOP_KEYS and "/" not in key:
            raise CliError(f"Unknown stop criterion {key!r} in {where}.{_closest(key, STOP_KEYS)}"
                           f" Use result keys such as {', '.join(STOP_KEYS[:3])}, "
                           "training_iteration, time_total_s.")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CliError(f"Stop criterion {key}={value!r} in {where} is not a number; write "
                           f"e.g. {key}=100000.")
    return stop


def parse_stop(text: str) -> Dict[str, Any]:
    """`"timesteps_total=1e5,training_iteration=10"` -> `{key: number}`.

    Raises:
        CliError: For an item without `=`, an unknown key or a non-numeric value.
    """
    stop = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--stop item {item!r} is not KEY=NUMBER; write e.g. "
                           "--stop=timesteps_total=100000,episode_reward_mean=475.")
        stop[key.strip()] = yaml_value(value)
    return _check_stop(stop, "--stop")


def resolve_experiment(config_file: Optional[str] = None, algo: Optional[str] = None,
                       env: Optional[str] = None, settings: Optional[Dict[str, Any]] = None,
                       overrides: Sequence[str] = (), stop: Optional[str] = None,
                       base: Optional[Experiment] = None) -> Experiment:
    """Combines a file (or `base`) with flags; later sources win.

    Order: `base`, the file, `algo`/`env` flags, `settings` (flags such as
    `--num_workers`, None values skipped), `overrides`, then `stop` (merged into the
    file's stop criteria).
    """
    exp = copy.deepcopy(base) if base is not None else Experiment()
    if config_file:
        config_file = find_config_file(config_file)
        exp.config_file = config_file
        loaded = load_experiment_file(config_file)
        exp.algo = loaded.algo or exp.algo
        exp.env = loaded.env or exp.env
        exp.config.update(loaded.config)
        exp.stop.update(loaded.stop)
        exp.sweep.update(loaded.sweep)
    exp.algo = algo or exp.algo
    exp.config.update({k: v for k, v in (settings or {}).items() if v is not None})
    exp.config = apply_overrides(exp.config, overrides)
    exp.env = env or exp.env or exp.config.get("env")
    exp.config.pop("env", None)
    if stop:
        exp.stop.update(parse_stop(stop))
    return exp


def find_config_file(name: str) -> str:
    """`--config`'s file: `name` if it is a file, else the tuned file of that name
    (`ppo_cartpole`), else `name` (which `load_experiment_file` reports as missing)."""
    if os.path.isfile(name):
        return name
    return tuned.path(name) or name


def tuned_for(algo: str, env: str) -> List[Tuple[str, str]]:
    """The tuned files for `algo` (any case) on `env`, as (name, path): the shortest
    name first (`dqn_cartpole` before `dqn_cartpole_zoo`)."""
    algo = canonical_name(algo)
    found = []
    for name in tuned.names():
        path = tuned.path(name) or name  # a listed name has a path
        exp = load_experiment_file(path)
        if exp.algo == algo and exp.env == env:
            found.append((name, path))
    return sorted(found, key=lambda item: (len(item[0]), item[0]))


def _import(spec: str, what: str) -> Any:
    module_name, sep, name = spec.rpartition(":") if ":" in spec else spec.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise CliError(f"{what}={spec!r} cannot be imported ({type(e).__name__}: {e}); give "
                       "'package.module:ClassName' of a class in the current directory or "
                       "on PYTHONPATH.") from None


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text.split(" Valid keys are:")[0]


def check_names(exp: Experiment) -> None:
    """Checks that `exp` names a registered algorithm and a known env (cheap: imports
    neither TensorFlow nor the algorithm; a `module:EnvId` env imports that module), and
    sets `exp.algo` to the registered spelling of a name given in any case.

    Raises:
        CliError: For a missing or unknown algorithm or env (naming the extra to install
            for a suite whose package is missing).
    """
    if not exp.algo:
        raise CliError("No algorithm given; pass --algo=PPO (or PG, A2C) or set algo: in "
                       "the --config file.")
    exp.algo = canonical_name(exp.algo)
    if exp.algo not in ALGORITHMS:
        raise CliError(f"Unknown algorithm {exp.algo!r}.{_closest(exp.algo, ALGORITHMS)} "
                       f"Pass --algo with one of {', '.join(sorted(ALGORITHMS))}.")
    if not exp.env:
        raise CliError("No env given; pass --env=CartPole-v1 (a gymnasium id or a name "
                       "registered with tfrl.env.registry.register_env) or set env: in the "
                       "--config file.")
    if isinstance(exp.env, str) and ":" in exp.env and exp.env not in _ENV_CREATORS:
        _check_module_env(exp.env)
    if isinstance(exp.env, str) and exp.env.startswith(TF_ENV_PREFIX):
        return  # a TF-native env: the algorithm checks it (and in_graph) when built
    try:
        get_env_creator(exp.env)
    except ImportError as e:  # a suite's package (ale-py, minatar)
        raise CliError(_one_line(e)) from None
    except (ValueError, TypeError) as e:
        raise CliError(_one_line(e).replace(" Register a creator", " Pass --env=<gymnasium "
                                            "id>, or register a creator")) from None


def _check_module_env(env: str) -> None:
    """`module:EnvId` (gymnasium's form): the module imports and registers the id."""
    module_name, _, env_id = env.partition(":")
    try:
        importlib.import_module(module_name)
    except ImportError as e:
        raise CliError(f"--env={env!r}: the module {module_name!r} cannot be imported "
                       f"({type(e).__name__}: {e}); run tfrl from the directory that holds "
                       "it, or add that directory to PYTHONPATH.") from None
    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise CliError(f"--env={env!r}: importing {module_name!r} registered no gymnasium "
                       f"id {env_id!r}.{hint} Register it in that module with "
                       f"gymnasium.register({env_id!r}, entry_point=...).")


def imports_user_code(exp: Experiment) -> bool:
    """Whether checking `exp` imports a user's module (`--env=module:EnvId`, `callbacks` or
    `model.custom_model` as "module:ClassName"), which may import TensorFlow."""
    model = exp.config.get("model")
    named = [exp.env, exp.config.get("callbacks"),
             model.get("custom_model") if isinstance(model, dict) else None]
    return any(isinstance(value, str) and ":" in value for value in named)


def resolve_classes(config: Dict[str, Any]) -> Dict[str, Any]:
    """`callbacks` and `model.custom_model` given as "package.module:ClassName" strings,
    imported (a custom_model name without ":" is a registered model's name)."""
    if isinstance(config.get("callbacks"), str):
        config["callbacks"] = _import(config["callbacks"], "callbacks")
    model = config.get("model")
    if isinstance(model, dict) and isinstance(model.get("custom_model"), str) \
            and ":" in model["custom_model"]:
        config["model"] = {**model, "custom_model": _import(model["custom_model"],
                                                            "custom_model")}
    return config


def check_config(exp: Experiment, extra: Optional[Dict[str, Any]] = None) -> Any:
    """The algorithm's config object for `exp` (plus `extra` keys, e.g. evaluation
    settings), after checking the algorithm, env, keys, values and model keys; imports
    no TensorFlow (unless a class the config names does).

    Raises:
        CliError: For an unknown algorithm or env, an unknown key (naming the closest
            valid one, or tfrl's key for a Stable-Baselines3 name) or an invalid value.
    """
    check_names(exp)
    config = resolve_classes({**copy.deepcopy(exp.config), **(extra or {}), "env": exp.env})
    try:
        algo_config = get_config_class(exp.algo).from_dict(config)
        check_model_keys(algo_config.model or {})
    except (ValueError, TypeError) as e:
        raise CliError(f"{_one_line(e)} Fix it in --config or --config_override (run with "
                       "--dry_run to see every key).") from None
    return algo_config


def build_config(exp: Experiment, extra: Optional[Dict[str, Any]] = None) -> Any:
    """`check_config`, then the model config's values (which imports TensorFlow).

    Raises:
        CliError: As `check_config`, and for an invalid model config value.
    """
    algo_config = check_config(exp, extra)
    try:
        from tfrl.models.catalog import merge_model_config  # Deferred: imports TensorFlow.

        merge_model_config(algo_config.model)
    except (ValueError, TypeError) as e:
        raise CliError(f"{_one_line(e)} Fix it in --config or --config_override (run with "
                       "--dry_run to see every key).") from None
    return algo_config
