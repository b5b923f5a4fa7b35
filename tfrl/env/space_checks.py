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

import math
import numbers
from typing import Any, Callable, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

# Kinds of numpy dtypes a numeric space value may have: bool, ints, uints, floats.
_NUMERIC_KINDS = "biuf"


def observation_error(space: Optional[gym.Space], obs: Any, *,
                      what: str = "observation") -> Optional[str]:
    """Returns why `obs` does not have the structure and shapes of `space`, or None.

    Box bounds are not checked (simulators legitimately step slightly outside them); the
    structure (Dict keys, Tuple length), leaf shapes and numeric dtypes are, and so is
    the range of the dtype a Box stores values in: a finite float64 such as 1e39 would
    become inf in a float32 batch, and 2**40 would wrap around in an int32 one, so they
    are refused here, where they enter. Discrete, MultiDiscrete and MultiBinary values
    must be elements of the space (an index outside it, or beyond int64, has no meaning).

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
        problem = _big_int_error(arr, what, space)
        if problem:
            return problem
        if arr.dtype.kind not in _NUMERIC_KINDS:
            return f"{what} has dtype {arr.dtype}, expected a number (dtype {space.dtype})"
        if arr.shape != space.shape:
            return (f"{what} has shape {arr.shape}, expected {space.shape} "
                    f"(the {_name(what)} space is {space})")
        if isinstance(space, gym.spaces.Box) and arr.dtype.kind == "f":
            # Only finite values: NaN and inf observations are the samplers' to refuse.
            problem = range_error(np.where(np.isfinite(arr), arr, 0), what, space.dtype)
            return problem and f"{problem} (the space is {space})"
        if isinstance(space, gym.spaces.Box):
            problem = range_error(arr, what, space.dtype)
            return problem and f"{problem} (the space is {space})"
        if _name(what) == "action":
            return None  # action_error checks membership (bounds included) next
        return _discrete_error(space, arr, what)
    return None if space.contains(obs) else f"{what} {_describe(obs)} is not in {space}"


def _big_int_error(arr: np.ndarray, what: str, space: gym.Space) -> Optional[str]:
    """Where an object array (what numpy makes of Python ints beyond int64, such as
    2**70) holds such an int: outside int64, so outside any numeric space."""
    if arr.dtype != object:
        return None
    bad = _outside_int64(arr)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = what + "".join(f"[{i}]" for i in index)
    info = np.iinfo(np.int64)
    return (f"{where} is {_describe_number(arr[index])}, outside the int64 range "
            f"[{info.min}, {info.max}] (the space is {space})")


def _outside_int64(arr: np.ndarray) -> np.ndarray:
    """Mask of the Python ints of an object array that int64 cannot hold."""
    info = np.iinfo(np.int64)
    return np.vectorize(lambda v: isinstance(v, int) and not isinstance(v, bool)
                        and not info.min <= v <= info.max, otypes=[bool])(arr)


def discrete_bounds(space: gym.Space) -> Tuple[Any, Any, str]:
    """`(low, high, expected)` of a Discrete / MultiDiscrete / MultiBinary space: its
    elements are the integers in [low, high); `expected` says so in an error message."""
    if isinstance(space, gym.spaces.Discrete):
        low, high = space.start, space.start + space.n
        return low, high, f"an integer in [{low}, {high})"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.start, space.start + space.nvec, "integers in [start, start + nvec)"
    return 0, 2, "0 or 1"


def _discrete_error(space: gym.Space, arr: np.ndarray, what: str) -> Optional[str]:
    """Where a Discrete / MultiDiscrete / MultiBinary value is not an element of the
    space (an integer, integer-valued float or bool in its range), or None."""
    low, high, expected = discrete_bounds(space)
    with np.errstate(invalid="ignore"):
        bad = ~((arr >= low) & (arr < high) & (arr == np.floor(arr)))
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = what + "".join(f"[{i}]" for i in index)
    return (f"{where} is {arr[index].item()!r}, not {expected} (the {_name(what)} space is "
            f"{space})")


def range_error(value: Any, what: str, dtype: Any) -> Optional[str]:
    """Where the numbers of `value` (an array or number) overflow the numeric `dtype`
    they will be stored in, or None: for a float dtype, floats beyond its range (e.g.
    1e39 or 1e300 for float32: finite as Python floats, inf once cast; NaN is not
    flagged, inf is); for an integer dtype, integers or finite floats beyond its range
    (e.g. 2**40 for int32, which would wrap around once cast). Other dtypes: None.

    Example:
        >>> range_error(np.float64(1e39), "reward", np.float32)
        'reward is 1e+39, outside the float32 range [-3.4028235e+38, 3.4028235e+38] it is stored in'
        >>> range_error(np.array([0, 2**40]), "obs", np.int32)
        'obs[1] is 1099511627776, outside the int32 range [-2147483648, 2147483647] obs is stored in'
    """
    if dtype is None or np.dtype(dtype).kind not in "fiu":
        return None
    arr = np.asarray(value)
    if arr.size == 0:
        return None
    stored = np.dtype(dtype).name
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if arr.dtype.kind in "iu":
            if np.can_cast(arr.dtype, dtype, "safe"):
                return None
        elif arr.dtype.kind != "f":
            return None
        with np.errstate(invalid="ignore"):
            bad = (arr < info.min) | (arr > info.max)
        span = f"the {stored} range [{info.min}, {info.max}]"
    else:
        if arr.dtype.kind not in "fc":
            return None
        limit = float(np.finfo(dtype).max)
        if arr.dtype.kind == "f" and np.finfo(arr.dtype).max <= limit:
            return None
        bad = np.abs(arr) > limit
        text = str(np.finfo(dtype).max)
        span = f"the {stored} range [-{text}, {text}]"
    if not bad.any():
        return None
    if arr.ndim == 0:
        return f"{what} is {arr.item()!r}, outside {span} it is stored in"
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = what + "".join(f"[{i}]" for i in index)
    return f"{where} is {arr[index].item()!r}, outside {span} {what} is stored in"


def nonfinite_error(value: Any, what: str, dtype: Any = None) -> Optional[str]:
    """Returns where `value` (a number, array or nest of them) holds NaN or inf, or a
    float outside the range of the float `dtype` it will be stored in, or None.

    Args:
        value: The value.
        what: Its name in the message.
        dtype: A float dtype (e.g. float32) the numbers must fit; None: the value's own
            dtype (only finiteness is checked).
    """
    if isinstance(value, dict):
        for key, sub in value.items():
            problem = nonfinite_error(sub, f"{what}[{key!r}]", dtype)
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)) and not all(
            isinstance(v, numbers.Number) for v in value):
        for i, sub in enumerate(value):
            problem = nonfinite_error(sub, f"{what}[{i}]", dtype)
            if problem:
                return problem
        return None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if arr.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(arr)
    if bad.any():
        if arr.ndim == 0:
            return f"{what} is not finite ({arr.item()!r})"
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        where = what + "".join(f"[{i}]" for i in index)
        return f"{where} holds a non-finite number ({arr[index].item()!r})"
    return range_error(arr, what, dtype)


def reward_error(reward: Any, what: str = "reward") -> Optional[str]:
    """Why `reward` is not a finite real number that fits float32 (the dtype batches store
    rewards in), or None. Python and numpy ints and floats are numbers; bools, strings
    and arrays are not.

    Example:
        >>> reward_error(float("nan"))
        'reward must be a finite number; received nan'
        >>> reward_error(1e39)
        'reward is 1e+39, outside the float32 range [-3.4028235e+38, 3.4028235e+38] it is stored in'
    """
    if isinstance(reward, (np.ndarray, np.generic)) and np.ndim(reward) == 0:
        reward = reward.item()
    if isinstance(reward, bool) or not isinstance(reward, numbers.Real):
        return f"{what} must be a finite number; received {_describe_number(reward)}"
    try:
        number = float(reward)
    except OverflowError:  # an int beyond float64
        number = math.inf
    if not math.isfinite(number):
        return f"{what} must be a finite number; received {_describe_number(reward)}"
    return range_error(np.float64(number), what, np.float32)


def _describe_number(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"  # repr() of a huge int may raise
    try:
        return _describe(value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value)
    except Exception:  # pylint: disable=broad-except
        return f"<{type(value).__name__}>"


def stack_values(items: Sequence[Any], space: gym.Space,
                 describe_row: Callable[[int], str]) -> np.ndarray:
    """`np.asarray(items, space.dtype)` for the values of a Box, Discrete, MultiDiscrete
    or MultiBinary space, refusing integers the cast would change: numpy wraps 2**40
    around in int32 and cannot hold 2**70 in int64 at all (float dtypes overflow to inf,
    which the samplers' finiteness checks refuse).

    Args:
        items: One value per row (e.g. one observation per sub-env).
        space: The space of one value.
        describe_row: Row index -> who sent it (e.g. "sub-env 3"), for the message.

    Raises:
        ValueError: Naming the row, the value and the dtype's range.
    """
    dtype = space.dtype
    if dtype is None or np.dtype(dtype).kind not in "iu":
        return np.asarray(items, dtype=dtype)
    try:
        arr = np.asarray(items)
    except (ValueError, TypeError):  # ragged: numpy's own message
        return np.asarray(items, dtype=dtype)
    if arr.dtype == dtype:
        return arr
    info = np.iinfo(dtype)
    bad = _outside_int64(arr) if arr.dtype == object else None
    if bad is None and arr.dtype.kind in "iuf" and arr.ndim and not np.can_cast(
            arr.dtype, dtype, "safe"):
        with np.errstate(invalid="ignore"):
            bad = (arr < info.min) | (arr > info.max)
    if bad is not None and bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        value = arr[index]
        raise ValueError(
            f"The value of {describe_row(index[0])} does not fit the {np.dtype(dtype).name} "
            f"dtype of its space {space}: it holds {_describe_number(value)}, outside "
            f"[{info.min}, {info.max}] (numpy would wrap it around, or fail, when batching). "
            f"Received: {_describe_number(items[index[0]])}. Return values that fit the "
            "space's dtype, or declare a wider dtype in the space.")
    return arr.astype(dtype)


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
        if (arr.dtype.kind in _NUMERIC_KINDS and np.can_cast(arr.dtype, space.dtype, "same_kind")
                and not range_error(arr, "action", space.dtype)):  # a cast must not wrap
            return arr.astype(space.dtype)
        return arr
    return value


def _name(what: str) -> str:
    return "action" if what.startswith("action") else "observation"


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
