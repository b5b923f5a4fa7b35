"""SingleAgentEpisode: one agent's (chunk of an) episode, fed by gymnasium's reset/step.

Every data column (observations, infos, actions, rewards, each extra model output) is
an `InfiniteLookbackBuffer`. A chunk may start with a lookback region of earlier steps
that getters can see but that is not part of the chunk (`len()`, `get_return()`).
An episode always holds one observation (and info) more than actions and rewards.

Example:
    >>> episode = SingleAgentEpisode()
    >>> episode.add_env_reset(0)
    >>> for t in range(1, 4):
    ...     episode.add_env_step(t, action=t, reward=0.5 * t)
    >>> len(episode), episode.get_return(), episode.get_observations(-1)
    (3, 3.0, 3)
    >>> successor = episode.cut(len_lookback_buffer=2)
    >>> len(successor), successor.t_started, successor.get_actions(-1, neg_index_as_lookback=True)
    (0, 3, 3)
"""

import time
import uuid
from typing import TYPE_CHECKING, Any, Dict, List, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np

from tfrl.env import single_agent_episode_ops as _ops
from tfrl.env.single_agent_episode_columns import EpisodeColumns
from tfrl.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

if TYPE_CHECKING:
    from tfrl.policy.sample_batch import SampleBatch

# Rewards are stored (once finalized) as float32, like every reward column in tfrl.
REWARD_SPACE = gym.spaces.Box(-np.inf, np.inf, (), np.float32)


class SingleAgentEpisode(EpisodeColumns):
    """A single agent's episode (or a chunk of it), with an optional lookback region.

    The column getters and setters (`get_observations`, `set_actions`, ...) and the
    temporary timestep data come from `EpisodeColumns`.

    Args:
        id_: Unique id (str) of the env episode; chunks of one episode share it.
            None generates one (`uuid4().hex`).
        observations: Observations (list or `InfiniteLookbackBuffer`), lookback first.
        observation_space: Space of one observation (for `fill` of nested data and
            `one_hot_discrete`).
        infos: Info dicts, one per observation. None gives `{}` per observation.
        actions: Actions (list or buffer), one fewer than observations.
        action_space: Space of one action.
        rewards: Rewards (list or buffer), one per action.
        terminated: Whether the env episode terminated (gymnasium `terminated`).
        truncated: Whether the env episode was truncated (gymnasium `truncated`).
        extra_model_outputs: Dict of key -> list (or buffer), one item per action,
            e.g. `action_logp`.
        t_started: Env timestep at which this chunk starts (default 0).
        len_lookback_buffer: How many of the provided steps are lookback data (the
            first n items of each list; observations and infos then keep n + 1 + len
            items). "auto" makes every provided step lookback data: n = number of
            rewards, the last observation is the ts=0 observation and `len == 0`.
            Pass 0 to make all provided data part of the episode. Ignored for
            columns passed as `InfiniteLookbackBuffer`s (they carry their own).
        agent_id: Agent id, when part of a multi-agent episode.
        module_id: Id of the module (policy) acting for the agent.
        multi_agent_episode_id: Id of the parent multi-agent episode.

    Raises:
        TypeError: For arguments of the wrong type.
        ValueError: For inconsistent data or an invalid `len_lookback_buffer`.
    """

    def __init__(
        self,
        id_: Optional[str] = None,
        *,
        observations: Union[List[Any], InfiniteLookbackBuffer, None] = None,
        observation_space: Optional[gym.Space] = None,
        infos: Union[List[Dict], InfiniteLookbackBuffer, None] = None,
        actions: Union[List[Any], InfiniteLookbackBuffer, None] = None,
        action_space: Optional[gym.Space] = None,
        rewards: Union[List[SupportsFloat], InfiniteLookbackBuffer, None] = None,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: Optional[Dict[str, Any]] = None,
        t_started: Optional[int] = None,
        len_lookback_buffer: Union[int, str] = "auto",
        agent_id: Any = None,
        module_id: Optional[str] = None,
        multi_agent_episode_id: Optional[Any] = None,
    ):
        if id_ is not None and not isinstance(id_, str):
            raise TypeError(
                f"`id_` must be a str or None. Received: id_={id_!r} (type "
                f"{type(id_).__name__}). Pass e.g. `str(id_)`, or None for a new id."
            )
        self.id_ = id_ if id_ is not None else uuid.uuid4().hex
        self.agent_id = agent_id
        self.module_id = module_id
        self.multi_agent_episode_id = multi_agent_episode_id
        extra_model_outputs = {} if extra_model_outputs is None else extra_model_outputs
        if not isinstance(extra_model_outputs, dict):
            raise TypeError(
                "`extra_model_outputs` must be a dict of key -> list of per-step items. "
                f"Received: extra_model_outputs={extra_model_outputs!r}."
            )
        n = _ops.resolve_lookback(
            len_lookback_buffer, observations, infos, actions, rewards, extra_model_outputs
        )
        self.observations = _ops.to_buffer(observations, n, observation_space, "observations")
        if infos is None:
            num_obs = self.observations.len_incl_lookback()
            infos = InfiniteLookbackBuffer(
                [{} for _ in range(num_obs)], lookback=self.observations.lookback
            )
        self.infos = _ops.to_buffer(infos, n, None, "infos")
        self.actions = _ops.to_buffer(actions, n, action_space, "actions")
        self.rewards = _ops.to_buffer(rewards, n, REWARD_SPACE, "rewards")
        self.extra_model_outputs = {
            k: _ops.to_buffer(v, n, None, f"extra_model_outputs[{k!r}]")
            for k, v in extra_model_outputs.items()
        }
        self._terminated = bool(terminated)
        self._truncated = bool(truncated)
        # Fast-path hint for add_env_step: True only after one full check passed. Every
        # state change that could forbid steps resets it (see _check_can_step).
        self._can_step = False
        if t_started is None:
            t_started = 0
        if not isinstance(t_started, (int, np.integer)) or isinstance(t_started, bool):
            raise TypeError(
                f"`t_started` must be an int. Received: t_started={t_started!r} (type "
                f"{type(t_started).__name__}). Pass the env timestep this chunk starts at."
            )
        if t_started < 0:
            raise ValueError(
                f"`t_started` must be >= 0. Received: t_started={t_started}. "
                "Pass the env timestep at which this chunk starts."
            )
        self.t_started = int(t_started)
        self._temporary_timestep_data: Dict[str, List[Any]] = {}
        has_data = self.observations.len_incl_lookback() > 0
        self._start_time: Optional[float] = time.time() if has_data else None
        # Set when the chunk ends (done step or finalize()); None while ongoing.
        self._end_time: Optional[float] = None
        self._is_finalized = any(b.finalized for b in self._numpy_buffers())
        if self._is_finalized:
            for b in self._numpy_buffers():
                b.finalize()
        self.validate()

    # ---- Data entry -------------------------------------------------------------

    def add_env_reset(self, observation: Any, infos: Optional[Dict] = None) -> None:
        """Adds the initial observation and info dict returned by `env.reset()`.

        Args:
            observation: The initial observation.
            infos: The initial info dict (`{}` if None).

        Raises:
            RuntimeError: If the episode is finalized, done or already has observations.
        """
        self._check_can_add("add_env_reset")
        if self.observations.len_incl_lookback() > 0:
            raise RuntimeError(
                "add_env_reset() can only be called on an episode without "
                f"observations. Received: a second call on episode id_={self.id_!r}, "
                f"which holds {self.observations.len_incl_lookback()} observation(s). "
                "Create a new SingleAgentEpisode for a new env episode."
            )
        self.observations.data.append(observation)
        self.infos.data.append({} if infos is None else infos)
        self._start_time = time.time()

    def add_env_step(
        self,
        observation: Any,
        action: Any,
        reward: SupportsFloat,
        infos: Optional[Dict[str, Any]] = None,
        *,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Adds the results of one `env.step(action)` call (and the action).

        Args:
            observation: The observation received after taking `action`.
            action: The action passed to `env.step()`.
            reward: The reward received after taking `action`.
            infos: The info dict returned by `env.step()` (`{}` if None).
            terminated: Whether the env terminated after this step.
            truncated: Whether the env was truncated after this step.
            extra_model_outputs: Model outputs computed with `action` (e.g.
                `action_logp`), key -> one item.

        Raises:
            RuntimeError: If the episode is finalized or done, or has no reset
                observation yet.
        """
        if not self._can_step:
            self._check_can_step()
        self.observations.data.append(observation)
        self.actions.data.append(action)
        self.rewards.data.append(reward)
        self.infos.data.append({} if infos is None else infos)
        if extra_model_outputs:
            outs = self.extra_model_outputs
            for key in extra_model_outputs:  # Faster than .items() for small dicts.
                try:
                    outs[key].data.append(extra_model_outputs[key])
                except KeyError:  # First step with this key.
                    outs[key] = InfiniteLookbackBuffer([extra_model_outputs[key]])
        if terminated or truncated:
            self._terminated = bool(terminated)
            self._truncated = bool(truncated)
            self._can_step = False
            self._end_time = time.time()

    def validate(self) -> None:
        """Checks that the columns have consistent lengths and lookbacks.

        Raises:
            ValueError: If the data are inconsistent (message names the column).
        """
        _ops.validate(self)

    def finalize(self) -> "SingleAgentEpisode":
        """Converts every column except infos to numpy; no steps can be added after.

        Nested items become structs of arrays (each leaf with batch axis = number of
        items). Infos stay lists of dicts. Temporary timestep data are cleared.

        Returns:
            This episode.

        Raises:
            ValueError: If the data are inconsistent (see `validate`).
        """
        if self._is_finalized:
            return self
        self.validate()
        for buffer in self._numpy_buffers():
            buffer.finalize()
        self._temporary_timestep_data.clear()
        self._is_finalized = True
        self._can_step = False
        if self._end_time is None and self._start_time is not None:
            self._end_time = time.time()
        return self

    def to_numpy(self) -> "SingleAgentEpisode":
        """Alias of `finalize()` (the name later RLlib versions use)."""
        return self.finalize()

    # ---- Properties ---------------------------------------------------------------

    @property
    def is_terminated(self) -> bool:
        """Whether the env episode terminated (gymnasium `terminated`)."""
        return self._terminated

    @is_terminated.setter
    def is_terminated(self, value: bool) -> None:
        self._terminated = bool(value)
        self._can_step = False

    @property
    def is_truncated(self) -> bool:
        """Whether the env episode was truncated (gymnasium `truncated`)."""
        return self._truncated

    @is_truncated.setter
    def is_truncated(self, value: bool) -> None:
        self._truncated = bool(value)
        self._can_step = False

    @property
    def is_done(self) -> bool:
        """Whether the episode terminated or was truncated (no more steps, no cut)."""
        return self._terminated or self._truncated

    @property
    def is_finalized(self) -> bool:
        """Whether the data are already numpy (see `finalize()`)."""
        return self._is_finalized

    @property
    def env_t(self) -> int:
        """Env timestep reached at the end of this chunk: `t_started + len(self)`."""
        return self.t_started + len(self)

    @property
    def t(self) -> int:
        """Same as `env_t`."""
        return self.t_started + len(self)

    @property
    def observation_space(self) -> Optional[gym.Space]:
        """Space of one observation (stored on the observations buffer)."""
        return self.observations.space

    @observation_space.setter
    def observation_space(self, space: Optional[gym.Space]) -> None:
        self.observations.space = space

    @property
    def action_space(self) -> Optional[gym.Space]:
        """Space of one action (stored on the actions buffer)."""
        return self.actions.space

    @action_space.setter
    def action_space(self, space: Optional[gym.Space]) -> None:
        self.actions.space = space

    def __len__(self) -> int:
        """Number of env steps in this chunk (lookback excluded)."""
        return len(self.actions)

    def env_steps(self) -> int:
        """Number of env steps in this chunk."""
        return len(self)

    def agent_steps(self) -> int:
        """Number of agent steps in this chunk (equal to env steps)."""
        return len(self)

    def get_return(self) -> float:
        """Undiscounted sum of this chunk's rewards (lookback excluded)."""
        return float(np.sum(np.asarray(self.rewards.get(), dtype=np.float64)))

    def get_duration_s(self) -> float:
        """Wall-clock seconds this chunk has been running.

        Measured from `add_env_reset()` (or creation with data) until the chunk ended
        (the done step, or `finalize()`), or until now while it is ongoing; 0.0 before
        any data.
        """
        if self._start_time is None:
            return 0.0
        end = self._end_time if self._end_time is not None else time.time()
        return max(end - self._start_time, 0.0)

    def __repr__(self) -> str:
        return (
            f"SingleAgentEpisode(id_={self.id_!r}, len={len(self)}, "
            f"t_started={self.t_started}, terminated={self.is_terminated}, "
            f"truncated={self.is_truncated}, finalized={self._is_finalized})"
        )

    # ---- Chunks, conversion and state (implemented in single_agent_episode_ops) ----

    def cut(self, len_lookback_buffer: int = 0) -> "SingleAgentEpisode":
        """Returns a successor chunk (len 0) that continues this episode.

        The successor has the same id, spaces and agent/module ids, `t_started ==
        self.env_t`, this episode's last observation and info as its ts=0 data, and
        a lookback buffer of the last `len_lookback_buffer` steps (fewer if not
        available). Its data are copies; it is neither done nor finalized.

        Args:
            len_lookback_buffer: Number of steps to carry over as lookback data.

        Returns:
            The successor episode chunk.

        Raises:
            TypeError: If `len_lookback_buffer` is not an int.
            ValueError: If `len_lookback_buffer` is negative.
            RuntimeError: If this episode is done.
        """
        return _ops.cut(self, len_lookback_buffer)

    def slice(self, slice_: slice) -> "SingleAgentEpisode":
        """Returns a new episode with the steps of `slice_` (in-episode indices).

        Observations run from `start` to `stop` inclusive (one more than actions);
        the new episode keeps this episode's lookback size (taken from the data before
        `start`), `t_started = self.t_started + start`, and the done flags only if the
        slice reaches the end. Also available as `episode[start:stop]`.

        Args:
            slice_: A python slice with step None or 1.

        Returns:
            The new episode (finalized if this one is).

        Raises:
            TypeError: If `slice_` is not a slice.
            ValueError: If the slice has a step other than 1.
        """
        return _ops.slice_episode(self, slice_)

    def __getitem__(self, item: slice) -> "SingleAgentEpisode":
        """`episode[a:b]` is `episode.slice(slice(a, b))`; other keys raise TypeError."""
        if not isinstance(item, slice):
            raise TypeError(
                f"SingleAgentEpisode only supports slice keys. Received: item={item!r}. "
                "Use episode[a:b] for a sub-episode, or get_observations(i) etc."
            )
        return self.slice(item)

    def concat_episode(self, other: "SingleAgentEpisode") -> None:
        """Appends the chunk `other` (which must continue this one) in place.

        `other` must have the same id, start at `self.env_t`, and begin with this
        episode's last observation and info. Its done flags become this episode's.

        Args:
            other: The continuing chunk (e.g. the result of `cut()` plus new steps).

        Raises:
            TypeError: If `other` is not a SingleAgentEpisode.
            ValueError: On mismatching id, timestep, boundary observation/info or
                extra-output keys. This episode is left unchanged.
            RuntimeError: If this episode is done or finalized.
        """
        _ops.concat_episode(self, other)

    def get_data_dict(self) -> Dict[str, Any]:
        """Returns the chunk as columns with one row per step (numpy, infos object array).

        Keys: `eps_id`, `t`, `obs` (observation the action was taken on), `new_obs`
        (observation after it), `infos` (of `obs`), `actions`, `rewards`,
        `terminateds` / `truncateds` (False except the last row, which carries the
        episode's flags), `dones` (their OR) and every extra model output key.
        """
        return _ops.get_data_dict(self)

    def get_sample_batch(self) -> "SampleBatch":
        """Returns `SampleBatch(self.get_data_dict())` (one row per step)."""
        from tfrl.policy.sample_batch import SampleBatch

        return SampleBatch(self.get_data_dict())

    def get_state(self) -> Dict[str, Any]:
        """Returns a picklable dict of all data and metadata (see `from_state`)."""
        return _ops.get_state(self)

    @staticmethod
    def from_state(state: Dict[str, Any]) -> "SingleAgentEpisode":
        """Rebuilds an equivalent episode from `get_state()` output."""
        return _ops.from_state(state)

    # ---- Internals ----------------------------------------------------------------

    def _numpy_buffers(self) -> List[InfiniteLookbackBuffer]:
        """All buffers that `finalize()` converts (everything but infos)."""
        return [self.observations, self.actions, self.rewards, *self.extra_model_outputs.values()]

    def _check_can_step(self) -> None:
        """The full check behind add_env_step's fast path; sets `_can_step` if it passes."""
        self._check_can_add("add_env_step")
        if not self.observations.data:
            raise RuntimeError(
                "add_env_step() needs the reset observation first. Received: a step for "
                f"episode id_={self.id_!r}, which has no observations. Call "
                "add_env_reset(observation, infos) after env.reset()."
            )
        self._can_step = True

    def _check_can_add(self, method: str) -> None:
        if self._is_finalized:
            raise RuntimeError(
                f"Cannot add data to a finalized episode. Received: {method}() on episode "
                f"id_={self.id_!r} with is_finalized=True. Add all steps before calling "
                "finalize(), or continue in a successor chunk from cut()."
            )
        if self.is_done:
            raise RuntimeError(
                f"Cannot add data to an episode that is done. Received: {method}() on "
                f"episode id_={self.id_!r} with is_terminated={self.is_terminated}, "
                f"is_truncated={self.is_truncated}. Start a new SingleAgentEpisode for "
                "the next env episode."
            )
