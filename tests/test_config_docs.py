"""Key lists in docstrings are checked against the config classes, so they cannot drift:
every field a config class adds is described in its docstring, and every algorithm's
policy class names its config class rather than keeping its own list of keys."""

import dataclasses
import re

import pytest

from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.policy.policy_config import PolicyConfig


def _config_classes():
    seen = {}
    for name in sorted(ALGORITHMS):
        algo = get_algorithm_class(name)
        for cls in algo.config_class.__mro__:
            if dataclasses.is_dataclass(cls) and cls not in seen.values():
                seen[cls.__qualname__ + "@" + cls.__module__] = cls
    seen["PolicyConfig"] = PolicyConfig
    # AlgorithmConfig holds RLlib's common config (rollouts, resources, evaluation,
    # offline I/O, ...): its fields are described by section in its module's comments
    # and RLlib's documentation, not in the class docstring.
    return sorted((c for c in seen.values() if c.__name__ != "AlgorithmConfig"),
                  key=lambda c: c.__name__)


def _added_fields(cls):
    """The fields `cls` declares that no dataclass base has (default changes excluded)."""
    inherited = {f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base)
                 for f in dataclasses.fields(base)}
    own = cls.__dict__.get("__annotations__", {})
    return [f.name for f in dataclasses.fields(cls) if f.name in own and f.name not in inherited
            and not f.name.startswith("_")]


@pytest.mark.parametrize("cls", _config_classes(), ids=lambda c: c.__name__)
def test_every_added_config_field_is_described_in_the_class_docstring(cls):
    doc = cls.__doc__ or ""
    missing = [name for name in _added_fields(cls)
               if not re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", doc)]
    assert missing == [], f"{cls.__name__}'s docstring does not describe {missing}"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_policy_docstrings_name_their_config_class(name):
    algo = get_algorithm_class(name)
    policy_cls = algo.default_policy_class
    config_cls = getattr(policy_cls, "config_class", None)
    if config_cls is None:
        pytest.skip(f"{policy_cls.__name__} has no config class")
    doc = policy_cls.__doc__ or ""
    assert f"`{config_cls.__name__}`" in doc or f"`{config_cls.__name__}`'s" in doc, (
        f"{policy_cls.__name__}'s docstring should say its config keys are "
        f"`{config_cls.__name__}`'s")
