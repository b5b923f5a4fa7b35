"""The integer check of user-given values, with one message format for all of tfrl.

Example:
    >>> check_int(3, "ReplayBuffer(capacity=...)", 1)
    3
    >>> check_int(True, "ReplayBuffer(capacity=...)", 1, "timesteps")
    Traceback (most recent call last):
    ...
    ValueError: ReplayBuffer(capacity=...) must be an int >= 1 (timesteps); received True.
"""

import numbers
from typing import Any


def check_int(value: Any, what: str, minimum: int = 0, note: str = "") -> int:
    """`value` as a Python int, if it is an integer (Python or numpy, not a bool) of at
    least `minimum`.

    Args:
        value: The value received.
        what: What it is, as the message names it (e.g. `"ReplayBuffer(capacity=...)"`).
        minimum: The smallest value allowed.
        note: Said after the bound, in parentheses (e.g. the unit).

    Raises:
        ValueError: `"<what> must be an int >= <minimum> (<note>); received <value!r>."`
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        bound = f">= {minimum}" + (f" ({note})" if note else "")
        raise ValueError(f"{what} must be an int {bound}; received {value!r}.")
    return int(value)
