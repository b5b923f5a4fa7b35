"""Observation preprocessors: turn env observations into what the models consume.

Discrete observations become one-hot vectors, Dict and Tuple observations one flat
float32 vector (their children preprocessed and concatenated in the space's order),
and Box observations pass through unchanged (image observations `[H, W, C]` stay
images). Everything runs on numpy; `transform_batch` handles a whole batch at once.

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Dict({"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(-1, 1, (2,))})
    >>> prep = get_preprocessor(space)(space)
    >>> prep.shape
    (5,)
    >>> prep.transform({"a": 1, "b": [0.5, -0.5]}).tolist()
    [0.0, 1.0, 0.0, 0.5, -0.5]
"""

from typing import Any, List, Optional, Tuple, Type

import gymnasium as gym
import numpy as np

from tfrl.models.model_defaults import model_setting
from tfrl.utils.spaces import space_utils


class Preprocessor:
    """Base class: maps observations of `obs_space` to arrays of shape `self.shape`.

    Args:
        obs_space: The (original) observation space.
        options: The model config (unused by the built-in preprocessors; kept for
            RLlib's signature).
    """

    def __init__(self, obs_space: gym.Space, options: Optional[dict] = None):
        self._obs_space = obs_space
        self._options = dict(options or {})
        self.shape: Tuple[int, ...] = self._init_shape(obs_space, self._options)
        self._size = int(np.prod(self.shape))

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Tuple[int, ...]:
        raise NotImplementedError

    def transform(self, observation: Any) -> np.ndarray:
        """Preprocesses one observation; returns an array of shape `self.shape`."""
        item = _as_space_item(observation, self._obs_space)
        batched = space_utils.to_numpy_batch([item], self._obs_space)
        return self.transform_batch(batched)[0]

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        """Preprocesses a batch (struct of arrays with a leading axis, or a list of obs).

        Returns:
            An array of shape `[B, *self.shape]`.
        """
        raise NotImplementedError

    def check_shape(self, observation: Any) -> None:
        """Raises ValueError if `observation` is not an item of the observation space."""
        if not self._obs_space.contains(_as_space_item(observation, self._obs_space)):
            raise ValueError(
                f"Observation outside the observation space. Received: observation="
                f"{observation!r}. Expected an item of {self._obs_space}. Check the env's "
                "observation_space or the observations it returns."
            )

    @property
    def size(self) -> int:
        """Number of scalars in one preprocessed observation."""
        return self._size

    @property
    def observation_space(self) -> gym.spaces.Box:
        """The space of preprocessed observations; `.original_space` is the input space."""
        space = gym.spaces.Box(-np.inf, np.inf, self.shape, np.float32)
        space.original_space = self._obs_space
        return space

    def _batch(self, obs_batch: Any) -> Any:
        if isinstance(obs_batch, list):
            return space_utils.to_numpy_batch(obs_batch, self._obs_space)
        return obs_batch


class NoPreprocessor(Preprocessor):
    """Passes Box (and MultiBinary) observations through, as the space's dtype."""

    def _init_shape(self, obs_space, options):
        return tuple(obs_space.shape)

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        # Cast to the space's dtype (no copy when it already matches; uint8 stays uint8).
        batch = np.asarray(self._batch(obs_batch), dtype=self._obs_space.dtype)
        if batch.shape[1:] != self.shape:
            raise ValueError(
                f"Observation batch of the wrong shape. Received: shape={batch.shape}. "
                f"Expected [B, {', '.join(map(str, self.shape))}] for {self._obs_space}."
            )
        return batch

    @property
    def observation_space(self) -> gym.Space:
        return self._obs_space


class OneHotPreprocessor(Preprocessor):
    """One-hot encodes Discrete (length n) and MultiDiscrete (length sum(nvec)) obs.

    A multi-dimensional MultiDiscrete (nvec of shape [d1, d2, ...]) is flattened in C
    order first, as RLlib does: one vector of length nvec.sum().
    """

    def _init_shape(self, obs_space, options):
        if isinstance(obs_space, gym.spaces.Discrete):
            return (int(obs_space.n),)
        return (int(np.sum(obs_space.nvec)),)

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        batch = np.asarray(self._batch(obs_batch))
        # A MultiDiscrete item has the rank of its nvec (multi-dimensional nvec allowed).
        item_shape = () if isinstance(self._obs_space, gym.spaces.Discrete) else tuple(
            self._obs_space.nvec.shape)
        if batch.ndim != len(item_shape) + 1:
            raise ValueError(
                f"Observation batch of the wrong rank. Received: shape={batch.shape}. "
                f"Expected rank {len(item_shape) + 1} "
                f"([B{''.join(', ' + str(d) for d in item_shape)}]) for {self._obs_space}."
            )
        return space_utils.one_hot(batch, self._obs_space)  # [B, size]

    @property
    def observation_space(self) -> gym.spaces.Box:
        space = gym.spaces.Box(0.0, 1.0, self.shape, np.float32)
        space.original_space = self._obs_space
        return space


class _FlatteningPreprocessor(Preprocessor):
    """Preprocesses each child, flattens it to `[B, -1]` and concatenates them."""

    def _children(self, obs_space) -> List[Tuple[Any, gym.Space]]:
        raise NotImplementedError

    def _init_shape(self, obs_space, options):
        self.preprocessors = [
            (key, get_preprocessor(child)(child, options))
            for key, child in self._children(obs_space)
        ]
        return (sum(p.size for _, p in self.preprocessors),)

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        batch = self._batch(obs_batch)
        parts = []
        for key, prep in self.preprocessors:
            try:
                child = batch[key]
            except (KeyError, IndexError, TypeError) as e:
                raise ValueError(
                    f"Observation batch does not match {self._obs_space}: no entry "
                    f"{key!r}. Received: {type(batch).__name__} "
                    f"{list(batch) if isinstance(batch, dict) else ''}. Expected a batch "
                    "structured like the space (dict/tuple of arrays) or a list of obs."
                ) from e
            out = np.asarray(prep.transform_batch(child), np.float32)
            parts.append(out.reshape(out.shape[0], -1))  # [B, child_size]
        return np.concatenate(parts, axis=-1)  # [B, size]


class DictFlatteningPreprocessor(_FlatteningPreprocessor):
    """Flattens Dict observations (children in the space's key order)."""

    def _children(self, obs_space):
        return list(obs_space.spaces.items())


class TupleFlatteningPreprocessor(_FlatteningPreprocessor):
    """Flattens Tuple observations (children in order)."""

    def _children(self, obs_space):
        return list(enumerate(obs_space.spaces))


ATARI_OBS_SHAPE = (210, 160, 3)
ATARI_RAM_OBS_SHAPE = (128,)


class GenericPixelPreprocessor(Preprocessor):
    """Raw Atari frames `[210, 160, 3]` -> cropped, area-resized `[dim, dim, C]` floats.

    Rows 25..185 are kept, the 160x160 crop is resized to `dim` x `dim` by area
    averaging, optionally averaged to one gray channel (`grayscale`), and scaled to
    `[-1, 1)` (`zero_mean`, the default) or `[0, 1]`. Options come from the model
    config keys `dim`, `grayscale`, `zero_mean`.
    """

    def _init_shape(self, obs_space, options):
        self._dim = int(model_setting(options, "dim"))
        self._grayscale = bool(model_setting(options, "grayscale"))
        self._zero_mean = bool(model_setting(options, "zero_mean"))
        self._rows = _area_weights(obs_space.shape[0] - 50, self._dim)  # [dim, 160]
        self._cols = _area_weights(obs_space.shape[1], self._dim)  # [dim, 160]
        return (self._dim, self._dim, 1 if self._grayscale else obs_space.shape[2])

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        batch = np.asarray(self._batch(obs_batch), np.float32)  # [B, 210, 160, 3]
        if batch.shape[1:] != tuple(self._obs_space.shape):
            raise ValueError(
                f"Observation batch of the wrong shape. Received: shape={batch.shape}. "
                f"Expected [B, {', '.join(map(str, self._obs_space.shape))}]."
            )
        crop = batch[:, 25:-25]  # [B, 160, 160, 3]
        rows = np.matmul(self._rows, crop.transpose(0, 3, 1, 2))  # [B, 3, d, 160]
        scaled = np.matmul(rows, self._cols.T).transpose(0, 2, 3, 1)  # [B, d, d, 3]
        if self._grayscale:
            scaled = scaled.mean(axis=-1, keepdims=True)  # [B, d, d, 1]
        if self._zero_mean:
            return ((scaled - 128.0) / 128.0).astype(np.float32)
        return (scaled / 255.0).astype(np.float32)


class AtariRamPreprocessor(Preprocessor):
    """Atari RAM observations `[128]` (bytes) -> floats in `[-1, 1)`."""

    def _init_shape(self, obs_space, options):
        return (128,)

    def transform_batch(self, obs_batch: Any) -> np.ndarray:
        batch = np.asarray(self._batch(obs_batch), np.float32)  # [B, 128]
        if batch.shape[1:] != (128,):
            raise ValueError(
                f"Observation batch of the wrong shape. Received: shape={batch.shape}. "
                "Expected [B, 128] (Atari RAM)."
            )
        return (batch - 128.0) / 128.0


def _area_weights(size_in: int, size_out: int) -> np.ndarray:
    """`[size_out, size_in]` weights averaging each output cell's input interval."""
    edges = np.arange(size_out + 1) * (size_in / size_out)  # output cell borders
    lo, hi = edges[:-1, None], edges[1:, None]  # [out, 1]
    pixel = np.arange(size_in)[None, :]  # [1, in]
    overlap = np.clip(np.minimum(hi, pixel + 1) - np.maximum(lo, pixel), 0.0, None)
    return (overlap / overlap.sum(axis=1, keepdims=True)).astype(np.float32)


def get_preprocessor(space: gym.Space) -> Type[Preprocessor]:
    """Returns the preprocessor class for an observation space.

    Args:
        space: A gymnasium space.

    Returns:
        `OneHotPreprocessor` for Discrete/MultiDiscrete, `DictFlatteningPreprocessor`
        and `TupleFlatteningPreprocessor` for Dict/Tuple, `GenericPixelPreprocessor`
        for raw Atari frames (uint8 `[210, 160, 3]`), `AtariRamPreprocessor` for Atari
        RAM (uint8 `[128]`), `NoPreprocessor` for other Box and MultiBinary spaces.

    Raises:
        ValueError: For other spaces (e.g. Text, Graph, Sequence).
    """
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return OneHotPreprocessor
    if isinstance(space, gym.spaces.Dict):
        return DictFlatteningPreprocessor
    if isinstance(space, gym.spaces.Tuple):
        return TupleFlatteningPreprocessor
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8:
        # Only byte-valued spaces: a float Box that happens to have 128 entries is not RAM.
        if space.shape == ATARI_OBS_SHAPE:
            return GenericPixelPreprocessor
        if space.shape == ATARI_RAM_OBS_SHAPE:
            return AtariRamPreprocessor
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        return NoPreprocessor
    raise ValueError(
        f"No preprocessor for observation space {space!r}. Expected Box, Discrete, "
        "MultiDiscrete, MultiBinary, or a Dict/Tuple of these. Wrap the env to map its "
        "observations into one of them."
    )


def _as_space_item(observation: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict) and isinstance(observation, dict):
        return {k: _as_space_item(observation.get(k), s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple) and isinstance(observation, (tuple, list)):
        return tuple(_as_space_item(o, s) for o, s in zip(observation, space.spaces))
    if isinstance(space, gym.spaces.Discrete):
        return observation
    if observation is None:
        return None
    return np.asarray(observation, dtype=getattr(space, "dtype", None))
