"""FlexDict: a Dict space filled key by key (RLlib's `ray.rllib.utils.spaces.flexdict`)."""

from typing import Any, Dict, Optional

import gymnasium as gym


class FlexDict(gym.spaces.Dict):
    """A `gymnasium.spaces.Dict` that may start empty and take sub-spaces by assignment.

    Args:
        spaces: Initial key -> space mapping (optional).
        **spaces_kwargs: More key -> space pairs.

    Example:
        >>> space = FlexDict({})
        >>> space["a"] = gym.spaces.Discrete(2)
        >>> list(space.spaces)
        ['a']
    """

    def __init__(self, spaces: Optional[Dict[str, gym.Space]] = None, **spaces_kwargs: Any):
        super().__init__(spaces or {}, **spaces_kwargs)

    def __repr__(self) -> str:
        return "FlexDict(" + ", ".join(f"{k}: {s}" for k, s in self.spaces.items()) + ")"
