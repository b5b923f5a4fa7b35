"""Stop criteria of a training run: `stop_reason(result, {"timesteps_total": 1e5, ...})`.

Shared by the command line's progress display (`tfrl.cli.progress`, which re-exports
these names) and `tfrl.utils.progress.train_until`.
"""

import math
from typing import Any, Mapping, Optional


def result_value(result: Mapping[str, Any], key: str) -> Any:
    """`result[key]`, following `/` into nested dicts ("evaluation/episode_reward_mean");
    None if absent."""
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def stop_reason(result: Mapping[str, Any], stop: Mapping[str, float]) -> Optional[str]:
    """`"key=value >= threshold"` for the first criterion `result` meets, else None.

    Example:
        >>> stop_reason({"timesteps_total": 512, "episode_reward_mean": 30.0},
        ...             {"episode_reward_mean": 475, "timesteps_total": 500})
        'timesteps_total=512 >= 500'
    """
    for key, threshold in stop.items():
        value = result_value(result, key)
        if isinstance(value, (int, float)) and not math.isnan(value) and value >= threshold:
            return f"{key}={_number(value)} >= {_number(threshold)}"
    return None


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)
