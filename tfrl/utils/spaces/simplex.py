"""Simplex: a space of probability vectors (RLlib's `ray.rllib.utils.spaces.simplex`)."""

from typing import Any, Optional, Sequence

import gymnasium as gym
import numpy as np


class Simplex(gym.Space):
    """Points on the probability simplex: the last axis is non-negative and sums to 1.

    Args:
        shape: Shape of one item; the last axis is the simplex's dimension.
        concentration: Dirichlet concentration used by `sample()` (default: all ones,
            i.e. uniform on the simplex): one value per entry of the last axis (shape
            `(dim,)`, shared by all simplices), or, as RLlib checks it, one value per
            simplex (shape `shape[:-1]`, a symmetric Dirichlet for each).
        dtype: Item dtype.
        seed: Seed of the space's RNG.

    Raises:
        ValueError: If `concentration` does not have one value per simplex entry.

    Example:
        >>> space = Simplex((2, 3), seed=0)
        >>> sample = space.sample()
        >>> sample.shape, bool(np.allclose(sample.sum(-1), 1.0)), space.contains(sample)
        ((2, 3), True, True)
    """

    def __init__(self, shape: Sequence[int], concentration: Optional[Any] = None,
                 dtype: Any = np.float32, seed: Optional[int] = None):
        shape = tuple(int(s) for s in shape)
        super().__init__(shape, dtype, seed)
        self.dim = shape[-1]
        if concentration is None:
            concentration = np.ones(self.dim)
        self.concentration = np.asarray(concentration, dtype=np.float64)
        if self.concentration.shape not in ((self.dim,), shape[:-1]):
            raise ValueError(
                "Simplex(concentration=...) needs one value per simplex entry (shape "
                f"({self.dim},)) or one per simplex (shape {shape[:-1]}); received shape "
                f"{self.concentration.shape}.")

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """A Dirichlet(`concentration`) draw for every simplex of the item."""
        lead = self.shape[:-1]
        if self.concentration.shape == (self.dim,):
            draws = self.np_random.dirichlet(self.concentration, size=lead if lead else None)
        else:  # One symmetric Dirichlet per simplex.
            draws = np.stack([self.np_random.dirichlet(np.full(self.dim, c))
                              for c in self.concentration.reshape(-1)])
        return np.asarray(draws, dtype=self.dtype).reshape(self.shape)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(x.shape == self.shape and np.all(x >= 0)
                    and np.allclose(np.sum(x, axis=-1), 1.0, atol=1e-4))

    @property
    def is_np_flattenable(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Simplex({self.shape}; {self.concentration.tolist()})"

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Simplex) and self.shape == other.shape
                and self.dtype == other.dtype
                and self.concentration.shape == other.concentration.shape
                and np.allclose(self.concentration, other.concentration))
