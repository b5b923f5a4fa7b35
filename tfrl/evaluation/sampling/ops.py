"""Small vectorized operations of the samplers: action unsquashing and clipping,
read-only actions for the env, reward clipping, checks of observations and rewards, and timing statistics.

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> unsquash = ActionProcessor(space, normalize=True, clip=False)
    >>> unsquash(np.array([[-1.0], [0.5], [3.0]])).tolist()
    [[-2.0], [1.0], [2.0]]
    >>> clip_rewards_array(np.array([0.3, -2.0, 0.0]), True).tolist()
    [1.0, -1.0, 0.0]
"""

import math
import time
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np
import tree

from tfrl.utils.spaces.space_utils import space_structure

_SIMPLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


class ActionProcessor:
    """Maps a batch of policy actions to what the env receives.

    `normalize`: Box leaves with finite bounds are unsquashed from [-1, 1]:
    `low + (a + 1) * (high - low) / 2`, then clipped to the bounds. `clip`: Box leaves
    are clipped to the bounds. Other leaves pass unchanged. The batch recorded for
    training keeps the policy's own actions.

    Args:
        space: The action space of one agent.
        normalize: Unsquash (the `normalize_actions` setting).
        clip: Clip (the `clip_actions` setting).
    """

    def __init__(self, space: gym.Space, normalize: bool, clip: bool):
        self.space = space
        self._leaves = _box_leaves(space)
        self.normalize = normalize and any(_bounded(b) for b in self._leaves if b is not None)
        self.clip = clip and any(b is not None for b in self._leaves)
        self.active = self.normalize or self.clip
        self._flat = isinstance(space, gym.spaces.Box)

    def __call__(self, actions: Any) -> Any:
        """Returns the processed `[B, ...]` batch (the input itself if nothing to do)."""
        if not self.active:
            return actions
        if self._flat:
            return self._leaf(self.space, actions)
        flat = [self._leaf(s, a) for s, a in zip(self._leaves, tree.flatten(actions))]
        return tree.unflatten_as(actions, flat)

    def _leaf(self, box: Optional[gym.spaces.Box], a: Any) -> Any:
        if box is None:
            return a
        a = np.asarray(a)
        if self.normalize and _bounded(box):
            a = box.low + (a + 1.0) * (box.high - box.low) / 2.0
            return np.clip(a, box.low, box.high).astype(box.dtype, copy=False)
        if self.clip:
            return np.clip(a, box.low, box.high).astype(box.dtype, copy=False)
        return a


def read_only(action: Any) -> Any:
    """A read-only view of an array action (RLlib hands envs immutable actions), so that
    an env that changes the action it got cannot change the policy's action in the
    batch; a view, not a copy. Other values come back unchanged."""
    if isinstance(action, np.ndarray):
        action = action.view()
        action.flags.writeable = False
    return action


def logged_action(off_policy: Optional[dict], env_id: Any, agent_id: Any,
                  computed: Any) -> Any:
    """The action to record for an agent: the one its ExternalEnv logged this poll
    (`log_action`, chosen off-policy by the simulator), else the policy's `computed`."""
    logged = off_policy.get(env_id, {}).get(agent_id) if off_policy else None
    return computed if logged is None else logged


def unsquash_and_clip(action: Any, space: gym.Space, unsquash: bool, clip: bool) -> Any:
    """Maps one (unbatched) action of bounded Box spaces from [-1, 1] to the bounds
    (`unsquash`) and/or clips it into the bounds (`clip`), as `ActionProcessor` does for
    the sampler's batches (`Algorithm.compute_single_action`)."""
    spaces = tree.flatten(space_structure(space))
    actions = tree.flatten(action)
    out = []
    for a, s in zip(actions, spaces):
        if isinstance(s, gym.spaces.Box) and np.all(np.isfinite(s.low)) and np.all(
                np.isfinite(s.high)):
            a = np.asarray(a)
            if unsquash:
                a = s.low + (np.clip(a, -1.0, 1.0) + 1.0) * (s.high - s.low) / 2.0
            elif clip:
                a = np.clip(a, s.low, s.high)
            a = a.astype(s.dtype)
        out.append(a)
    return tree.unflatten_as(action, out) if len(out) == len(actions) else action


def _bounded(box: gym.spaces.Box) -> bool:
    return bool(np.all(np.isfinite(box.low)) and np.all(np.isfinite(box.high)))


def _box_leaves(space: gym.Space) -> list:
    """The space's leaves in `tree.flatten` order: the Box, or None for other leaves."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in _box_leaves(space.spaces[key])]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in _box_leaves(sub)]
    return [space if isinstance(space, gym.spaces.Box) else None]


def clip_rewards_array(rewards: np.ndarray, clip_rewards: Union[bool, float, None]) -> np.ndarray:
    """`True`: the sign of each reward (RLlib's choice); a number c: clip to
    [-c, c]; False/None: unchanged. Returns float32."""
    if clip_rewards is True:
        rewards = np.sign(rewards)
    elif clip_rewards:
        rewards = np.clip(rewards, -clip_rewards, clip_rewards)
    return np.asarray(rewards, np.float32)


# The largest reward the batches can hold: rewards are stored as float32, so a float64
# reward beyond it (finite in Python) would become inf there.
REWARD_LIMIT = float(np.finfo(np.float32).max)
_SQUARED_LIMIT = REWARD_LIMIT * REWARD_LIMIT


def check_reward(reward: Any, env_id: Any, agent_id: Any, step: int) -> None:
    """Raises ValueError for a NaN or infinite reward, or one that overflows float32 (the
    dtype batches store rewards in).

    Raises:
        ValueError: Naming the env id, agent id, step and the reward.
    """
    try:
        ok = abs(reward) <= REWARD_LIMIT  # False for NaN
    except TypeError:
        raise ValueError(
            f"Reward of env {env_id!r}, agent {agent_id!r} at episode step {step} is not a "
            f"number. Received: reward={reward!r}. Return a float reward from step()."
        ) from None
    if not ok:
        what = ("is not finite" if not math.isfinite(reward) else
                f"overflows float32, the dtype batches store rewards in (largest "
                f"{REWARD_LIMIT:.8g})")
        raise ValueError(
            f"Reward of env {env_id!r}, agent {agent_id!r} at episode step {step} {what}. "
            f"Received: reward={reward!r}. Fix the env's reward computation (e.g. a "
            "division by zero or an overflow), or wrap the env to replace or scale such "
            "rewards."
        )


def check_rewards_array(rewards: np.ndarray, env_ids: Any, steps: np.ndarray) -> None:
    """`check_reward` for a batch of single-agent rewards (a few numpy calls if all fine)."""
    bad = ~(np.abs(rewards) <= REWARD_LIMIT)  # NaN, inf, beyond float32
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        check_reward(float(rewards[i]), int(env_ids[i]), "agent0", int(steps[i]))


def rewards_may_be_bad(rewards: np.ndarray) -> bool:
    """A one-call screen for `check_rewards_array`: False only if every reward is finite
    and fits float32 (the sum of squares stays finite and small; NaN, inf or one reward
    beyond float32's range make it large or NaN)."""
    squares = float(np.dot(rewards, rewards))  # a Python float: compared in float64
    return not squares <= _SQUARED_LIMIT


class ObservationChecker:
    """Checks batches of raw observations against a space: structure, shape, dtype
    kind and bounds, in a few numpy calls per batch.

    Args:
        space: The (original) observation space of the policy.
    """

    def __init__(self, space: gym.Space):
        self.space = space
        self._box = None
        if isinstance(space, gym.spaces.Box):
            self._box = (tuple(space.shape), *_storable_bounds(space))

    def first_error(self, obs_batch: Any) -> Optional[tuple]:
        """`(row, reason)` of the first bad observation in the `[B, ...]` batch, or None."""
        return _batch_error(self.space, obs_batch, "")

    def check(self, obs_batch: Any, describe_row) -> None:
        """Raises ValueError if an observation of the batch is not in the space.

        Args:
            obs_batch: `[B, ...]` observations (a struct of such for Dict/Tuple).
            describe_row: `row -> (text naming env and agent, raw observation)`.
        """
        box = self._box
        if (box is not None and isinstance(obs_batch, np.ndarray) and obs_batch.shape[1:] == box[0]
                and obs_batch.dtype.kind in "biuf" and np.count_nonzero(
                    (obs_batch >= box[1]) & (obs_batch <= box[2])) == obs_batch.size):
            return  # the common case, in four numpy calls (NaN fails the comparisons)
        error = _batch_error(self.space, obs_batch, "")
        if error is not None:
            row, reason = error
            where, value = describe_row(row)
            text = repr(value)
            text = text if len(text) <= 200 else text[:197] + "..."
            raise ValueError(
                f"Observation of {where} is outside the observation space ({reason}). "
                f"Received: observation={text}. Expected an element of {self.space}. Fix "
                "the env's observation_space (e.g. widen its bounds or change its dtype) "
                "or the observations it returns."
            )


def _storable_bounds(space: gym.spaces.Box) -> tuple:
    """`(low, high)` of a Box, for float dtypes narrowed to the dtype's finite range: an
    observation must be a finite number that its dtype holds (a float64 1e39, finite in
    Python, would be inf in float32), whatever the bounds say."""
    if space.dtype.kind != "f":
        return space.low, space.high
    limit = np.finfo(space.dtype).max
    return np.maximum(space.low, -limit), np.minimum(space.high, limit)


def _batch_error(space: gym.Space, batch: Any, path: str) -> Optional[tuple]:
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(batch, dict) or set(batch) != set(space.spaces):
            return 0, f"expected a dict with keys {sorted(space.spaces)}"
        for key, sub in space.spaces.items():
            error = _batch_error(sub, batch[key], f"{path}[{key!r}]")
            if error is not None:
                return error
        return None
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(batch, (tuple, list)) or len(batch) != len(space.spaces):
            return 0, f"expected a tuple of {len(space.spaces)} items"
        for i, sub in enumerate(space.spaces):
            error = _batch_error(sub, batch[i], f"{path}[{i}]")
            if error is not None:
                return error
        return None
    if not isinstance(space, _SIMPLE):
        return None
    arr = np.asarray(batch)
    where = f"observation{path}"
    if arr.dtype.kind not in "biuf":
        return 0, f"{where} has dtype {arr.dtype}, expected numbers of dtype {space.dtype}"
    if arr.shape[1:] != tuple(space.shape):
        return 0, f"{where} has shape {arr.shape[1:]}, expected {tuple(space.shape)}"
    if isinstance(space, gym.spaces.Box):
        low, high = _storable_bounds(space)
        bad = ~((arr >= low) & (arr <= high))
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            value = arr[index].item()
            element = f"{where}{list(index[1:]) if index[1:] else ''} = {value!r}"
            if space.dtype.kind == "f" and np.isfinite(value) and (
                    space.low.min() <= value <= space.high.max()):
                what = (f"{element}, which overflows {space.dtype.name} (largest "
                        f"{float(np.finfo(space.dtype).max):.8g}), the dtype of the space")
            elif space.dtype.kind == "f" and not np.isfinite(value):
                what = (f"{element}, which is not a finite {space.dtype.name} number (the "
                        f"env returned NaN, inf, or a number beyond {space.dtype.name}'s "
                        "range, such as 1e39 for float32)")
            else:
                what = (f"{element}, outside the bounds [{space.low.min()}, "
                        f"{space.high.max()}]")
            return index[0], what
        return None
    elif isinstance(space, gym.spaces.Discrete):
        bad = (arr < space.start) | (arr >= space.start + space.n) | (arr != np.floor(arr))
        what = f"not an integer in [{space.start}, {space.start + space.n})"
    elif isinstance(space, gym.spaces.MultiDiscrete):
        bad = (arr < space.start) | (arr >= space.start + space.nvec) | (arr != np.floor(arr))
        what = "outside [start, start + nvec)"
    else:
        bad = (arr != 0) & (arr != 1)
        what = "not 0 or 1"
    if bad.any():
        row = int(np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))[0])
        return row, f"{where} is {what}"
    return None


class PerfStats:
    """Sampler timings; `get()` gives the means per loop iteration in milliseconds."""

    def __init__(self):
        self.iters = 0
        self.env_wait_time = 0.0
        self.raw_obs_processing_time = 0.0
        self.inference_time = 0.0
        self.action_processing_time = 0.0

    def get(self) -> dict:
        """`mean_env_wait_ms`, `mean_raw_obs_processing_ms`, `mean_inference_ms`,
        `mean_action_processing_ms`."""
        factor = 1000.0 / max(self.iters, 1)
        return {
            "mean_env_wait_ms": self.env_wait_time * factor,
            "mean_raw_obs_processing_ms": self.raw_obs_processing_time * factor,
            "mean_inference_ms": self.inference_time * factor,
            "mean_action_processing_ms": self.action_processing_time * factor,
        }


now = time.perf_counter
