"""The per-episode state of an `ExternalEnv`: what the simulator logged, not yet polled.

An `ExternalEnv` turns calls of a simulator (`get_action`, `log_action`, `log_returns`,
`end_episode`) into *items*, one per observation, which the env's `BaseEnv` view hands
out through `poll()`. Everything is kept per agent (single-agent envs use the agent id
`"agent0"`), so the same code serves `ExternalEnv` and `ExternalMultiAgentEnv`.

Rewards logged after an agent's action accumulate until that agent's next observation
and travel with it; an agent's first observation carries the reward None.

This module is internal: all of its state is guarded by the owning env's lock.
"""

import collections
import dataclasses
import threading
import time
from typing import Any, Deque, Dict, Optional, Set

from tfrl.utils.typing import AgentID, MultiAgentDict


class ActionTicket:
    """One on-policy request waiting for its actions (a minimal future).

    Args:
        agents: Ids of the agents that need an action.
    """

    def __init__(self, agents: Set[AgentID]):
        self.agents = agents
        self._event = threading.Event()
        self._actions: Optional[MultiAgentDict] = None
        self._error: Optional[BaseException] = None

    def set_actions(self, actions: MultiAgentDict) -> None:
        """Delivers the actions and wakes the waiting caller."""
        self._actions = actions
        self._event.set()

    def is_done(self) -> bool:
        """Whether actions (or an error) were delivered."""
        return self._event.is_set()

    def set_error(self, error: BaseException) -> None:
        """Makes the waiting caller raise `error` (e.g. when the env stops)."""
        if not self.is_done():
            self._error = error
            self._event.set()

    def wait(self, timeout: Optional[float], episode_id: str) -> MultiAgentDict:
        """Blocks until the actions are delivered.

        Raises:
            TimeoutError: If nothing arrived within `timeout` seconds.
            RuntimeError: If the env was stopped (or the error set by `set_error`).
        """
        if not self._event.wait(timeout):
            raise TimeoutError(
                f"No action for episode {episode_id!r} within {timeout} s. Is anything "
                "polling this ExternalEnv (a sampler, a policy server)? Check that it "
                "runs and that its policy does not fail."
            )
        if self._error is not None:
            raise self._error
        return self._actions


@dataclasses.dataclass
class Item:
    """One observation of an episode, as `poll()` hands it out (agent-keyed dicts)."""

    obs: MultiAgentDict
    rewards: MultiAgentDict
    terminateds: Dict[Any, bool]
    truncateds: Dict[Any, bool]
    infos: MultiAgentDict
    off_policy_actions: Optional[MultiAgentDict] = None
    ticket: Optional[ActionTicket] = None

    @property
    def is_last(self) -> bool:
        """Whether the item ends the episode (`"__all__"` terminated or truncated)."""
        return self.terminateds["__all__"] or self.truncateds["__all__"]


class RecentIds:
    """The ids of the last `capacity` finished episodes, with why each finished.

    A bounded window: the oldest id is forgotten when a new one arrives at capacity
    (starting an episode with a forgotten id then works again).

    Args:
        capacity: How many ids are remembered.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._reasons: "collections.OrderedDict[str, str]" = collections.OrderedDict()

    def add(self, episode_id: str, reason: str = "completed") -> None:
        """Remembers `episode_id` (forgetting the oldest id at capacity)."""
        self._reasons[episode_id] = reason
        self._reasons.move_to_end(episode_id)
        while len(self._reasons) > self.capacity:
            self._reasons.popitem(last=False)

    def __contains__(self, episode_id: Any) -> bool:
        return episode_id in self._reasons

    def __len__(self) -> int:
        return len(self._reasons)

    def reason(self, episode_id: str) -> Optional[str]:
        """Why `episode_id` finished ("completed", or an expiry message), or None."""
        return self._reasons.get(episode_id)


class ExternalEnvEpisode:
    """Logged but not yet polled data of one episode.

    Args:
        episode_id: The episode's id.
        training_enabled: Whether its experiences may be used for training; if
            False, every info dict it produces carries `"training_enabled": False`.
    """

    def __init__(self, episode_id: str, training_enabled: bool):
        self.episode_id = episode_id
        self.training_enabled = training_enabled
        self.items: Deque[Item] = collections.deque()
        # Set by poll() when it hands out an item that waits for actions.
        self.polled_ticket: Optional[ActionTicket] = None
        self.ended = False
        self._seen_agents: Set[AgentID] = set()
        self._rewards: Dict[AgentID, float] = {}
        self._dones: Dict[AgentID, bool] = {}
        self._info: MultiAgentDict = {}
        self._pending_ticket: Optional[ActionTicket] = None
        # time.monotonic() of the simulator's last call for this episode (`touch`).
        self.last_active = time.monotonic()

    def touch(self) -> None:
        """Records a call of the simulator for this episode (for idle expiry)."""
        self.last_active = time.monotonic()

    def is_idle(self, now: float, max_idle_s: float) -> bool:
        """Whether the simulator left the episode alone (not ended, nobody waiting for an
        action, no call) for more than `max_idle_s` seconds."""
        return (not self.ended and not self.is_waiting() and self.polled_ticket is None
                and now - self.last_active > max_idle_s)

    def add_rewards(self, rewards: MultiAgentDict) -> None:
        """Adds rewards (agent -> float) to each agent's running sum."""
        for agent, reward in rewards.items():
            self._rewards[agent] = self._rewards.get(agent, 0.0) + float(reward)

    def set_info(self, info: MultiAgentDict) -> None:
        """Replaces the info dicts that go with the agents' next observations."""
        self._info = dict(info)

    def set_dones(self, dones: Dict[AgentID, bool]) -> None:
        """Marks agents terminated with their next observation (`"__all__"` ignored)."""
        self._dones.update({a: bool(d) for a, d in dones.items() if a != "__all__"})

    def is_waiting(self) -> bool:
        """Whether an on-policy request of this episode has not been answered yet."""
        return self._pending_ticket is not None and not self._pending_ticket.is_done()

    def add_observation(
        self,
        obs: MultiAgentDict,
        *,
        off_policy_actions: Optional[MultiAgentDict] = None,
        last: bool = False,
        truncated: bool = False,
    ) -> Optional[ActionTicket]:
        """Queues the observations of the agents in `obs` as one item.

        Args:
            obs: Agent id -> observation.
            off_policy_actions: Actions the agents already took (`log_action`); None
                for an on-policy request, which returns a ticket to wait on.
            last: Whether this item ends the episode (`end_episode`).
            truncated: With `last`: truncated instead of terminated.

        Returns:
            The ticket of an on-policy request (agents not done), else None.
        """
        rewards, terminateds, truncateds, infos = {}, {}, {}, {}
        for agent in obs:
            first = agent not in self._seen_agents
            self._seen_agents.add(agent)
            # Rewards logged before an agent's first observation have no action to
            # belong to; they are dropped.
            reward = self._rewards.pop(agent, 0.0)
            rewards[agent] = None if first else reward
            done = self._dones.pop(agent, False)
            terminateds[agent] = (last and not truncated) or done
            truncateds[agent] = last and truncated and not done
            info = self._info.pop(agent, None) or {}
            if not self.training_enabled:
                info = dict(info, training_enabled=False)
            infos[agent] = info
        terminateds["__all__"] = last and not truncated
        truncateds["__all__"] = last and truncated
        ticket = None
        acting = {a for a in obs if not (terminateds[a] or truncateds[a])}
        if off_policy_actions is None and not last and acting:
            ticket = self._pending_ticket = ActionTicket(acting)
        self.items.append(
            Item(dict(obs), rewards, terminateds, truncateds, infos, off_policy_actions, ticket)
        )
        if last:
            self.ended = True
        return ticket
