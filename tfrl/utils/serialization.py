"""gymnasium spaces as JSON-serializable dicts (RLlib's `ray.rllib.utils.serialization`).

`gym_space_to_dict(space)` turns a Box, Discrete, MultiDiscrete, MultiBinary, Tuple, Dict,
Text, or RLlib's Simplex, Repeated and FlexDict space into plain dicts, lists and numbers
(`json.dumps` writes infinite Box bounds as `Infinity`, which `json.loads` reads back);
`gym_space_from_dict` rebuilds the space. The `"space"` key names the kind as RLlib does
("box", "discrete", "multi-discrete", "multi-binary", "tuple", "dict", "text", "simplex",
"repeated", "flex_dict"). `space_to_dict`/`space_from_dict` also carry a preprocessed
space's `original_space`.

Example:
    >>> import json
    >>> box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    >>> gym_space_from_dict(json.loads(json.dumps(gym_space_to_dict(box)))) == box
    True
"""

from typing import Any, Dict

import gymnasium as gym
import numpy as np

from tfrl.utils.spaces.flexdict import FlexDict
from tfrl.utils.spaces.repeated import Repeated
from tfrl.utils.spaces.simplex import Simplex


def gym_space_to_dict(space: gym.Space) -> Dict[str, Any]:
    """A JSON-serializable dict describing `space` (see the module docstring).

    Raises:
        TypeError: For a space kind without a dict form.
    """
    if isinstance(space, Simplex):
        return {"space": "simplex", "shape": list(space.shape),
                "concentration": space.concentration.tolist(),
                "dtype": np.dtype(space.dtype).str}
    if isinstance(space, Repeated):
        return {"space": "repeated", "child_space": gym_space_to_dict(space.child_space),
                "max_len": space.max_len}
    if isinstance(space, FlexDict):
        return {"space": "flex_dict",
                "spaces": {k: gym_space_to_dict(s) for k, s in space.spaces.items()}}
    if isinstance(space, gym.spaces.Text):
        return {"space": "text", "min_length": space.min_length,
                "max_length": space.max_length, "charset": space.characters}
    if isinstance(space, gym.spaces.Box):
        return {"space": "box", "low": np.asarray(space.low).tolist(),
                "high": np.asarray(space.high).tolist(), "shape": list(space.shape),
                "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.Discrete):
        return {"space": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"space": "multi-discrete", "nvec": np.asarray(space.nvec).tolist(),
                "start": np.asarray(space.start).tolist(), "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"space": "multi-binary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, gym.spaces.Tuple):
        return {"space": "tuple", "spaces": [gym_space_to_dict(s) for s in space.spaces]}
    if isinstance(space, gym.spaces.Dict):
        return {"space": "dict",
                "spaces": {k: gym_space_to_dict(s) for k, s in space.spaces.items()}}
    raise TypeError(
        f"gym_space_to_dict() cannot serialize a {type(space).__name__} space. Supported: "
        "Box, Discrete, MultiDiscrete, MultiBinary, Tuple, Dict, Text, Simplex, Repeated "
        "and FlexDict.")


def gym_space_from_dict(d: Dict[str, Any]) -> gym.Space:
    """Rebuilds the space that `gym_space_to_dict` described.

    Raises:
        ValueError: If `d` is not such a dict.
    """
    kind = d.get("space") if isinstance(d, dict) else None
    if kind == "box":
        dtype = np.dtype(d["dtype"])
        shape = tuple(d["shape"])
        return gym.spaces.Box(low=np.asarray(d["low"], dtype).reshape(shape),
                              high=np.asarray(d["high"], dtype).reshape(shape), dtype=dtype)
    if kind == "discrete":
        return gym.spaces.Discrete(int(d["n"]), start=int(d.get("start", 0)))
    if kind == "multi-discrete":
        return gym.spaces.MultiDiscrete(np.asarray(d["nvec"]), dtype=np.dtype(d["dtype"]),
                                        start=np.asarray(d["start"]))
    if kind == "multi-binary":
        return gym.spaces.MultiBinary(d["n"])
    if kind == "tuple":
        return gym.spaces.Tuple([gym_space_from_dict(s) for s in d["spaces"]])
    if kind == "dict":
        return gym.spaces.Dict({k: gym_space_from_dict(s) for k, s in d["spaces"].items()})
    if kind == "text":
        return gym.spaces.Text(max_length=int(d["max_length"]),
                               min_length=int(d["min_length"]), charset=d["charset"])
    if kind == "simplex":
        return Simplex(tuple(d["shape"]), concentration=np.asarray(d["concentration"]),
                       dtype=np.dtype(d["dtype"]))
    if kind == "repeated":
        return Repeated(gym_space_from_dict(d["child_space"]), max_len=int(d["max_len"]))
    if kind == "flex_dict":
        return FlexDict({k: gym_space_from_dict(s) for k, s in d["spaces"].items()})
    raise ValueError(
        "gym_space_from_dict() needs a dict made by gym_space_to_dict(), with a 'space' key "
        "of 'box', 'discrete', 'multi-discrete', 'multi-binary', 'tuple', 'dict', 'text', "
        f"'simplex', 'repeated' or 'flex_dict'. Received: {d!r}.")


def space_to_dict(space: gym.Space) -> Dict[str, Any]:
    """`{"space": gym_space_to_dict(space)}`, plus `"original_space"` if the space carries
    one (a preprocessed space remembers the space it was flattened from)."""
    out = {"space": gym_space_to_dict(space)}
    original = getattr(space, "original_space", None)
    if original is not None:
        out["original_space"] = gym_space_to_dict(original)
    return out


def space_from_dict(d: Dict[str, Any]) -> gym.Space:
    """Rebuilds a space (and its `original_space`, if any) from `space_to_dict` output."""
    space = gym_space_from_dict(d["space"])
    if "original_space" in d:
        space.original_space = gym_space_from_dict(d["original_space"])
    return space
