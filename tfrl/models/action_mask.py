"""Built-in action masking: a Dict observation's `action_mask` entry masks the outputs.

When the raw observation space is a `Dict` with an entry under `model_config
["action_mask_key"]` (default "action_mask", the PettingZoo and RLlib convention) and the
action space is `Discrete` (or `MultiDiscrete`), the catalog wraps its default model in an
`ActionMaskModel`: the flat (preprocessed) observation is split into the mask and the rest,
the rest goes to the catalog's model for the Dict without the mask entry, and the model's
outputs (logits, or DQN's Q-values/advantages) are replaced by `masked_value(dtype)` where
the mask is 0. Every consumer of the outputs (sampling, argmax, logp, entropy, KL, the
losses, the numpy inference path and the exported SavedModel) thus sees masked outputs.

The masked entries are a large negative *finite* number (`-1e9` for float32), written with
`tf.where`: no `-inf`, no `log(0)`, so no NaN or inf reaches a loss or gradient (the
gradient of a masked entry is exactly 0). `-1e9` rather than the dtype's minimum keeps
products such as SAC's `alpha * log_prob` and sums over actions finite too. A masked
action's probability is `exp(-1e9 - max) = 0` exactly in float32.

A mask entry must be a `Box` or `MultiBinary` of shape `(num_actions,)` with values in
[0, 1] (1: allowed); anything else is refused when the model is built. A row whose mask
allows nothing leaves all outputs at the same masked value (a uniform distribution).

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Dict({"action_mask": gym.spaces.MultiBinary(3),
    ...                          "observation": gym.spaces.Box(-1, 1, (2,))})
    >>> action_mask_layout(space, gym.spaces.Discrete(3), {})
    (0, 3)
    >>> apply_action_mask_np(np.array([[1.0, 2.0, 3.0]], np.float32),
    ...                      np.array([[1.0, 0.0, 1.0]], np.float32)).tolist()
    [[1.0, -1000000000.0, 3.0]]
"""

import functools
from typing import Any, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.model_defaults import model_setting
from tfrl.models.preprocessors import get_preprocessor

#: The value of a masked output in float32/float64 (see the module docstring).
MASKED_VALUE = -1e9


def masked_value(dtype: Any) -> float:
    """The value masked outputs of `dtype` take: `-1e9`, or a quarter of the dtype's
    most negative value for narrower floats (float16: -16376)."""
    return float(max(MASKED_VALUE, tf.as_dtype(dtype).min / 4))


def action_mask_layout(obs_space: gym.Space, action_space: gym.Space,
                       model_config: Optional[dict] = None) -> Optional[Tuple[int, int]]:
    """`(start, stop)` of the action mask in a flat preprocessed observation, or None.

    None unless the raw space (`obs_space.original_space` if preprocessed) is a Dict with
    the `action_mask_key` entry and the action space is Discrete or MultiDiscrete.

    Raises:
        ValueError: For a mask entry that is not a Box/MultiBinary of shape
            `(num_actions,)` with values in [0, 1].
    """
    key = model_setting(model_config or {}, "action_mask_key")
    raw = getattr(obs_space, "original_space", obs_space)
    if key is None or not isinstance(raw, gym.spaces.Dict) or key not in raw.spaces:
        return None
    if isinstance(action_space, gym.spaces.Discrete):
        num_actions = int(action_space.n)
    elif isinstance(action_space, gym.spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
        num_actions = int(np.sum(action_space.nvec))
    else:
        return None
    check_mask_space(raw.spaces[key], num_actions, key)
    start = 0
    for child_key, child in raw.spaces.items():
        size = get_preprocessor(child)(child).size
        if child_key == key:
            return start, start + size
        start += size
    raise AssertionError("unreachable: the key is in the space")  # pragma: no cover


def check_mask_space(space: gym.Space, num_actions: int, key: str = "action_mask") -> None:
    """Raises a ValueError unless `space` can be an action mask for `num_actions` actions."""
    expected = (f"Expected a Box(0, 1, ({num_actions},)) or MultiBinary({num_actions}) "
                "(1: allowed, 0: masked)")
    if not isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        raise ValueError(
            f"The observation's {key!r} entry is the action mask and must be a Box or a "
            f"MultiBinary. Received: {space}. {expected}, or set model_config"
            "['action_mask_key'] to another key (None turns masking off).")
    if tuple(space.shape) != (num_actions,):
        raise ValueError(
            f"The action mask {key!r} needs one entry per action. Received: shape "
            f"{tuple(space.shape)} for {num_actions} actions ({space}). {expected}.")
    if isinstance(space, gym.spaces.Box) and (
            not np.issubdtype(space.dtype, np.number) and space.dtype != np.bool_
            or np.any(space.low < 0) or np.any(space.high > 1)):
        raise ValueError(
            f"The action mask {key!r} must hold 0/1 values. Received: {space} (dtype "
            f"{space.dtype}, low {np.min(space.low)}, high {np.max(space.high)}). {expected}.")


def without_mask(obs_space: gym.Space, model_config: Optional[dict] = None) -> gym.Space:
    """The raw Dict observation space without its action mask entry."""
    key = model_setting(model_config or {}, "action_mask_key")
    raw = getattr(obs_space, "original_space", obs_space)
    return gym.spaces.Dict({k: s for k, s in raw.spaces.items() if k != key})


def apply_action_mask(values: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """`values` `[..., n]` where `mask` `[..., n]` is > 0.5, else `masked_value`."""
    allowed = tf.cast(mask, tf.float32) > 0.5
    return tf.where(allowed, values, tf.constant(masked_value(values.dtype), values.dtype))


def apply_action_mask_np(values: np.ndarray, mask: np.ndarray, out: Optional[np.ndarray] = None
                         ) -> np.ndarray:
    """`apply_action_mask` in numpy (the same values, bit for bit); `out=values` masks in
    place."""
    if out is None:
        out = values.copy()
    np.copyto(out, _masked_value_np(values.dtype.str), where=mask <= 0.5)
    return out


@functools.lru_cache(maxsize=None)
def _masked_value_np(dtype: str) -> np.generic:
    return np.dtype(dtype).type(masked_value(np.dtype(dtype)))


def uniform_allowed_actions(allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row `[B]` (int64), uniform over the row's allowed actions (`allowed`
    `[B, n]` bool; action 0 for a row that allows none); one uniform draw per row.

    Example:
        >>> allowed = np.array([[False, True, False, True]] * 1000)
        >>> sorted(set(uniform_allowed_actions(allowed, np.random.default_rng(0)).tolist()))
        [1, 3]
    """
    counts = allowed.sum(axis=-1)  # [B]
    k = np.minimum((rng.random(len(allowed)) * counts).astype(np.int64),
                   np.maximum(counts - 1, 0))  # [B], the k-th allowed action
    return np.argmax(np.cumsum(allowed, axis=-1) > k[:, None], axis=-1).astype(np.int64)


class ActionMaskModel(keras.Model):
    """Runs `inner` on the observation without the mask and masks its outputs.

    Feed-forward call contract of `tfrl.models.tf.tf_model` (the outputs' first element,
    `dist_inputs`, is masked; the value passes through).

    Args:
        inner: The catalog model for the observation without the mask (flat input
            `[B, obs_dim - num_actions]`).
        start: Where the mask starts in the flat observation.
        stop: Where it ends (exclusive).
        name: The Keras model name.
    """

    is_recurrent = False

    def __init__(self, inner: keras.Model, start: int, stop: int, name: str = "action_mask"):
        super().__init__(name=name)
        self.inner = inner
        self.mask_start, self.mask_stop = int(start), int(stop)
        self.num_outputs = getattr(inner, "num_outputs", None)

    def split(self, obs: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(mask [B, n], rest [B, obs_dim - n])` of a flat observation batch."""
        obs = tf.convert_to_tensor(obs)
        start, stop = self.mask_start, self.mask_stop
        mask = obs[..., start:stop]
        # Only non-empty pieces: TFLite's concat misreads an empty one's shape once the
        # batch dimension is resized (the exported model's rows come out tripled).
        pieces = [piece for piece, size in ((obs[..., :start], start),
                                            (obs[..., stop:], obs.shape[-1] - stop)) if size]
        rest = (tf.concat(pieces, axis=-1) if len(pieces) > 1
                else pieces[0] if pieces else obs[..., :0])
        return mask, rest

    def unmasked(self, obs: Any, training: bool = False) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """`(dist_inputs, value, mask)`: the inner model's outputs before masking (for
        aggregations that must not see masked entries, e.g. DQN's dueling mean)."""
        mask, rest = self.split(obs)
        dist_inputs, value = self.inner(rest, training=training)
        return dist_inputs, value, mask

    def call(self, obs, training=False):
        dist_inputs, value, mask = self.unmasked(obs, training=training)
        return apply_action_mask(dist_inputs, mask), value

    def get_initial_state(self, batch_size: int = 1):
        """`[]`: feed-forward."""
        return []
