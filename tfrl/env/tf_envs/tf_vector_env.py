"""TFVectorEnv: `num_envs` copies of an environment whose state is a few tensors.

A TF-native env is pure: `reset(seed)` builds a state, `step(state, action)` returns the
next state and the step's results, and nothing else changes. The state is a small
`TFEnvState` of tensors (the physics of every sub-env, its step counter and the RNG key
for the resets), so a whole rollout can run inside one `tf.function` (also with
`jit_compile=True`) as a loop that carries it, and the same key gives the same rollout.

Auto-reset (same-step): on the step that ends a sub-env's episode (terminated or
truncated), that sub-env restarts at once: `obs` is the first observation of its new
episode, `final_obs` the last observation of the episode that ended (for the
value bootstrap of a truncated episode), and its step counter is back to 0. For the
other sub-envs `final_obs` equals `obs`. The next `step` acts in the new episode.

Rewards, `terminated` and `truncated` belong to the transition into `final_obs`; a
truncated (not terminated) episode is bootstrapped from the value of `final_obs`.

Truncation follows gymnasium's `TimeLimit`: `truncated` is True on the step that makes
the episode `max_episode_steps` long, whether or not the env also terminates there (both
can be True; a terminated episode is not bootstrapped, whatever `truncated` says).

`reset`, `step`, `make_state` and `observe` hold no Python control flow on tensors and
are not converted by AutoGraph: a `tf.function` that calls them traces them as they are
(AutoGraph conversion tripled the tracing time of an Acrobot rollout). Draws use the
Philox algorithm, so a key gives the same resets with and without XLA.

Example:
    >>> import tensorflow as tf
    >>> from tfrl.env.tf_envs.cartpole import TFCartPole
    >>> env = TFCartPole(num_envs=3, max_episode_steps=2)
    >>> state, obs = env.reset(seed=0)
    >>> obs.shape, state.elapsed_steps.numpy()
    (TensorShape([3, 4]), array([0, 0, 0], dtype=int32))
    >>> step = env.step(state, tf.constant([0, 1, 1]))
    >>> step.reward.numpy(), step.truncated.numpy(), step.state.elapsed_steps.numpy()
    (array([1., 1., 1.], dtype=float32), array([False, False, False]),
     array([1, 1, 1], dtype=int32))
    >>> step = env.step(step.state, tf.constant([0, 1, 1]))
    >>> step.truncated.numpy(), step.state.elapsed_steps.numpy()
    (array([ True,  True,  True]), array([0, 0, 0], dtype=int32))
"""

import copy
from typing import NamedTuple, Optional, Tuple, Union

import gymnasium as gym
import numpy as np
import tensorflow as tf

# A seed or a stateless RNG key: an int64 tensor of shape [2] (`tf.random.stateless_*`'s
# `seed`).
Seed = Union[int, np.integer, tf.Tensor, np.ndarray]
# [N] integer or [N, 1] float actions: a tensor, or anything tf.convert_to_tensor takes.
Action = Union[tf.Tensor, np.ndarray, list]

# The stateless RNG algorithm of every draw: fixed, because "auto_select" picks another
# algorithm under XLA, and a key must give the same resets with and without XLA.
RNG_ALG = "philox"


class TFEnvState(NamedTuple):
    """The whole state of a TF vector env (a nest of tensors: a loop can carry it).

    Attributes:
        physics: [N, D] the state of each sub-env, one row per sub-env, laid out as
            gymnasium's `env.unwrapped.state` of the same env (see each env's class).
        elapsed_steps: [N] int32 steps taken in each sub-env's current episode
            (gymnasium `TimeLimit`'s counter).
        key: [2] int64 the stateless RNG key for the next resets.
    """

    physics: tf.Tensor
    elapsed_steps: tf.Tensor
    key: tf.Tensor


class TFEnvStep(NamedTuple):
    """What `TFVectorEnv.step` returns (N = num_envs).

    Attributes:
        state: The next `TFEnvState` (ended sub-envs already reset).
        obs: [N, ...] float32 the observation to act on next (the first observation of
            a new episode where one ended).
        reward: [N] float32 the step's reward, as gymnasium gives it.
        terminated: [N] bool the episode reached a terminal state.
        truncated: [N] bool the episode hit `max_episode_steps`.
        final_obs: [N, ...] float32 the observation the step reached, before any reset:
            the last observation of an ended episode, else equal to `obs`.
    """

    state: TFEnvState
    obs: tf.Tensor
    reward: tf.Tensor
    terminated: tf.Tensor
    truncated: tf.Tensor
    final_obs: tf.Tensor


class TFVectorEnv:
    """Base class of the TF-native vector envs: auto-reset, time limit, input checks.

    A subclass sets `env_id`, `physics_size`, `default_max_episode_steps`,
    `gymnasium_dtype`, the spaces, and three pure batched functions:
    `_initial_physics(key)`, `_dynamics(physics, action)` and `_observe(physics)`.

    `observation_space` and `action_space` are one sub-env's spaces (gymnasium's, as
    in tfrl's `VectorEnv`); batches add a leading [num_envs] dimension.

    Args:
        num_envs: How many sub-envs to step together (an int >= 1).
        max_episode_steps: The time limit (gymnasium's `max_episode_steps`); None for
            the registered default of the gymnasium id.
        dtype: The float dtype of the physics. None (default) computes as gymnasium
            does (float64 for all but MountainCarContinuous, which keeps float32), so
            that trajectories match gymnasium's to float32 rounding. `tf.float32`
            everywhere is faster on accelerators; one step then agrees with
            gymnasium's to a few 1e-6 (relative), and long trajectories drift apart as
            float32 rounding accumulates.
    """

    env_id: str = ""
    physics_size: int = 0
    default_max_episode_steps: int = 0
    gymnasium_dtype: tf.DType = tf.float64
    observation_space: gym.spaces.Box
    action_space: gym.spaces.Space

    def __init__(self, num_envs: int, max_episode_steps: Optional[int] = None,
                 dtype: Optional[Union[str, tf.DType]] = None):
        self.num_envs = _positive_int("num_envs", num_envs)
        self.max_episode_steps = (self.default_max_episode_steps if max_episode_steps is None
                                  else _positive_int("max_episode_steps", max_episode_steps))
        if dtype is not None and dtype not in ("float32", "float64", tf.float32, tf.float64):
            raise ValueError(f"dtype must be tf.float32, tf.float64 or None (gymnasium's). "
                             f"Received: dtype={dtype!r}.")
        self.dtype = self.gymnasium_dtype if dtype is None else tf.as_dtype(dtype)
        # Each env its own space objects: a space holds an RNG (`space.seed()`).
        self.observation_space = copy.deepcopy(type(self).observation_space)
        self.action_space = copy.deepcopy(type(self).action_space)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env_id}, num_envs={self.num_envs})"

    # ---- the public, pure API --------------------------------------------------

    @tf.autograph.experimental.do_not_convert
    def reset(self, seed: Seed) -> Tuple[TFEnvState, tf.Tensor]:
        """Starts all sub-envs; returns the state and the [N, ...] first observations.

        Args:
            seed: A Python int, a scalar integer tensor, or a [2] integer key.
        """
        key, reset_key = _split(_key(seed))
        state = TFEnvState(physics=self._initial_physics(reset_key),
                           elapsed_steps=tf.zeros([self.num_envs], tf.int32), key=key)
        return state, self._observe(state.physics)

    @tf.autograph.experimental.do_not_convert
    def step(self, state: TFEnvState, action: Action) -> TFEnvStep:
        """Steps every sub-env once and resets the ones whose episode ended.

        Args:
            state: The `TFEnvState` from `reset`, `step` or `make_state`.
            action: [N] integers for a discrete action space, [N, 1] floats for a Box
                one. Values outside the space are checked only when run eagerly.
        """
        self._check_state(state)
        action = self._check_action(action)
        physics, reward, terminated = self._dynamics(state.physics, action)
        elapsed_steps = state.elapsed_steps + 1
        truncated = elapsed_steps >= self.max_episode_steps
        final_obs = self._observe(physics)
        done = tf.logical_or(terminated, truncated)
        key, reset_key = _split(state.key)
        physics = tf.where(done[:, None], self._initial_physics(reset_key), physics)
        elapsed_steps = tf.where(done, tf.zeros_like(elapsed_steps), elapsed_steps)
        obs = tf.where(done[:, None], self._observe(physics), final_obs)
        return TFEnvStep(state=TFEnvState(physics, elapsed_steps, key), obs=obs,
                         reward=tf.cast(reward, tf.float32), terminated=terminated,
                         truncated=truncated, final_obs=final_obs)

    @tf.autograph.experimental.do_not_convert
    def make_state(self, physics: Union[tf.Tensor, np.ndarray, list],
                   elapsed_steps: Optional[Union[tf.Tensor, np.ndarray, list]] = None,
                   seed: Seed = 0) -> TFEnvState:
        """A state from given arrays (e.g. gymnasium's `env.unwrapped.state` rows).

        A state is read the same way: `state.physics.numpy()` holds those rows.

        Args:
            physics: [N, D] sub-env states, laid out as gymnasium's `unwrapped.state`.
            elapsed_steps: [N] steps already taken in each episode; None for zeros.
            seed: The seed or [2] key of the later resets.
        """
        # dtype_hint: Python floats become float64 (not float32) for a float64 env.
        physics = tf.cast(tf.convert_to_tensor(physics, dtype_hint=self.dtype), self.dtype)
        if not physics.shape.is_compatible_with([self.num_envs, self.physics_size]):
            raise ValueError(
                f"{self.env_id}'s physics has shape [num_envs, {self.physics_size}] = "
                f"[{self.num_envs}, {self.physics_size}]. Received: shape "
                f"{physics.shape.as_list()}.")
        if elapsed_steps is None:
            elapsed_steps = tf.zeros([self.num_envs], tf.int32)
        elapsed_steps = tf.cast(tf.convert_to_tensor(elapsed_steps), tf.int32)
        if not elapsed_steps.shape.is_compatible_with([self.num_envs]):
            raise ValueError(f"elapsed_steps has shape [num_envs] = [{self.num_envs}]. "
                             f"Received: shape {elapsed_steps.shape.as_list()}.")
        return TFEnvState(physics=physics, elapsed_steps=elapsed_steps, key=_key(seed))

    @tf.autograph.experimental.do_not_convert
    def observe(self, state: TFEnvState) -> tf.Tensor:
        """The [N, ...] float32 observations of a state."""
        self._check_state(state)
        return self._observe(state.physics)

    # ---- what a subclass defines (pure, batched over N) ------------------------

    def _initial_physics(self, key: tf.Tensor) -> tf.Tensor:
        """[N, D] start states drawn with the stateless `key` (gymnasium's reset)."""
        raise NotImplementedError

    def _dynamics(self, physics: tf.Tensor, action: tf.Tensor
                  ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """One gymnasium step: (next physics [N, D], reward [N], terminated [N])."""
        raise NotImplementedError

    def _observe(self, physics: tf.Tensor) -> tf.Tensor:
        """[N, ...] float32 observations of physics [N, D]."""
        raise NotImplementedError

    # ---- input checks (at trace time, or eagerly) -------------------------------

    def _check_state(self, state) -> None:
        if not isinstance(state, TFEnvState):
            raise TypeError(f"state must be the TFEnvState of reset(), step() or "
                            f"make_state(). Received: {type(state).__name__}.")
        if not state.physics.shape.is_compatible_with([self.num_envs, self.physics_size]):
            raise ValueError(
                f"The state does not belong to {self!r}: its physics has shape "
                f"{state.physics.shape.as_list()}, expected [{self.num_envs}, "
                f"{self.physics_size}].")
        if state.physics.dtype != self.dtype:
            raise TypeError(f"The state's physics is {state.physics.dtype.name}; {self!r} "
                            f"computes in {self.dtype.name}. Build the state with this env's "
                            f"reset() or make_state().")

    def _check_action(self, action: Action) -> tf.Tensor:
        action = tf.convert_to_tensor(action)
        discrete = isinstance(self.action_space, gym.spaces.Discrete)
        shape = [self.num_envs] if discrete else [self.num_envs, *self.action_space.shape]
        kind = "integers" if discrete else "floats"
        if discrete and not action.dtype.is_integer:
            raise TypeError(
                f"{self.env_id} takes [num_envs] integer actions. Received: dtype "
                f"{action.dtype.name}. Cast them, e.g. tf.cast(action, tf.int32).")
        if not discrete and not action.dtype.is_floating:
            raise TypeError(
                f"{self.env_id} takes [num_envs, {self.action_space.shape[0]}] float "
                f"actions. Received: dtype {action.dtype.name}. Cast them, e.g. "
                f"tf.cast(action, tf.float32).")
        if not action.shape.is_compatible_with(shape):
            raise ValueError(f"{self.env_id} with num_envs={self.num_envs} takes actions of "
                             f"shape {shape} ({kind}). Received: shape {action.shape.as_list()}.")
        if discrete and tf.executing_eagerly():
            values = action.numpy()
            if np.any((values < 0) | (values >= self.action_space.n)):
                raise ValueError(f"{self.env_id}'s actions are in {self.action_space}. "
                                 f"Received: {values.tolist()}.")
        return tf.cast(action, tf.int32 if discrete else tf.float32)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1. Received: {name}={value!r}.")
    return int(value)


def _key(seed: Seed) -> tf.Tensor:
    """A [2] int64 stateless key from an int, a scalar integer tensor or a [2] key."""
    if isinstance(seed, (bool, float)) or seed is None:
        raise TypeError(f"seed must be an int, a scalar integer tensor or a [2] integer "
                        f"key. Received: seed={seed!r}.")
    seed = tf.convert_to_tensor(seed)
    if not seed.dtype.is_integer or seed.shape.rank not in (0, 1) or (
            seed.shape.rank == 1 and seed.shape[0] != 2):
        raise ValueError(f"seed must be an int, a scalar integer tensor or a [2] integer "
                         f"key. Received: {seed.dtype.name} tensor of shape "
                         f"{seed.shape.as_list()}.")
    seed = tf.cast(seed, tf.int64)
    return tf.stack([seed, tf.zeros([], tf.int64)]) if seed.shape.rank == 0 else seed


def _split(key: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """Two new independent keys from `key`."""
    keys = tf.random.experimental.stateless_split(key, num=2, alg=RNG_ALG)
    return keys[0], keys[1]
