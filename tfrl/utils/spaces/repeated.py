"""Repeated: a variable-length list of items of one space (RLlib's
`ray.rllib.utils.spaces.repeated`)."""

from typing import Any, List, Optional

import gymnasium as gym
import numpy as np

from tfrl.utils.checks import check_int


class Repeated(gym.Space):
    """Lists of 0 to `max_len` items, each an item of `child_space`.

    Args:
        child_space: The space of one list element.
        max_len: The longest list.
        seed: Seed of the space's RNG (and the child space's).

    Raises:
        TypeError: If `child_space` is not a gymnasium space.
        ValueError: If `max_len` is not a positive int.

    Example:
        >>> space = Repeated(gym.spaces.Discrete(3), max_len=4, seed=0)
        >>> items = space.sample()
        >>> len(items) <= 4 and space.contains(items)
        True
    """

    def __init__(self, child_space: gym.Space, max_len: int, seed: Optional[int] = None):
        if not isinstance(child_space, gym.Space):
            raise TypeError(
                "Repeated(child_space=...) needs a gymnasium space; received "
                f"{type(child_space).__name__}.")
        check_int(max_len, "Repeated(max_len=...)", 1)
        super().__init__(None, None, seed)
        self.child_space = child_space
        self.max_len = int(max_len)
        if seed is not None:
            child_space.seed(seed)

    def sample(self, mask: Any = None, probability: Any = None) -> List[Any]:
        """A list of 1 to `max_len` child samples."""
        length = int(self.np_random.integers(1, self.max_len + 1))
        return [self.child_space.sample() for _ in range(length)]

    def contains(self, x: Any) -> bool:
        return (isinstance(x, (list, tuple, np.ndarray)) and len(x) <= self.max_len
                and all(self.child_space.contains(item) for item in x))

    def __repr__(self) -> str:
        return f"Repeated({self.child_space}, {self.max_len})"

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Repeated) and self.max_len == other.max_len
                and self.child_space == other.child_space)
