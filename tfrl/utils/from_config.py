"""`from_config`: build an object from a class (or a dotted class path) and a config dict.

RLlib's `ray.rllib.utils.from_config.from_config`, for the cases RLlib's components use:
`from_config(SomeClass, {"kwarg": value})`, and a dict naming the class in its `type`
key, `from_config({"type": "tfrl.utils.schedules.ConstantSchedule", "value": 1.0})`.
Keyword arguments are added to the config (they win over its keys).

Example:
    >>> from tfrl.utils.schedules import ConstantSchedule
    >>> from_config(ConstantSchedule, {"value": 2.5}, framework="tf2").value(0)
    2.5
"""

import importlib
from typing import Any, Mapping, Optional, Union


def from_config(cls: Union[type, str, Mapping[str, Any], None],
                config: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Any:
    """Instantiates `cls(**config, **kwargs)`.

    Args:
        cls: A class, a dotted path to one ("package.module.Class"), or a config dict
            whose `type` key names the class (then `config` must be None).
        config: Constructor keyword arguments; may hold a `type` key (a class or a
            dotted path) that is used when `cls` is None.
        **kwargs: More constructor keyword arguments (override `config`'s).

    Raises:
        ValueError: If no class is given, or a dotted path does not name a class.
    """
    if isinstance(cls, Mapping):
        if config is not None:
            raise ValueError(
                "from_config() takes either a config dict with a 'type' key or a class plus a "
                f"config; received two dicts: {dict(cls)!r} and {dict(config)!r}."
            )
        cls, config = None, cls
    merged = dict(config or {})
    merged.update(kwargs)
    type_ = merged.pop("type", None)
    target = cls if cls is not None else type_
    if target is None:
        raise ValueError(
            "from_config() needs a class: pass it first, or put it (or its dotted path) "
            f"under the config's 'type' key. Received config {merged!r}."
        )
    if isinstance(target, str):
        target = _class_from_path(target)
    return target(**merged)


def _class_from_path(path: str) -> Any:
    module_name, _, name = path.rpartition(".")
    if not module_name:
        raise ValueError(
            f"from_config(): type {path!r} is not a dotted path 'package.module.Class'."
        )
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(
            f"from_config(): type {path!r} does not name a class ({err})."
        ) from err
