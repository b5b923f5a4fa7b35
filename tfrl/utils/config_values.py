"""Checking config values against their field annotations and a per-field range table.

The config dataclasses (`PolicyConfig`, `AlgorithmConfig` and the algorithms' configs)
declare each field's type by its annotation and, next to the class, a small table
(`_RANGES`) of the allowed range of the numeric fields. `check_fields` derives every
check from these two sources, so a value of the wrong type or out of range is
rejected where the config is built, with a message naming the key, the value received
and what is allowed.

Types are not converted: a string such as `"1e-3"` is rejected for a float field (the
CLI and experiment files parse numbers as YAML before they reach the config), and a
`bool` is never taken for an int or a float.

Example:
    >>> check_value("lr", 1e-3, float, Bound(gt=0), "PPOConfig")
    >>> check_value("lr", "fast", float, Bound(gt=0), "PPOConfig")
    Traceback (most recent call last):
    ...
    tfrl.utils.config_values.InvalidConfigValueError: PPOConfig: lr must be a finite float > 0; received 'fast' (str).
"""

import dataclasses
import math
import numbers
import typing
from typing import Any, Callable, Mapping, Optional, Tuple


class InvalidConfigValueError(ValueError, TypeError):
    """A config value of the wrong type or out of its range.

    A `ValueError` that is also a `TypeError`, so callers catching either see it.
    """


@dataclasses.dataclass(frozen=True)
class Bound:
    """The allowed range of a numeric field: `> gt`, `>= ge`, `<= le` (None: no bound).

    Float fields must also be finite.
    """

    gt: Optional[float] = None
    ge: Optional[float] = None
    le: Optional[float] = None

    def holds(self, value: float) -> bool:
        """Whether `value` lies in the range."""
        return ((self.gt is None or value > self.gt) and (self.ge is None or value >= self.ge)
                and (self.le is None or value <= self.le))

    def describe(self) -> str:
        """E.g. "> 0", ">= 1", "in [0, 1]"."""
        if self.ge is not None and self.le is not None:
            return f"in [{self.ge:g}, {self.le:g}]"
        parts = [f"> {self.gt:g}" if self.gt is not None else "",
                 f">= {self.ge:g}" if self.ge is not None else "",
                 f"<= {self.le:g}" if self.le is not None else ""]
        return " and ".join(p for p in parts if p)


@dataclasses.dataclass(frozen=True)
class OneOf:
    """The allowed values of a string field."""

    values: Tuple[str, ...]

    def holds(self, value: Any) -> bool:
        """Whether `value` is one of the allowed values."""
        return value in self.values

    def describe(self) -> str:
        """E.g. "one of 'raise', 'skip'"."""
        return "one of " + ", ".join(repr(v) for v in self.values)


POSITIVE = Bound(gt=0)
NON_NEGATIVE = Bound(ge=0)
AT_LEAST_ONE = Bound(ge=1)
UNIT_INTERVAL = Bound(ge=0, le=1)
#: A `[[timestep, value], ...]` schedule (RLlib's `lr_schedule`): timesteps numbers >= 0
#: in non-decreasing order (`1e6` is fine), values finite floats >= 0.
SCHEDULE = "schedule"


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and \
        type(value).__name__ != "bool_"


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and \
        type(value).__name__ != "bool_"


def _received(value: Any) -> str:
    return f"received {value!r} ({type(value).__name__})."


def _check_schedule(key: str, value: Any, fail: Callable[[str], None]) -> None:
    allowed = (f"{key} must be None or a list of [timestep, value] pairs (timesteps "
               "numbers >= 0 in non-decreasing order, values finite floats >= 0)")
    if not isinstance(value, (list, tuple)):
        fail(f"{allowed}; {_received(value)}")
    last = -1
    for i, pair in enumerate(value):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and _is_real(pair[0])
                and math.isfinite(pair[0]) and pair[0] >= max(last, 0) and _is_real(pair[1])
                and math.isfinite(pair[1]) and pair[1] >= 0):
            fail(f"{allowed}; entry {i} is {pair!r}.")
        last = pair[0]


def check_value(key: str, value: Any, annotation: Any, bound: Any, owner: str) -> None:
    """Checks one value against its field's annotation and range.

    Args:
        key: The key named in the message.
        value: The value received.
        annotation: The field's type (`int`, `float`, `bool`, `str`, `dict`, `list`,
            `Optional[...]` of these; other types, e.g. `Any`, are not checked).
        bound: A `Bound`, `SCHEDULE` or None.
        owner: The config class name the message starts with.

    Raises:
        InvalidConfigValueError: Naming `key`, the value and what is allowed.
    """
    def fail(message: str) -> None:
        raise InvalidConfigValueError(f"{owner}: {message}")

    optional = False
    if typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else Any
    if value is None and optional:
        return
    none = "None or " if optional else ""
    if bound == SCHEDULE:
        _check_schedule(key, value, fail)
        return
    limit = f" {bound.describe()}" if isinstance(bound, Bound) else ""
    if annotation is int:
        if not _is_int(value) or (bound is not None and not bound.holds(value)):
            fail(f"{key} must be {none}an int{limit}; {_received(value)}")
    elif annotation is float:
        if not _is_real(value) or not math.isfinite(value) or (
                bound is not None and not bound.holds(value)):
            fail(f"{key} must be {none}a finite float{limit}; {_received(value)}")
    elif annotation is bool:
        if not isinstance(value, bool) and type(value).__name__ != "bool_":
            fail(f"{key} must be {none}a bool (true or false); {_received(value)}")
    elif annotation in (str, dict, list):
        accepted = (list, tuple) if annotation is list else (
            Mapping if annotation is dict else str)
        if not isinstance(value, accepted):
            fail(f"{key} must be {none}a {annotation.__name__}; {_received(value)}")
        if isinstance(bound, OneOf) and not bound.holds(value):
            fail(f"{key} must be {none}{bound.describe()}; {_received(value)}")


def check_fields(config: Any, ranges: Mapping[str, Any],
                 key_of: Callable[[str], str] = lambda name: name) -> None:
    """Checks every field of the dataclass `config` against its annotation and
    `ranges[field name]` (see `check_value`).

    Args:
        config: A dataclass instance.
        ranges: Field name -> `Bound` or `SCHEDULE` (fields not in it: type only).
        key_of: Field name -> the key named in messages (e.g. `lambda_` -> `lambda`).
    """
    hints = typing.get_type_hints(type(config))
    owner = type(config).__name__
    for f in dataclasses.fields(config):
        check_value(key_of(f.name), getattr(config, f.name), hints.get(f.name, Any),
                    ranges.get(f.name), owner)


def merged_ranges(cls: type) -> dict:
    """The `_RANGES` tables of `cls` and its bases (subclasses override)."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass).get("_RANGES", {}))
    return out
