"""Rejecting unknown configuration keys with a helpful message.

RLlib-style configuration dicts (and keyword arguments) are the boundary through which
users port code. A misspelt key would otherwise be silently ignored, so every component
that accepts such a dict checks it with `check_keys`, which names the unknown key and
the closest valid one.

Example:
    >>> check_keys({"num_workers": 2}, ["num_workers", "seed"], "config")
    >>> check_keys({"num_wrkers": 2}, ["num_workers", "seed"], "config")
    Traceback (most recent call last):
    ...
    tfrl.utils.config_keys.UnknownKeyError: Unknown config key 'num_wrkers'. Did you mean 'num_workers'? ...
"""

import difflib
from typing import Iterable, Mapping, Optional


class UnknownKeyError(ValueError, TypeError):
    """An unknown configuration key or keyword argument.

    A `ValueError` (for configuration dicts) that is also a `TypeError`, so callers that
    expect Python's error for an unexpected keyword argument catch it too.
    """


def closest_key(key: str, valid: Iterable[str]) -> Optional[str]:
    """Returns the valid key most similar to `key`, or None if none is close.

    Args:
        key: The unknown key.
        valid: The valid keys.

    Returns:
        The closest valid key (difflib ratio >= 0.6), or None.

    Example:
        >>> closest_key("rollout_fragment_lenght", ["rollout_fragment_length", "seed"])
        'rollout_fragment_length'
    """
    matches = difflib.get_close_matches(str(key), [str(v) for v in valid], n=1, cutoff=0.6)
    return matches[0] if matches else None


def check_keys(given: Mapping, valid: Iterable[str], where: str,
               hints: Optional[Mapping[str, str]] = None) -> None:
    """Raises if `given` holds a key that is not in `valid`.

    Args:
        given: The mapping (config dict or keyword arguments) to check.
        valid: The accepted keys.
        where: What is being checked, used in the message (e.g. "RolloutWorker
            argument", "config").
        hints: Unknown key -> the sentence to say instead of the closest valid key
            (e.g. another library's name for a key: `tfrl.algorithms.sb3_keys`).

    Raises:
        UnknownKeyError: (a `ValueError` and `TypeError`) naming the first unknown key,
            the closest valid key if there is one, and the valid keys.
    """
    valid = sorted(set(valid), key=str)
    valid_set = set(valid)
    unknown = [k for k in given if k not in valid_set]
    if not unknown:
        return
    key = unknown[0]
    suggestion = closest_key(key, valid)
    if hints and key in hints:
        hint = f" {hints[key]}"
    else:
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    others = f" (also unknown: {unknown[1:]!r})" if len(unknown) > 1 else ""
    raise UnknownKeyError(
        f"Unknown {where} key {key!r}.{hint}{others} Valid keys are: "
        f"{', '.join(map(str, valid))}."
    )
