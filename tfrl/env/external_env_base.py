"""The BaseEnv view of an ExternalEnv (or ExternalMultiAgentEnv): `_ExternalEnvToBaseEnv`.

Env ids are episode ids. Each `poll()` hands out at most one logged observation per
episode; episodes waiting in `get_action` are answered by `send_actions`. Items
logged with `log_action` carry their action in `off_policy_actions` and need no
`send_actions` (actions sent for them are ignored). The final observation of an
episode comes with `"__all__"` terminated (or truncated), after which the episode
id is unknown to `send_actions`.
"""

import time
from typing import Optional, Tuple

from tfrl.env.base_env_interface import _DUMMY_AGENT_ID, BaseEnv
from tfrl.utils.typing import MultiEnvDict

# Longest single wait inside poll(), so that a dead env thread is noticed.
_MAX_WAIT_S = 1.0


class _ExternalEnvToBaseEnv(BaseEnv):
    """Presents an `ExternalEnv` as a `BaseEnv`; starts the env's thread if needed.

    Args:
        external_env: The ExternalEnv or ExternalMultiAgentEnv.
        poll_timeout: Seconds `poll()` waits for data before returning empty dicts;
            None waits until data arrive, `stop()` is called or the env thread dies.
    """

    # Its env ids are episode ids, which an ExternalEnv never reuses (a sampling loop
    # may forget an id once its episode ended).
    env_ids_are_episode_ids = True

    def __init__(self, external_env, poll_timeout: Optional[float] = None):
        self.external_env = external_env
        self.action_space = external_env.action_space
        self.observation_space = external_env.observation_space
        self.multiagent = bool(getattr(external_env, "_is_multi_agent", False))
        self.poll_timeout = poll_timeout
        self._interrupted = False
        if external_env.ident is None:
            external_env.start()

    def poll(self) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict,
                            MultiEnvDict]:
        """Blocks until at least one episode has a new observation (see module doc).

        Returns empty dicts after `stop()`, `interrupt_poll()`, or when
        `poll_timeout` passed.

        Raises:
            RuntimeError: If the env's thread (its `run()`) has ended and nothing is
                left to hand out.
        """
        env = self.external_env
        deadline = None if self.poll_timeout is None else time.monotonic() + self.poll_timeout
        with env._results_avail_condition:  # pylint: disable=protected-access
            while True:
                if env._env_stopped:  # pylint: disable=protected-access
                    return {}, {}, {}, {}, {}, {}
                results, ready = self._collect()
                if ready or self._interrupted:
                    self._interrupted = False
                    return results
                if not env.is_alive():
                    raise RuntimeError(
                        f"Serving thread has stopped: the run() of {type(env).__name__} "
                        "returned or raised, so no more data will arrive."
                    )
                wait = _MAX_WAIT_S
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return results
                env._results_avail_condition.wait(wait)  # pylint: disable=protected-access

    def _collect(self):
        env = self.external_env
        obs, rewards, terminateds, truncateds, infos, off_policy = {}, {}, {}, {}, {}, {}
        for eid, episode in list(env._episodes.items()):  # pylint: disable=protected-access
            if not episode.items:
                continue
            item = episode.items.popleft()
            obs[eid] = item.obs
            rewards[eid] = item.rewards
            terminateds[eid] = item.terminateds
            truncateds[eid] = item.truncateds
            infos[eid] = item.infos
            if item.off_policy_actions is not None:
                off_policy[eid] = item.off_policy_actions
            episode.polled_ticket = item.ticket
            if item.is_last:
                del env._episodes[eid]  # pylint: disable=protected-access
        return (obs, rewards, terminateds, truncateds, infos, off_policy), bool(obs)

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        """Answers the episodes of the last poll that wait for actions.

        Raises:
            ValueError: For an env id that is not a running episode handed out by
                `poll()`, or agent ids other than those that wait for an action.
            TypeError: If an env's actions are not a dict agent id -> action.
        """
        env = self.external_env
        deliveries = []
        with env._results_avail_condition:  # pylint: disable=protected-access
            for eid, actions in action_dict.items():
                episode = env._episodes.get(eid)  # pylint: disable=protected-access
                if episode is None:
                    running = _id_list(list(env._episodes)[:10])  # pylint: disable=protected-access
                    raise ValueError(
                        f"send_actions() received actions for unknown env id {eid!r}: it is "
                        "not a running episode handed out by poll(). Running episodes "
                        f"(first 10): {running}."
                    )
                if not isinstance(actions, dict):
                    raise TypeError(
                        f"send_actions() takes {{env_id: {{agent_id: action}}}}. Received: "
                        f"{actions!r} for env id {eid!r}; wrap it as "
                        f"{{{_DUMMY_AGENT_ID!r}: action}}."
                    )
                ticket = episode.polled_ticket
                if ticket is None:
                    continue  # Off-policy item (or already answered): nothing waits.
                if set(actions) != ticket.agents:
                    raise ValueError(
                        f"send_actions() for env id {eid!r} received actions for agent ids "
                        f"{_id_list(actions)}, expected exactly "
                        f"{_id_list(ticket.agents)} (the agents that wait for one)."
                    )
                deliveries.append((episode, ticket, actions))
            for episode, ticket, actions in deliveries:
                episode.polled_ticket = None
                ticket.set_actions(dict(actions))

    def interrupt_poll(self) -> None:
        """Makes a blocked (or the next) `poll()` return, empty if nothing is ready."""
        env = self.external_env
        with env._results_avail_condition:  # pylint: disable=protected-access
            self._interrupted = True
            env._results_avail_condition.notify_all()  # pylint: disable=protected-access

    def reject_episode(self, env_id: str, error: BaseException) -> None:
        """Drops a running episode because of bad data (tfrl-internal, for samplers).

        A caller waiting in `get_action` for it raises `error`; later calls with its
        id raise "already completed". Unknown ids are ignored.
        """
        env = self.external_env
        with env._results_avail_condition:  # pylint: disable=protected-access
            episode = env._episodes.pop(env_id, None)  # pylint: disable=protected-access
            if episode is None:
                return
            env._finished.add(env_id)  # pylint: disable=protected-access
            for ticket in [episode.polled_ticket] + [item.ticket for item in episode.items]:
                if ticket is not None:
                    ticket.set_error(error)

    def try_reset(self, env_id=None, *, seed=None, options=None):
        """External envs cannot be reset from outside; returns None."""
        return None

    def get_agent_ids(self) -> set:
        """`{"agent0"}` for single-agent envs; the empty set (not known) otherwise."""
        return set() if self.multiagent else {_DUMMY_AGENT_ID}

    def stop(self) -> None:
        """Stops the env: new calls raise, waiting `get_action` calls raise RuntimeError."""
        self.external_env._stop_env()  # pylint: disable=protected-access


def _id_list(ids) -> str:
    """`['a', 'b']`: ids of any (mixed) types, sorted by their repr."""
    return "[" + ", ".join(sorted(repr(i) for i in ids)) + "]"
