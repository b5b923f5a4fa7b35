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

Part of the data layer (`tfrl.data`, numpy only); RLlib's path
`tfrl.env.single_agent_episode` re-exports it. The episode owns all of its state:
construction checks, column access, chunking (cut/slice/concat), conversion and
state round trips are its methods.
"""

import time
import uuid
from typing import Any, Dict, List, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.infinite_lookback_buffer import Indices, InfiniteLookbackBuffer
from tfrl.data.sample_batch import SampleBatch
from tfrl.utils.spaces.space_utils import structs_equal, to_numpy_batch, unbatch

# Rewards are stored (once finalized) as float32, like every reward column in tfrl.
REWARD_SPACE = gym.spaces.Box(-np.inf, np.inf, (), np.float32)

_LIST_TYPES = (list, tuple, np.ndarray)


class EpisodeMismatchError(ValueError, AssertionError):
    """Data that does not fit the episode (a chunk that does not continue it, a new key
    set at some indices). A `ValueError`, and an `AssertionError` because RLlib asserts
    in these cases and code ported from RLlib catches that."""


class EpisodeStateError(RuntimeError, AssertionError):
    """An operation the episode's state forbids (e.g. concatenating onto a done episode).
    A `RuntimeError`, and an `AssertionError` as RLlib's assert in the same case."""


class SingleAgentEpisode:
    """A single agent's episode (or a chunk of it), with an optional lookback region.

    Every column getter and setter (`get_observations`, `set_actions`, ...) reads or
    writes the column's `InfiniteLookbackBuffer` by the buffer's index rules
    (in-episode indices, `neg_index_as_lookback`, `fill`, `one_hot_discrete`). A
    sampler may keep temporary per-timestep data on an episode until `finalize()`.

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
        n = _resolve_lookback(
            len_lookback_buffer, observations, infos, actions, rewards, extra_model_outputs
        )
        self.observations = _to_buffer(observations, n, observation_space, "observations")
        if infos is None:
            num_obs = self.observations.len_incl_lookback()
            infos = InfiniteLookbackBuffer(
                [{} for _ in range(num_obs)], lookback=self.observations.lookback
            )
        self.infos = _to_buffer(infos, n, None, "infos")
        self.actions = _to_buffer(actions, n, action_space, "actions")
        self.rewards = _to_buffer(rewards, n, REWARD_SPACE, "rewards")
        self.extra_model_outputs = {
            k: _to_buffer(v, n, None, f"extra_model_outputs[{k!r}]")
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
        # Free-form user data that travels with the episode (RLlib's `custom_data`).
        self.custom_data: Dict[str, Any] = {}
        has_data = self.observations.len_incl_lookback() > 0
        self._start_time: Optional[float] = time.time() if has_data else None
        # Time of the latest add_env_reset/add_env_step (RLlib's `_last_step_time`).
        self._last_step_time: Optional[float] = self._start_time
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
        self._start_time = self._last_step_time = time.time()

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
        self._last_step_time = time.time()
        if terminated or truncated:
            self._terminated = bool(terminated)
            self._truncated = bool(truncated)
            self._can_step = False
            self._end_time = self._last_step_time

    def validate(self) -> None:
        """Checks that the columns have consistent lengths and lookbacks.

        Raises:
            ValueError: If the data are inconsistent (message names the column).
        """
        obs, infos, actions, rewards = (
            self.observations, self.infos, self.actions, self.rewards)
        totals = [b.len_incl_lookback() for b in (obs, infos, actions, rewards)]
        extras = self.extra_model_outputs
        if not any(totals) and not any(b.len_incl_lookback() for b in extras.values()):
            return  # An empty episode (before add_env_reset) is valid.

        def fail(problem: str) -> None:
            raise ValueError(
                f"Inconsistent data in episode id_={self.id_!r}: {problem} Expected "
                "#observations == #infos == #actions + 1 == #rewards + 1 (lookback included), "
                "equal lookback sizes, and one extra model output per in-episode action. "
                "Check the data passed to the constructor, setters or buffers."
            )

        if totals[0] != totals[1]:
            fail(f"Received: {totals[0]} observations but {totals[1]} infos.")
        lookbacks = [b.lookback for b in (obs, infos, actions, rewards)]
        if len(set(lookbacks)) != 1:
            fail(f"Received: lookback sizes (observations, infos, actions, rewards) = {lookbacks}.")
        if totals[0] != totals[2] + 1 or totals[3] != totals[2]:
            fail(
                f"Received: {totals[0]} observations, {totals[2]} actions and "
                f"{totals[3]} rewards."
            )
        for key, buffer in extras.items():
            # Keys first seen mid-chunk may have a smaller lookback than the actions.
            if len(buffer) != len(actions) or buffer.lookback > actions.lookback:
                fail(
                    f"Received: extra_model_outputs[{key!r}] with {len(buffer)} in-episode "
                    f"items (lookback {buffer.lookback}) for {len(actions)} actions "
                    f"(lookback {actions.lookback})."
                )

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
    def is_numpy(self) -> bool:
        """RLlib 2.x's name for `is_finalized`: whether the data are numpy already."""
        return self._is_finalized

    @property
    def _observation_space(self) -> Optional[gym.Space]:
        """RLlib's attribute name of `observation_space`."""
        return self.observations.space

    @property
    def _action_space(self) -> Optional[gym.Space]:
        """RLlib's attribute name of `action_space`."""
        return self.actions.space

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

    # ---- Getters (index rules: see InfiniteLookbackBuffer) -----------------------

    def get_observations(self, indices: Indices = None, **options: Any) -> Any:
        """Returns one observation (int index) or a batch of them.

        The observations buffer's `InfiniteLookbackBuffer.get(indices, **options)`.

        Args:
            indices: None (all in-episode observations), an int, a list of ints or a
                slice. Negative ints count from the end, see `neg_index_as_lookback`.
            **options: The keyword-only `neg_index_as_lookback` (negative indices
                count back from ts=0 into the lookback: -1 is the observation just
                before ts=0), `fill` (value for positions outside the stored data;
                every leaf of nested observations gets it) and `one_hot_discrete`
                (one-hot encode Discrete/MultiDiscrete (sub-)spaces; filled positions
                become vectors full of `fill`, "zero-hot" for 0).

        Returns:
            One item for an int index, else a batch (list before `finalize()`, numpy
            after; one-hot items with `one_hot_discrete=True`, as in RLlib).
        """
        return self.observations.get(indices, **options)

    def get_infos(
        self, indices: Indices = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        """Returns one info dict (int index) or a list of them.

        Args:
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: An item (e.g. a dict) returned for positions outside the data.

        Returns:
            One info dict, or a list of info dicts (also after `finalize()`).
        """
        return self.infos.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_actions(self, indices: Indices = None, **options: Any) -> Any:
        """Returns one action (int index) or a batch of them.

        Args:
            indices: As in `get_observations`.
            **options: As in `get_observations` (`one_hot_discrete` needs the
                episode's `action_space`).

        Returns:
            One action for an int index, else a batch.
        """
        return self.actions.get(indices, **options)

    def get_rewards(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Optional[float] = None,
    ) -> Any:
        """Returns one reward (int index) or a batch of them (float32 once finalized).

        Args:
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: Float for positions outside the stored data.

        Returns:
            One reward for an int index, else a batch.
        """
        return self.rewards.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_extra_model_outputs(
        self,
        key: str,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        """Returns extra model outputs stored under `key` (one item or a batch).

        Args:
            key: The extra model output, e.g. "action_logp".
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: As in `get_observations`; the shape is taken from the stored data.

        Returns:
            One item for an int index, else a batch.

        Raises:
            KeyError: If the episode has no outputs under `key`.
        """
        return self._extra_buffer(key).get(
            indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill
        )

    # ---- Setters ------------------------------------------------------------------

    def set_observations(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites observations (all in-episode ones, or those at `at_indices`).

        Args:
            new_data: One observation for an int index; else a list of observations
                (before `finalize()`) or a batch struct with one row per position.
            at_indices: None, an int, a list of ints or a slice (as in the getters).
            neg_index_as_lookback: As in the getters.

        Raises:
            IndexError: If an index is out of range or `new_data` has the wrong size.
        """
        self.observations.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_actions(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites actions; arguments and errors as in `set_observations`."""
        self.actions.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_rewards(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites rewards; arguments and errors as in `set_observations`."""
        self.rewards.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: Any,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites extra model outputs under `key`, or inserts `key` as a new column.

        Args:
            key: The extra model output. A new key needs `at_indices=None` and one
                item per in-episode step.
            new_data: As in `set_observations`.
            at_indices: As in `set_observations`.
            neg_index_as_lookback: As in `set_observations`.

        Raises:
            EpisodeMismatchError: (a ValueError and, as in RLlib, an AssertionError) If
                a new key is given `at_indices`.
            IndexError: If an index is out of range or `new_data` has the wrong size.
        """
        if key in self.extra_model_outputs:
            self.extra_model_outputs[key].set(
                new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
            )
            return
        self.extra_model_outputs[key] = self._new_extra_buffer(key, new_data, at_indices)

    # ---- Temporary timestep data -------------------------------------------------

    def add_temporary_timestep_data(self, key: str, data: Any) -> None:
        """Appends one item to the temporary list under `key` (cleared by finalize()).

        Raises:
            RuntimeError: If the episode is finalized.
        """
        if self._is_finalized:
            raise RuntimeError(
                "Temporary timestep data can only be added before finalize(). Received: "
                f"add_temporary_timestep_data(key={key!r}) on a finalized episode."
            )
        self._temporary_timestep_data.setdefault(key, []).append(data)

    def get_temporary_timestep_data(self, key: str) -> List[Any]:
        """Returns the list of temporary items under `key`.

        Raises:
            KeyError: If nothing was added under `key` (or finalize() cleared it).
        """
        if key not in self._temporary_timestep_data:
            raise KeyError(
                f"No temporary timestep data under key={key!r}. Available keys: "
                f"{sorted(self._temporary_timestep_data)}. Add data with "
                "add_temporary_timestep_data() first (finalize() clears it)."
            )
        return self._temporary_timestep_data[key]

    def _extra_buffer(self, key: str) -> InfiniteLookbackBuffer:
        if key not in self.extra_model_outputs:
            raise KeyError(
                f"No extra model outputs under key={key!r}. Available keys: "
                f"{sorted(self.extra_model_outputs)}. Pass the key to add_env_step("
                "extra_model_outputs=...) or set_extra_model_outputs()."
            )
        return self.extra_model_outputs[key]

    def _new_extra_buffer(
        self, key: str, new_data: Any, at_indices: Indices
    ) -> InfiniteLookbackBuffer:
        """Builds the buffer for a new extra-model-output key set via the setter."""
        if at_indices is not None:
            raise EpisodeMismatchError(
                f"A new extra model output key can only be set as a whole. Received: "
                f"key={key!r} (not yet in the episode) with at_indices={at_indices!r}. "
                "Pass at_indices=None and one item per in-episode step."
            )
        buffer = InfiniteLookbackBuffer(new_data if isinstance(new_data, list) else unbatch(new_data))
        if len(buffer) != len(self):
            raise IndexError(
                f"A new extra model output needs one item per in-episode step. Received: "
                f"{len(buffer)} items for key={key!r}, but the episode has {len(self)} "
                "steps. Pass exactly len(self) items."
            )
        if self.is_finalized:
            buffer.finalize()
        return buffer

    # ---- Chunks, conversion and state ---------------------------------------------

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
        if not isinstance(len_lookback_buffer, (int, np.integer)) or isinstance(
            len_lookback_buffer, bool
        ):
            raise TypeError(
                "`len_lookback_buffer` must be an int >= 0. Received: "
                f"len_lookback_buffer={len_lookback_buffer!r}."
            )
        if len_lookback_buffer < 0:
            raise ValueError(
                f"`len_lookback_buffer` must be >= 0. Received: "
                f"len_lookback_buffer={len_lookback_buffer}."
            )
        if self.is_done:
            raise RuntimeError(
                f"Cannot cut an episode that is done. Received: cut() on episode "
                f"id_={self.id_!r} with is_terminated={self.is_terminated}, "
                f"is_truncated={self.is_truncated}. A done episode has no successor; "
                "start a new SingleAgentEpisode for the next env episode."
            )
        k = min(int(len_lookback_buffer), self.actions.len_incl_lookback())

        def tail(buffer: InfiniteLookbackBuffer, num: int, lookback: int):
            total = buffer.len_incl_lookback()
            return buffer.copy_range(total - num, total, lookback, as_list=True, deep=True)

        return SingleAgentEpisode(
            self.id_,
            observations=tail(self.observations, k + 1, k),
            infos=tail(self.infos, k + 1, k),
            actions=tail(self.actions, k, k),
            rewards=tail(self.rewards, k, k),
            extra_model_outputs={
                key: tail(b, k, k) for key, b in self.extra_model_outputs.items()
            },
            t_started=self.env_t,
            agent_id=self.agent_id,
            module_id=self.module_id,
            multi_agent_episode_id=self.multi_agent_episode_id,
        )

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
        if not isinstance(slice_, slice):
            raise TypeError(
                f"`slice_` must be a slice. Received: slice_={slice_!r}. Use e.g. slice(1, 3)."
            )
        start, stop, step = slice_.indices(len(self))
        if step != 1:
            raise ValueError(
                f"Episode slices must be contiguous. Received: slice_={slice_!r} (step "
                f"{step}). Use a step of None or 1."
            )
        stop = max(start, stop)
        keep = self.observations.lookback

        def part(buffer: InfiniteLookbackBuffer, num_extra: int):
            lookback = min(keep, buffer.lookback + start)
            first = buffer.lookback + start - lookback
            return buffer.copy_range(first, buffer.lookback + stop + num_extra, lookback)

        reaches_end = stop == len(self)
        return SingleAgentEpisode(
            self.id_,
            observations=part(self.observations, 1),
            infos=part(self.infos, 1),
            actions=part(self.actions, 0),
            rewards=part(self.rewards, 0),
            extra_model_outputs={k: part(b, 0) for k, b in self.extra_model_outputs.items()},
            terminated=self.is_terminated and reaches_end,
            truncated=self.is_truncated and reaches_end,
            t_started=self.t_started + start,
            agent_id=self.agent_id,
            module_id=self.module_id,
            multi_agent_episode_id=self.multi_agent_episode_id,
        )

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
            EpisodeMismatchError: (a ValueError and, as in RLlib, an AssertionError) On
                mismatching id, timestep, boundary observation/info or extra-output
                keys. This episode is left unchanged.
            EpisodeStateError: (a RuntimeError and an AssertionError) If this episode
                is done or finalized.
        """
        # Checks everything before mutating.
        if not isinstance(other, SingleAgentEpisode):
            raise TypeError(
                f"concat_episode() needs a SingleAgentEpisode. Received: other of type "
                f"{type(other).__name__}."
            )
        if self.is_done or self.is_finalized:
            raise EpisodeStateError(
                "Cannot concatenate onto an episode that is done or finalized. Received: "
                f"episode id_={self.id_!r} with is_terminated={self.is_terminated}, "
                f"is_truncated={self.is_truncated}, is_finalized={self.is_finalized}. "
                "Only an ongoing, not finalized chunk can be continued."
            )

        def mismatch(what: str, received: str, expected: str) -> ValueError:
            return EpisodeMismatchError(
                f"concat_episode(): `other` does not continue this episode ({what}). "
                f"Received: {received}. Expected: {expected}. Concatenate the chunk that "
                "cut() produced from this episode (plus its new steps)."
            )

        if other.id_ != self.id_:
            raise mismatch("id", f"other.id_={other.id_!r}", f"id_={self.id_!r}")
        if other.t_started != self.env_t:
            raise mismatch(
                "timestep", f"other.t_started={other.t_started}", f"self.env_t={self.env_t}")
        if self.observations.len_incl_lookback() == 0 or len(other.observations) == 0:
            raise mismatch(
                "boundary observation",
                f"{self.observations.len_incl_lookback()} observations in self, "
                f"{len(other.observations)} in-episode observations in other",
                "both episodes to hold observations (call add_env_reset first)",
            )
        other.validate()
        if not structs_equal(self.get_observations(-1), other.get_observations(0)):
            raise mismatch(
                "boundary observation", f"other's first observation {other.get_observations(0)!r}",
                f"self's last observation {self.get_observations(-1)!r}")
        if not structs_equal(self.get_infos(-1), other.get_infos(0)):
            raise mismatch(
                "boundary info", f"other's first info {other.get_infos(0)!r}",
                f"self's last info {self.get_infos(-1)!r}")
        keys, other_keys = set(self.extra_model_outputs), set(other.extra_model_outputs)
        if (len(other) and keys - other_keys) or (len(self) and other_keys - keys):
            raise mismatch(
                "extra model output keys", f"other's keys {sorted(other_keys)}",
                f"self's keys {sorted(keys)}")

        # All checks passed: gather, then mutate.
        additions = [
            (self.observations, _items(other.observations, 1)),
            (self.infos, _items(other.infos, 1)),
            (self.actions, _items(other.actions, 0)),
            (self.rewards, _items(other.rewards, 0)),
        ]
        for key in other.extra_model_outputs:
            if key not in self.extra_model_outputs:
                self.extra_model_outputs[key] = InfiniteLookbackBuffer()
            items = _items(other.extra_model_outputs[key], 0)
            additions.append((self.extra_model_outputs[key], items))
        for buffer, items in additions:
            buffer.data.extend(items)
        self.is_terminated = other.is_terminated
        self.is_truncated = other.is_truncated
        if self.observation_space is None:
            self.observation_space = other.observation_space
        if self.action_space is None:
            self.action_space = other.action_space
        self._end_time = other._end_time  # pylint: disable=protected-access
        for key, values in other._temporary_timestep_data.items():  # pylint: disable=protected-access
            self._temporary_timestep_data.setdefault(key, []).extend(values)

    def get_data_dict(self) -> Dict[str, Any]:
        """Returns the chunk as columns with one row per step (numpy, infos object array).

        Keys: `eps_id`, `t`, `obs` (observation the action was taken on), `new_obs`
        (observation after it), `infos` (of `obs`), `actions`, `rewards`,
        `terminateds` / `truncateds` (False except the last row, which carries the
        episode's flags), `dones` (their OR) and every extra model output key.
        """
        n = len(self)
        infos = np.empty(n, dtype=object)
        for i, info in enumerate(self.infos.get(slice(0, n))):
            infos[i] = info
        terminateds = np.zeros(n, dtype=bool)
        truncateds = np.zeros(n, dtype=bool)
        if n:
            terminateds[-1] = self.is_terminated
            truncateds[-1] = self.is_truncated
        data = {
            Columns.EPS_ID: np.full(n, self.id_),
            Columns.T: np.arange(self.t_started, self.t_started + n, dtype=np.int64),
            Columns.OBS: _numpy(self.observations, slice(0, n)),
            Columns.NEXT_OBS: _numpy(self.observations, slice(1, n + 1)),
            Columns.INFOS: infos,
            Columns.ACTIONS: _numpy(self.actions),
            Columns.REWARDS: _numpy(self.rewards),
            Columns.TERMINATEDS: terminateds,
            Columns.TRUNCATEDS: truncateds,
            Columns.DONES: terminateds | truncateds,
        }
        for key, buffer in self.extra_model_outputs.items():
            data[key] = _numpy(buffer)
        return data

    def get_sample_batch(self) -> "SampleBatch":
        """Returns `SampleBatch(self.get_data_dict())` (one row per step)."""
        return SampleBatch(self.get_data_dict())

    def get_state(self) -> Dict[str, Any]:
        """Returns a picklable dict of all data and metadata (see `from_state`)."""
        return {
            "id_": self.id_,
            "agent_id": self.agent_id,
            "module_id": self.module_id,
            "multi_agent_episode_id": self.multi_agent_episode_id,
            "observations": self.observations.get_state(),
            "infos": self.infos.get_state(),
            "actions": self.actions.get_state(),
            "rewards": self.rewards.get_state(),
            "extra_model_outputs": {
                k: b.get_state() for k, b in self.extra_model_outputs.items()
            },
            "is_terminated": self.is_terminated,
            "is_truncated": self.is_truncated,
            "t_started": self.t_started,
            "is_finalized": self.is_finalized,
            "temporary_timestep_data": {
                k: list(v) for k, v in self._temporary_timestep_data.items()
            },
            "start_time": self._start_time,
            "end_time": self._end_time,
            "last_step_time": self._last_step_time,
            "custom_data": dict(self.custom_data),
        }

    @classmethod
    def from_state(cls, state: Dict[str, Any]) -> "SingleAgentEpisode":
        """Rebuilds an equivalent episode from `get_state()` output."""
        buffer = InfiniteLookbackBuffer.from_state
        episode = cls(
            state["id_"],
            observations=buffer(state["observations"]),
            infos=buffer(state["infos"]),
            actions=buffer(state["actions"]),
            rewards=buffer(state["rewards"]),
            extra_model_outputs={k: buffer(s) for k, s in state["extra_model_outputs"].items()},
            terminated=state["is_terminated"],
            truncated=state["is_truncated"],
            t_started=state["t_started"],
            agent_id=state["agent_id"],
            module_id=state["module_id"],
            multi_agent_episode_id=state["multi_agent_episode_id"],
        )
        episode._restore_private_state(state)  # pylint: disable=protected-access
        return episode

    # ---- Internals ----------------------------------------------------------------

    def _restore_private_state(self, state: Dict[str, Any]) -> None:
        """Sets the fields `get_state()` saved that the constructor does not take."""
        self._is_finalized = state["is_finalized"]
        self._can_step = False  # Re-check on the next add_env_step.
        self._temporary_timestep_data = {
            k: list(v) for k, v in state["temporary_timestep_data"].items()
        }
        self._start_time = state["start_time"]
        self._end_time = state["end_time"]
        self._last_step_time = state.get("last_step_time", self._start_time)
        self.custom_data = dict(state.get("custom_data", {}))

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


def _resolve_lookback(
    len_lookback_buffer: Union[int, str],
    observations: Any,
    infos: Any,
    actions: Any,
    rewards: Any,
    extras: Dict[str, Any],
) -> int:
    """Turns `len_lookback_buffer` ("auto" or int) into the lookback size for lists."""
    if isinstance(len_lookback_buffer, str):
        if len_lookback_buffer != "auto":
            raise ValueError(
                "`len_lookback_buffer` must be an int >= 0 or 'auto'. Received: "
                f"len_lookback_buffer={len_lookback_buffer!r}."
            )
        # "auto": every provided step is lookback data (SPEC decision D7).
        for steps in (rewards, actions):
            if isinstance(steps, _LIST_TYPES):
                return len(steps)
        if isinstance(observations, _LIST_TYPES):
            return max(len(observations) - 1, 0)
        return 0
    if not isinstance(len_lookback_buffer, (int, np.integer)) or isinstance(
        len_lookback_buffer, bool
    ):
        raise TypeError(
            "`len_lookback_buffer` must be an int >= 0 or 'auto'. Received: "
            f"len_lookback_buffer={len_lookback_buffer!r} "
            f"(type {type(len_lookback_buffer).__name__})."
        )
    n = int(len_lookback_buffer)
    if n < 0:
        raise ValueError(
            f"`len_lookback_buffer` must be >= 0. Received: len_lookback_buffer={n}."
        )
    if all(data is None for data in (observations, infos, actions, rewards)) and not extras:
        return 0  # As in RLlib: nothing to look back on yet (an empty episode).
    # Observations and infos hold one item more than the steps (the ts=0 item).
    columns = [("observations", observations, 1), ("infos", infos, 1), ("actions", actions, 0),
               ("rewards", rewards, 0)] + [(f"extra_model_outputs[{k!r}]", v, 0)
                                          for k, v in extras.items()]
    for name, data, extra in columns:
        if isinstance(data, _LIST_TYPES) and n > 0 and len(data) < n + extra:
            raise ValueError(
                f"`len_lookback_buffer` is larger than the provided data. Received: "
                f"len_lookback_buffer={n} but {name} has {len(data)} items (needs at "
                f"least {n + extra}). Pass a smaller len_lookback_buffer or more data."
            )
    return n


def _to_buffer(
    data: Any, lookback: int, space: Optional[gym.Space], name: str
) -> InfiniteLookbackBuffer:
    """Wraps a constructor argument (None, list, array or buffer) into a buffer."""
    if isinstance(data, InfiniteLookbackBuffer):
        if data.space is None and space is not None:
            data.space = space
        return data
    if data is None:
        return InfiniteLookbackBuffer([], lookback=0, space=space)
    if isinstance(data, _LIST_TYPES):
        return InfiniteLookbackBuffer(list(data), lookback=lookback, space=space)
    raise TypeError(
        f"`{name}` must be a list, a numpy array, an InfiniteLookbackBuffer or None. "
        f"Received: {name} of type {type(data).__name__}."
    )


def _items(buffer: InfiniteLookbackBuffer, start: int) -> list:
    """The in-episode items from index `start` on, as a fresh list."""
    data = buffer.get(slice(start, None))
    return unbatch(data) if buffer.finalized else list(data)


def _numpy(buffer: InfiniteLookbackBuffer, indices: Indices = None) -> Any:
    data = buffer.get(indices)
    return data if buffer.finalized else to_numpy_batch(data, buffer.space)
