"""Checks that data handed in by an external simulator fit a gymnasium space.

External envs and the policy server take observations and actions from code tfrl does
not control (another thread, another process, another machine). A bad value must be
rejected where it enters, with a message that says what was received and expected,
instead of failing later inside a batched `compute_actions` call for every episode.

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Box(-1.0, 1.0, (3,))
    >>> observation_error(space, [0.0, 0.5, 1.0]) is None
    True
    >>> observation_error(space, [0.0, 0.5])
    'observation has shape (2,), expected (3,) (the observation space is Box(-1.0, 1.0, (3,), float32))'
"""

from typing import Any, Optional

import gymnasium as gym
import numpy as np

# Kinds of numpy dtypes a numeric space value may have: bool, ints, uints, floats.
_NUMERIC_KINDS = "biuf"


def observation_error(space: Optional[gym.Space], obs: Any, *,
                      what: str = "observation") -> Optional[str]:
    """Returns why `obs` does not have the structure and shapes of `space`, or None.

    Bounds are not checked (simulators legitimately step slightly outside them); the
    structure (Dict keys, Tuple length), leaf shapes and numeric dtypes are, and so is
    the range of the float dtype a Box stores values in: a finite float64 such as 1e39
    would become inf in a float32 batch, so it is refused here, where it enters.

    Args:
        space: The observation space; None accepts anything.
        obs: The observation.
        what: How the value is named in the message (e.g. `"observation['pos']"`).

    Returns:
        None if `obs` fits, else a message like "observation has shape (2,), expected (3,)".
    """
    if space is None:
        return None
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, dict):
            return (f"{what} is a {type(obs).__name__}, expected a dict with keys "
                    f"{sorted(space.spaces)}")
        if set(obs) != set(space.spaces):
            return f"{what} has keys {sorted(map(str, obs))}, expected {sorted(space.spaces)}"
        for key, sub in space.spaces.items():
            problem = observation_error(sub, obs[key], what=f"{what}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, (tuple, list)) or len(obs) != len(space.spaces):
            return f"{what} is {_describe(obs)}, expected a tuple of {len(space.spaces)} items"
        for i, sub in enumerate(space.spaces):
            problem = observation_error(sub, obs[i], what=f"{what}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                          gym.spaces.MultiBinary)):
        try:
            arr = np.asarray(obs)
        except (ValueError, TypeError):
            return f"{what} is {_describe(obs)}, which is not array-like"
        if arr.dtype.kind not in _NUMERIC_KINDS:
            return f"{what} has dtype {arr.dtype}, expected a number (dtype {space.dtype})"
        if arr.shape != space.shape:
            return (f"{what} has shape {arr.shape}, expected {space.shape} "
                    f"(the {_name(what)} space is {space})")
        if isinstance(space, gym.spaces.Box) and arr.dtype.kind == "f":
            # Only finite values: NaN and inf observations are the samplers' to refuse.
            problem = range_error(np.where(np.isfinite(arr), arr, 0), what, space.dtype)
            return problem and f"{problem} (the space is {space})"
        return None
    return None if space.contains(obs) else f"{what} {_describe(obs)} is not in {space}"


def range_error(value: Any, what: str, dtype: Any) -> Optional[str]:
    """Where the floats of `value` (an array or number) overflow the float `dtype` they
    will be stored in (e.g. 1e39 or 1e300 for float32: finite as Python floats, inf once
    cast), or None (also for non-float dtypes). NaN is not flagged; inf is.

    Example:
        >>> range_error(np.float64(1e39), "reward", np.float32)
        'reward is 1e+39, outside the float32 range [-3.4028235e+38, 3.4028235e+38] it is stored in'
    """
    if dtype is None or np.dtype(dtype).kind != "f":
        return None
    arr = np.asarray(value)
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return None
    limit = float(np.finfo(dtype).max)
    if arr.dtype.kind == "f" and np.finfo(arr.dtype).max <= limit:
        return None
    bad = np.abs(arr) > limit
    if not bad.any():
        return None
    stored = np.dtype(dtype).name
    text = str(np.finfo(dtype).max)
    span = f"the {stored} range [-{text}, {text}]"
    if arr.ndim == 0:
        return f"{what} is {arr.item()!r}, outside {span} it is stored in"
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = what + "".join(f"[{i}]" for i in index)
    return f"{where} is {arr[index].item()!r}, outside {span} {what} is stored in"


def action_error(space: Optional[gym.Space], action: Any) -> Optional[str]:
    """Returns why `action` is not an element of `space` (bounds included), or None.

    Args:
        space: The action space; None accepts anything.
        action: The action (lists are converted to arrays of the space's dtype).

    Returns:
        None if `space.contains(action)`, else a message naming action and space.
    """
    if space is None:
        return None
    problem = observation_error(space, action, what="action")
    if problem:
        return problem
    try:
        ok = space.contains(_as_space_value(space, action))
    except (ValueError, TypeError):
        ok = False
    return None if ok else f"action {_describe(action)} is not in the action space {space}"


def _as_space_value(space: gym.Space, value: Any) -> Any:
    if isinstance(space, gym.spaces.Dict) and isinstance(value, dict):
        return {k: _as_space_value(s, value[k]) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple) and isinstance(value, (tuple, list)):
        return tuple(_as_space_value(s, v) for s, v in zip(space.spaces, value))
    if isinstance(space, gym.spaces.Discrete):
        arr = np.asarray(value)
        # JSON and Python give plain ints; numpy integer scalars are fine too.
        return np.int64(arr) if arr.dtype.kind in "iu" else value
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        arr = np.asarray(value)
        if arr.dtype.kind in _NUMERIC_KINDS and np.can_cast(arr.dtype, space.dtype, "same_kind"):
            return arr.astype(space.dtype)
        return arr
    return value


def _name(what: str) -> str:
    return "action" if what.startswith("action") else "observation"


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
