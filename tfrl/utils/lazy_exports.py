"""Lazy package exports: names a package re-exports, imported on first access.

A package `__init__` lists, per defining module, the names it re-exports, and gets a
module-level `__getattr__` (PEP 562) that imports the defining module only when one
of its names is first used, so importing the package itself stays cheap (no
TensorFlow), plus the matching `__all__`.

Example:
    >>> __getattr__, __all__ = lazy_exports("mypkg", {"math": ["sqrt", "pi"]})
    >>> __all__, __getattr__("sqrt")(16.0)
    (['pi', 'sqrt'], 4.0)
    >>> __getattr__("nope")
    Traceback (most recent call last):
    ...
    AttributeError: module 'mypkg' has no attribute 'nope'
"""

import importlib
from typing import Any, Callable, List, Mapping, Sequence, Tuple


def lazy_exports(module_name: str, exports: Mapping[str, Sequence[str]]
                 ) -> Tuple[Callable[[str], Any], List[str]]:
    """A package's lazy `__getattr__` and its `__all__`.

    Args:
        module_name: The package's `__name__` (for the AttributeError message).
        exports: Defining module -> the names the package re-exports from it.

    Returns:
        `(__getattr__, __all__)`: the function to assign to the package's
        `__getattr__` (it imports the defining module of a listed name and returns
        the name's value; other names raise `AttributeError`, as Python does), and
        the sorted list of the names.

    Raises:
        ValueError: If a name is listed under two modules.
    """
    where = {}
    for module, names in exports.items():
        for name in names:
            if name in where:
                raise ValueError(
                    f"{module_name} exports {name!r} from two modules: {where[name]!r} and "
                    f"{module!r}. List each name under the one module that defines it.")
            where[name] = module

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__, sorted(where)
