"""ExternalEnv: an environment whose simulator drives itself and asks the policy for actions.

Control is inverted compared to `gymnasium.Env`: the simulator (your `run()` loop, or
HTTP requests reaching a policy server) calls `start_episode`, then `get_action`
(on-policy) or `log_action` (off-policy), `log_returns`, and finally `end_episode`.
A sampler sees the env through `to_base_env()`: episode ids are env ids, episodes
waiting in `get_action` appear in `poll()`, and `send_actions` answers them.

Example:
    >>> import gymnasium as gym
    >>> class Counter(ExternalEnv):
    ...     def run(self):
    ...         eid = self.start_episode("ep")
    ...         action = self.get_action(eid, 0)
    ...         self.log_returns(eid, 1.0)
    ...         self.end_episode(eid, 1)
    >>> env = Counter(gym.spaces.Discrete(2), gym.spaces.Discrete(5))
    >>> base = env.to_base_env()  # starts the thread
    >>> obs, rewards, *_ = base.poll()
    >>> obs, rewards
    ({'ep': {'agent0': 0}}, {'ep': {'agent0': None}})
    >>> base.send_actions({"ep": {"agent0": 1}})
    >>> obs, rewards, terminateds, truncateds, infos, off_policy = base.poll()
    >>> obs, rewards, terminateds["ep"]["__all__"]
    ({'ep': {'agent0': 1}}, {'ep': {'agent0': 1.0}}, True)
"""

import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

import gymnasium as gym

from tfrl.env.external_env_base import _ExternalEnvToBaseEnv
from tfrl.env.external_env_episode import ActionTicket, ExternalEnvEpisode, RecentIds
from tfrl.env.space_checks import (action_error, nonfinite_error, observation_error,
                                   reward_error)
from tfrl.utils.typing import EnvActionType, EnvInfoDict, EnvObsType, MultiAgentDict

# How to fix an observation with NaN or inf (a policy would act on it and train on it).
NONFINITE_FIX = ("Observations must be finite numbers: fix the simulator's observation (e.g. a "
                 "division by zero or an overflow), or replace NaN and inf before passing it.")

_DUMMY_AGENT_ID = "agent0"


class ExternalEnvStopped(RuntimeError):
    """What a call into a stopped `ExternalEnv` raises: a caller that was waiting for an
    action when the sampler stopped the env, or a new call after it. When the env's own
    `run()` loop gets it, the env's thread ends quietly (the loop cannot go on; the
    stop is not an error of the loop's)."""


class ExternalEnv(threading.Thread):
    """An environment that interfaces with external agents (a daemon thread).

    Subclasses implement `run()`. The env is thread-safe; each episode must be run
    serially, but several episodes may run at once (at most `max_concurrent`).
    Observations are checked against `observation_space` (structure and shapes) and
    logged actions against `action_space`; bad values raise `ValueError`.

    Args:
        action_space: Action space of the env.
        observation_space: Observation space of the env.
        max_concurrent: Max number of episodes started but not yet ended; starting
            one more raises `ValueError`.

    Attributes:
        get_action_timeout: Seconds `get_action` waits for the policy before raising
            `TimeoutError` (default 300; None waits forever). tfrl extension.
        finished_ids_window: How many ids of finished episodes are remembered (to
            refuse their reuse with "has already completed"); older ids are forgotten,
            so memory stays bounded. tfrl extension (class attribute).
    """

    _is_multi_agent = False
    finished_ids_window = 10_000

    def __init__(self, action_space: gym.Space, observation_space: gym.Space,
                 max_concurrent: int = 100):
        threading.Thread.__init__(self, name=type(self).__name__, daemon=True)
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) \
                or max_concurrent < 1:
            raise ValueError(
                f"max_concurrent must be an int >= 1. Received: max_concurrent={max_concurrent!r}."
            )
        self.action_space = action_space
        self.observation_space = observation_space
        self.get_action_timeout: Optional[float] = 300.0
        self._episodes: Dict[str, ExternalEnvEpisode] = {}
        self._finished = RecentIds(self.finished_ids_window)
        self._results_avail_condition = threading.Condition()
        self._max_concurrent_episodes = max_concurrent
        self._env_stopped = False

    def start(self) -> None:
        """Starts the env's thread, which runs `run()`; when the env is stopped while the
        loop waits in (or calls) the episode protocol, the loop's `ExternalEnvStopped`
        ends the thread without an unhandled-exception report."""
        loop = self.run

        def run_until_stopped() -> None:
            try:
                loop()
            except ExternalEnvStopped:
                if not self._env_stopped:
                    raise

        self.run = run_until_stopped  # type: ignore[method-assign]
        super().start()

    def run(self) -> None:
        """Override this to implement the run loop.

        The loop should repeatedly: `start_episode()`; `get_action()` or
        `log_action()`; `log_returns()`; ...; `end_episode()`; and wait when there
        is nothing to do. Several episodes may be in flight at once.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement run(), the loop that drives episodes "
            "through start_episode/get_action/log_returns/end_episode."
        )

    # ---- The episode protocol --------------------------------------------------------

    def start_episode(self, episode_id: Optional[str] = None, training_enabled: bool = True) -> str:
        """Records the start of an episode.

        Args:
            episode_id: Unique id for the episode, or None for a new one (32 hex chars).
            training_enabled: Whether this episode's experiences may be used for
                training (if False, samplers use them for metrics only).

        Returns:
            The episode id.

        Raises:
            ValueError: If the id already completed or is running, or `max_concurrent`
                episodes are already running.
            TypeError: If `episode_id` is not a str.
        """
        if episode_id is None:
            episode_id = uuid.uuid4().hex
        if not isinstance(episode_id, str):
            raise TypeError(
                f"episode_id must be a str or None. Received: episode_id={episode_id!r} "
                f"(type {type(episode_id).__name__})."
            )
        with self._results_avail_condition:
            self._check_running()
            if episode_id in self._finished:
                reason = self._finished.reason(episode_id)
                raise ValueError(f"Episode {episode_id} has already completed." if
                                 reason == "completed" else f"Episode {episode_id} {reason}.")
            if episode_id in self._episodes:
                raise ValueError(f"Episode {episode_id} is already started")
            running = sum(not e.ended for e in self._episodes.values())
            if running >= self._max_concurrent_episodes:
                raise ValueError(
                    f"Too many concurrent episodes: {running} are running and this env "
                    f"allows max_concurrent={self._max_concurrent_episodes}. End episodes "
                    "with end_episode() (were some leaked?) or raise max_concurrent."
                )
            self._episodes[episode_id] = ExternalEnvEpisode(episode_id, bool(training_enabled))
        return episode_id

    def get_action(self, episode_id: str, observation: EnvObsType) -> EnvActionType:
        """Records an observation and blocks until the policy returns the action.

        Raises:
            ValueError: For an unknown or completed episode, a bad observation, or an
                episode that is already waiting in another `get_action`.
            TimeoutError: If no action arrives within `get_action_timeout` seconds.
        """
        return self.get_actions([episode_id], {episode_id: observation})[episode_id]

    def log_action(self, episode_id: str, observation: EnvObsType, action: EnvActionType) -> None:
        """Records an observation and the action taken for it off-policy (no waiting).

        Raises:
            ValueError: For an unknown or completed episode, a bad observation, or an
                action outside the action space.
        """
        obs = self._to_agent_dict(observation, "observation")
        actions = self._to_agent_dict(action, "action")
        self._check_actions(actions)
        with self._results_avail_condition:
            episode = self._get(episode_id)
            self._check_observations(episode_id, obs)
            episode.add_observation(obs, off_policy_actions=actions)
            self._results_avail_condition.notify_all()

    def log_returns(self, episode_id: str, reward: float,
                    info: Optional[EnvInfoDict] = None) -> None:
        """Records a reward (and info) for the episode's previous action.

        Rewards accumulate until the next action; no reward before the next action
        means 0.0. Rewards logged before the episode's first observation are dropped.
        A non-empty `info` replaces the info of the next observation.

        Raises:
            ValueError: For an unknown or completed episode, or a reward that is not a
                finite number within the float32 range (NaN, inf, 1e39, a string).
        """
        self._log_returns(episode_id, {_DUMMY_AGENT_ID: reward},
                          {_DUMMY_AGENT_ID: info} if info else None, None)

    def end_episode(self, episode_id: str, observation: EnvObsType, *,
                    truncated: bool = False) -> None:
        """Records the end of an episode and its final observation.

        Args:
            episode_id: Episode id returned from `start_episode()`.
            observation: The final observation.
            truncated: tfrl extension (gymnasium semantics): the episode was cut
                short (time limit) rather than reaching a terminal state, so learners
                bootstrap from `observation`. Default: terminated.

        Raises:
            ValueError: For an unknown or completed episode or a bad observation.
        """
        obs = self._to_agent_dict(observation, "observation")
        with self._results_avail_condition:
            episode = self._get(episode_id)
            self._check_observations(episode_id, obs)
            episode.add_observation(obs, last=True, truncated=bool(truncated))
            self._finished.add(episode_id)
            self._results_avail_condition.notify_all()

    def to_base_env(self, make_env: Optional[Callable] = None, num_envs: int = 1,
                    remote_envs: bool = False, remote_env_batch_wait_ms: int = 0,
                    *, poll_timeout: Optional[float] = None) -> "Any":
        """Returns the `BaseEnv` view of this env and starts its thread (if not yet).

        Args:
            make_env: Unused (an ExternalEnv is never copied).
            num_envs: Must be 1.
            remote_envs: Must be False.
            remote_env_batch_wait_ms: Unused.
            poll_timeout: tfrl extension: seconds `poll()` waits for data before
                returning empty dicts; None waits until data arrive or `stop()`.

        Raises:
            ValueError: If `num_envs != 1` or `remote_envs` is True.
        """
        if num_envs != 1 or remote_envs:
            raise ValueError(
                "External(MultiAgent)Env does not currently support num_envs > 1 or remote "
                f"envs; received num_envs={num_envs}, remote_envs={remote_envs}. Run several "
                "clients against one ExternalEnv instead."
            )
        return _ExternalEnvToBaseEnv(self, poll_timeout=poll_timeout)

    def get_actions(self, episode_ids: List[str], observations: Dict[str, Any]) -> Dict[str, Any]:
        """Submits observations of several episodes at once, then waits for all actions
        (tfrl extension; `get_action` for one episode).

        The policy computes the actions in one batch when the episodes are polled
        together (PolicyClient and PolicyServerInput use this for a list of episode ids).

        Args:
            episode_ids: The episodes, each started and not waiting for an action.
            observations: Episode id -> observation (an agent dict for multi-agent envs).

        Returns:
            Episode id -> action.

        Raises:
            ValueError: For duplicate ids, a missing observation, or as `get_action`.
            TimeoutError: If no action arrives within `get_action_timeout` seconds.
        """
        if len(set(episode_ids)) != len(episode_ids):
            raise ValueError(f"get_action() received duplicate episode ids: {episode_ids}.")
        missing = [eid for eid in episode_ids if eid not in observations]
        if missing:
            raise ValueError(f"get_action() received no observation for episode ids {missing}; "
                             "pass a dict episode id -> observation with every id.")
        packed = {eid: self._to_agent_dict(observations[eid], "observation") for eid in episode_ids}
        tickets: Dict[str, Optional[ActionTicket]] = {}
        with self._results_avail_condition:
            for eid in episode_ids:
                episode = self._get(eid)
                self._check_observations(eid, packed[eid])
                if episode.is_waiting():
                    raise ValueError(
                        f"Episode {eid} is already waiting for an action in another "
                        "get_action() call; each episode must be run serially."
                    )
            for eid in episode_ids:
                tickets[eid] = self._episodes[eid].add_observation(packed[eid])
            self._results_avail_condition.notify_all()
        result = {}
        for eid in episode_ids:
            ticket = tickets[eid]
            actions = {} if ticket is None else ticket.wait(self.get_action_timeout, eid)
            result[eid] = self._from_agent_dict(actions)
        return result

    # ---- Internals shared with ExternalMultiAgentEnv and the policy server -------------

    def _log_returns(self, episode_id: str, rewards: MultiAgentDict,
                     infos: Optional[MultiAgentDict],
                     dones: Optional[Dict[Any, bool]]) -> None:
        for agent, reward in rewards.items():
            problem = reward_error(reward, self._reward_name(agent))
            if problem:
                raise ValueError(
                    f"Bad reward for episode {episode_id}: {problem}. Rewards must be finite "
                    "numbers that fit float32, the dtype batches store them in: fix the "
                    "simulator's reward (e.g. a division by zero or an overflow), or scale or "
                    "clip it before log_returns()."
                )
        with self._results_avail_condition:
            episode = self._get(episode_id)
            episode.add_rewards(rewards)
            if infos:
                episode.set_info(infos)
            if dones:
                episode.set_dones(dones)

    def _get(self, episode_id: str) -> ExternalEnvEpisode:
        """The running episode `episode_id`, marked active (caller holds the lock)."""
        self._check_running()
        episode = self._episodes.get(episode_id) if isinstance(episode_id, str) else None
        if episode_id in self._finished:
            reason = self._finished.reason(episode_id)
            if reason != "completed":
                raise ValueError(f"Episode {episode_id} {reason}.")
            raise ValueError(f"Episode {episode_id} has already completed.")
        if episode is None:
            raise ValueError(
                f"Unknown episode id {episode_id!r}. Call start_episode() first and pass the "
                "id it returns."
            )
        episode.touch()
        return episode

    def expire_idle_episodes(self, max_idle_s: float) -> List[str]:
        """Drops the episodes the simulator left idle for more than `max_idle_s` seconds
        (tfrl extension; a policy server calls it so that abandoned episodes do not
        hold `max_concurrent` slots forever).

        An episode is idle when it has not ended, no call waits for its action and
        nothing of it was called for `max_idle_s`. Its unpolled data are discarded;
        later calls with its id raise ValueError saying that it expired.

        Returns:
            The ids of the expired episodes.
        """
        now = time.monotonic()
        with self._results_avail_condition:
            expired = [eid for eid, e in self._episodes.items() if e.is_idle(now, max_idle_s)]
            for eid in expired:
                del self._episodes[eid]
                self._finished.add(eid, f"expired: it was idle for more than {max_idle_s} s "
                                        "(no call for it); start a new episode")
        return expired

    def _check_running(self) -> None:
        if self._env_stopped:
            raise ExternalEnvStopped(
                f"{type(self).__name__} was stopped; it takes no more episodes.")

    def _to_agent_dict(self, value: Any, what: str) -> MultiAgentDict:
        return {_DUMMY_AGENT_ID: value}

    def _from_agent_dict(self, actions: MultiAgentDict) -> Any:
        return actions.get(_DUMMY_AGENT_ID)

    def _reward_name(self, agent: Any) -> str:
        return "reward"

    def _check_observations(self, episode_id: str, obs: MultiAgentDict) -> None:
        value = obs[_DUMMY_AGENT_ID]
        problem = nonfinite_error(value, "observation")
        if problem:
            raise ValueError(f"Bad observation for episode {episode_id}: {problem}. "
                             f"{NONFINITE_FIX}")
        problem = observation_error(self.observation_space, value)
        if problem:
            raise ValueError(f"Bad observation for episode {episode_id}: {problem}.")

    def _check_actions(self, actions: MultiAgentDict) -> None:
        problem = action_error(self.action_space, actions[_DUMMY_AGENT_ID])
        if problem:
            raise ValueError(f"Bad off-policy action: {problem}.")

    def episode_counts(self) -> Dict[str, int]:
        """`{"episodes": tracked episodes (running or not yet polled), "finished_ids":
        remembered ids of finished episodes}` (tfrl extension; both bounded)."""
        with self._results_avail_condition:
            return {"episodes": len(self._episodes), "finished_ids": len(self._finished)}

    def has_ended_episodes(self) -> bool:
        """Whether an episode has ended but was not taken by a poll yet."""
        with self._results_avail_condition:
            return any(e.ended for e in self._episodes.values())

    def wait_until_stopped(self, check_every_s: float = 1.0) -> None:
        """Blocks until the env is stopped (a serving env's `run()` does nothing else)."""
        with self._results_avail_condition:
            while not self._env_stopped:
                self._results_avail_condition.wait(check_every_s)

    def _stop_env(self) -> None:
        """Refuses new calls and releases every caller waiting for an action."""
        with self._results_avail_condition:
            self._env_stopped = True
            for episode in self._episodes.values():
                for ticket in [episode.polled_ticket] + [i.ticket for i in episode.items]:
                    if ticket is not None:
                        ticket.set_error(ExternalEnvStopped(
                            f"{type(self).__name__} was stopped while episode "
                            f"{episode.episode_id} waited for an action."))
            self._results_avail_condition.notify_all()
