"""Helpers for training scripts: a command line with a tiny CI budget, one progress line
per `train()` result, and a loop that trains until a stop criterion is met.

tfrl's examples use them; they work with any `Algorithm` (anything with `train()`
returning a result dict).

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
"""

import argparse
import math
import numbers
import os
import sys
from typing import Any, Dict, Mapping, Optional, TextIO, Tuple, Union

from tfrl.utils.stop_criteria import result_value, stop_reason

#: The environment variable that turns `--smoke` on by default (for CI).
SMOKE_ENV_VAR = "TFRL_EXAMPLE_SMOKE"

#: A column: a result key (`/` follows nested dicts), or `(key, format spec)`.
Column = Union[str, Tuple[str, str]]

#: The columns every progress line starts with: label -> (result key, format spec).
DEFAULT_COLUMNS: Dict[str, Tuple[str, str]] = {
    "iter": ("training_iteration", "3d"),
    "steps": ("timesteps_total", "6d"),
    "reward": ("episode_reward_mean", "7.2f"),
}


def script_parser(doc: str, smoke_budget: str) -> argparse.ArgumentParser:
    """An argument parser for a training script, with a `--smoke` switch for CI.

    Args:
        doc: The script's docstring; its first line becomes the description.
        smoke_budget: What `--smoke` runs, for `--help` (e.g. "2 iterations").

    Returns:
        A parser with `--smoke` (default: True when the `TFRL_EXAMPLE_SMOKE`
        environment variable is set and non-empty); add the script's own arguments.

    Example:
        >>> parser = script_parser("Trains PPO.\\n\\nMore text.", "1 iteration")
        >>> parser.description, parser.parse_args(["--smoke"]).smoke
        ('Trains PPO.', True)
    """
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        default=bool(os.environ.get(SMOKE_ENV_VAR)),
                        help=f"tiny budget ({smoke_budget}) for CI")
    return parser


def format_result(result: Mapping[str, Any], extra: Optional[Mapping[str, Column]] = None
                  ) -> str:
    """One progress line: iteration, env steps and mean return, then the `extra` columns.

    Args:
        result: A `train()` result.
        extra: More columns, label -> result key (`"a/b"` is `result["a"]["b"]`) or
            `(key, format spec)`. Without a spec, floats show 4 decimals. Missing or
            non-numeric-for-the-spec values show as `nan`.

    Returns:
        The columns as `label value`, separated by two spaces.
    """
    columns: Dict[str, Column] = {**DEFAULT_COLUMNS, **(extra or {})}
    parts = []
    for label, column in columns.items():
        key, spec = (column, "") if isinstance(column, str) else column
        parts.append(f"{label} {_format(result_value(result, key), spec)}")
    return "  ".join(parts)


def print_result(result: Mapping[str, Any], extra: Optional[Mapping[str, Column]] = None,
                 file: Optional[TextIO] = None) -> None:
    """Prints `format_result(result, extra)` and flushes (to `file`, default stdout)."""
    print(format_result(result, extra), file=file or sys.stdout, flush=True)


def train_until(algo: Any, stop: Mapping[str, float],
                extra: Optional[Mapping[str, Column]] = None, verbose: bool = True
                ) -> Dict[str, Any]:
    """Calls `algo.train()` until a result meets one of the `stop` criteria.

    Args:
        algo: The algorithm (anything whose `train()` returns a result dict).
        stop: Result key -> threshold; training stops at the first result whose value
            is >= a threshold (e.g. `{"training_iteration": 10,
            "episode_reward_mean": 475}`; `"a/b"` keys follow nested dicts).
        extra: Extra progress columns (see `format_result`).
        verbose: Print a progress line per result.

    Returns:
        The last result.

    Raises:
        ValueError: If `stop` is empty (training would never stop).
    """
    if not stop:
        raise ValueError(
            "train_until needs at least one stop criterion. Received: stop={}. Pass e.g. "
            "{'training_iteration': 10} or {'timesteps_total': 100000}.")
    while True:
        result = algo.train()
        if verbose:
            print_result(result, extra)
        if stop_reason(result, stop) is not None:
            return result


def _format(value: Any, spec: str) -> str:
    if value is None:
        value = math.nan
    if not spec:
        is_float = isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
        spec = ".4f" if is_float else ""
    try:
        return format(value, spec)
    except (TypeError, ValueError):  # e.g. nan with the int spec "3d": keep the width
        width = "".join(c for c in spec.split(".")[0] if c.isdigit())
        return format(str(value), f">{width}")
