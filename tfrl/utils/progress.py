"""Helpers for training scripts: a quiet start, a command line with a tiny CI budget,
progress lines, stop criteria, and a loop that trains until a stop criterion is met.

tfrl's examples and the `tfrl` CLI use them. This module imports neither TensorFlow nor
the rest of tfrl, so a script can call `quiet_tensorflow()` before TensorFlow loads.
`train_until` runs `Algorithm.fit` (the one training loop) with the two callbacks of
`tfrl.utils.progress_callbacks`: `StopOnCriteria(stop)` and `ProgressLogger` (one line
per `train()` result, formatted by `format_result`).

Example:
    >>> result = {"training_iteration": 3, "timesteps_total": 600,
    ...           "episode_reward_mean": 21.5, "num_healthy_workers": 2,
    ...           "info": {"learner": {"default_policy": {"learner_stats": {
    ...               "total_loss": 0.25}}}}}
    >>> print(format_result(result))
    iter   3  steps    600  reward   21.50
    >>> print(format_result(result, {
    ...     "healthy workers": "num_healthy_workers",
    ...     "total_loss": ("info/learner/default_policy/learner_stats/total_loss", ".3f")}))
    iter   3  steps    600  reward   21.50  healthy workers 2  total_loss 0.250
    >>> stop_reason(result, {"episode_reward_mean": 475, "timesteps_total": 500})
    'timesteps_total=600 >= 500'
"""

import argparse
import gc
import importlib
import logging
import math
import numbers
import os
import sys
from typing import Any, Dict, Mapping, Optional, TextIO, Tuple, Union

from tfrl.utils import quiet as quiet_start

#: The environment variable that turns `--smoke` on by default (for CI).
SMOKE_ENV_VAR = "TFRL_EXAMPLE_SMOKE"

#: TensorFlow's C++ log threshold; tfrl sets it (to 3) only when the user did not.
TF_LOG_LEVEL_VAR = quiet_start.TF_LOG_LEVEL_VAR

#: A column: a result key (`/` follows nested dicts), or `(key, format spec)`.
Column = Union[str, Tuple[str, str]]

#: The columns every progress line starts with: label -> (result key, format spec).
DEFAULT_COLUMNS: Dict[str, Tuple[str, str]] = {
    "iter": ("training_iteration", "3d"),
    "steps": ("timesteps_total", "6d"),
    "reward": ("episode_reward_mean", "7.2f"),
}


def quiet_tensorflow(verbose: Optional[bool] = None) -> None:
    """Imports TensorFlow for a program (the CLI, the examples), hiding its C++ start-up
    notices (oneDNN, CUDA, CPU features); call it before anything imports TensorFlow.

    Unless `verbose`, `TFRL_VERBOSE=1`, or the user set `TF_CPP_MIN_LOG_LEVEL` below 2
    themselves: sets `TF_CPP_MIN_LOG_LEVEL=3` if unset, imports TensorFlow with stderr
    (file descriptor 2) captured and written back without the start-up notices
    (TensorFlow writes them while its libraries load, before that variable is read; see
    `tfrl.utils.quiet`, which `import tfrl` already set up), and lowers TensorFlow's
    Python logger to warnings. Python errors raised by the import still show. With
    `verbose` the notices stay, also in Ray workers started later.

    Either way the import runs with Python's cyclic garbage collector paused, then one
    full collection frees the import's garbage and `gc.freeze()` moves the objects that
    survive it (TensorFlow's and Keras' modules, classes and functions, alive for the
    whole run) out of the collector's later passes. Importing TensorFlow creates about a
    million objects; without this the collector scans them in full several times during
    start-up (~0.2-0.3 s of a PPO run's first learning step on a 2-core VM). Freezing is
    process-wide: a program's start, not a library's import, is the place for it.

    Args:
        verbose: Keep TensorFlow's notices. None: whether `--verbose` is among the
            command-line arguments (`sys.argv`), so a script can call this before it
            parses them.
    """
    if verbose is None:
        verbose = "--verbose" in sys.argv[1:]
    # TFRL_VERBOSE=1, or the user's own TF_CPP_MIN_LOG_LEVEL below 2, asks for the notices.
    verbose = bool(verbose) or quiet_start.verbose_requested()
    quiet_start.set_verbose(verbose)  # also undoes `import tfrl`'s quiet start if verbose
    if not verbose:
        os.environ.setdefault(TF_LOG_LEVEL_VAR, "3")
    if "tensorflow" not in sys.modules:
        _import_tensorflow(not verbose)
    if not verbose:
        logging.getLogger("tensorflow").setLevel(logging.WARNING)


def _import_tensorflow(quiet: bool) -> None:
    """Imports TensorFlow with the garbage collector paused, then collects and freezes
    (see `quiet_tensorflow`); with `quiet`, stderr is captured meanwhile and written
    back without TensorFlow's start-up notices (`tfrl.utils.quiet.filter_notices`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        if quiet:
            with quiet_start.FilteredStderr():
                importlib.import_module("tensorflow")
        else:
            importlib.import_module("tensorflow")
    finally:
        gc.collect()
        gc.freeze()
        if collecting:
            gc.enable()


def script_parser(doc: str, smoke_budget: str) -> argparse.ArgumentParser:
    """An argument parser for a training script, with `--smoke` for CI and `--verbose`.

    Args:
        doc: The script's docstring; its first line becomes the description.
        smoke_budget: What `--smoke` runs, for `--help` (e.g. "2 iterations").

    Returns:
        A parser with `--smoke` (default: True when the `TFRL_EXAMPLE_SMOKE`
        environment variable is set and non-empty) and `--verbose` (keep TensorFlow's
        start-up notices, see `quiet_tensorflow`); add the script's own arguments.

    Example:
        >>> parser = script_parser("Trains PPO.\\n\\nMore text.", "1 iteration")
        >>> args = parser.parse_args(["--smoke"])
        >>> parser.description, args.smoke, args.verbose
        ('Trains PPO.', True, False)
    """
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        default=bool(os.environ.get(SMOKE_ENV_VAR)),
                        help=f"tiny budget ({smoke_budget}) for CI")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up notices (hidden by default)")
    return parser


def result_value(result: Mapping[str, Any], key: str) -> Any:
    """`result[key]`, following `/` into nested dicts ("evaluation/episode_reward_mean");
    a flat key holding the `/` (as in `Algorithm.fit`'s logs) is found too; None if
    absent.

    Example:
        >>> result_value({"a": {"b": 1}}, "a/b"), result_value({"a/b": 2.0}, "a/b")
        (1, 2.0)
    """
    if key in result:
        return result[key]
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def stop_reason(result: Mapping[str, Any], stop: Mapping[str, float]) -> Optional[str]:
    """`"key=value >= threshold"` for the first criterion `result` meets, else None.

    A NaN value (e.g. the mean return before the first episode ends) meets nothing.
    """
    for key, threshold in stop.items():
        value = result_value(result, key)
        if (isinstance(value, numbers.Real) and not isinstance(value, bool)
                and not math.isnan(value) and float(value) >= threshold):
            return f"{key}={_number(value)} >= {_number(threshold)}"
    return None


def check_stop(stop: Mapping[str, Any]) -> Dict[str, float]:
    """`stop` as a dict, after checking that every threshold is a number.

    Raises:
        TypeError: If `stop` is not a mapping, or a threshold is not a number.
    """
    if not isinstance(stop, Mapping):
        raise TypeError(f"stop must be a dict of result key -> threshold, e.g. "
                        f"{{'training_iteration': 10}}; received {stop!r}.")
    for key, threshold in stop.items():
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"stop[{key!r}]={threshold!r} is not a number; stop criteria "
                            "are result key -> threshold, e.g. {'timesteps_total': 100000}.")
    return dict(stop)


def format_duration(seconds: float) -> str:
    """`H:MM:SS`.

    Example:
        >>> format_duration(3725.4)
        '1:02:05'
    """
    seconds = int(round(max(seconds, 0.0)))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def format_result(result: Mapping[str, Any], extra: Optional[Mapping[str, Column]] = None,
                  columns: Optional[Mapping[str, Column]] = None) -> str:
    """One progress line: iteration, env steps and mean return, then the `extra` columns.

    Args:
        result: A `train()` result (or `Algorithm.fit`'s flattened logs).
        extra: More columns, label -> result key (`"a/b"` is `result["a"]["b"]`) or
            `(key, format spec)`. Without a spec, floats show 4 decimals. Missing or
            non-numeric-for-the-spec values show as `nan`.
        columns: The columns before `extra` (default `DEFAULT_COLUMNS`).

    Returns:
        The columns as `label value`, separated by two spaces.
    """
    columns = {**(DEFAULT_COLUMNS if columns is None else columns), **(extra or {})}
    parts = []
    for label, column in columns.items():
        key, spec = (column, "") if isinstance(column, str) else column
        parts.append(f"{label} {_format(result_value(result, key), spec)}")
    return "  ".join(parts)


def print_result(result: Mapping[str, Any], extra: Optional[Mapping[str, Column]] = None,
                 file: Optional[TextIO] = None) -> None:
    """Prints `format_result(result, extra)` and flushes (to `file`, default stdout)."""
    print(format_result(result, extra), file=file or sys.stdout, flush=True)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _format(value: Any, spec: str) -> str:
    if value is None:
        value = math.nan
    if (spec.endswith("d") and isinstance(value, float) and value.is_integer()):
        value = int(value)  # fit's logs hold counters as floats
    if not spec:
        is_float = isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
        spec = ".4f" if is_float else ""
    try:
        return format(value, spec)
    except (TypeError, ValueError):  # e.g. nan with the int spec "3d": keep the width
        width = "".join(c for c in spec.split(".")[0] if c.isdigit())
        return format(str(value), f">{width}")
