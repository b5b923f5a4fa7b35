"""`Episode`: the state of one (possibly multi-agent) episode in one sub-env.

Samplers create one `Episode` per sub-env episode and hand it to callbacks,
`policy_mapping_fn` and policies. It keeps the agents' bindings to policies, their last
observations, actions, rewards, infos and recurrent states, the summed rewards, and
user data (`custom_metrics`, `user_data`, `hist_data`, `media`).

Example:
    >>> ep = Episode({"pol": object()}, lambda agent_id, episode, **kw: "pol",
    ...              batch_builder_factory=list, extra_batch_callback=print, env_id=0)
    >>> ep.policy_for("car")
    'pol'
    >>> ep.add_agent_rewards({"car": 1.5}); ep.add_agent_rewards({"car": 2.0})
    >>> ep.total_reward, ep.last_reward_for("car"), ep.prev_reward_for("car")
    (3.5, 2.0, 1.5)
"""

import logging
import random
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tree

from tfrl.env.base_env import _DUMMY_AGENT_ID
from tfrl.utils.spaces.space_utils import fill_value_for_space
from tfrl.utils.typing import AgentID, EnvID, PolicyID

logger = logging.getLogger(__name__)

# Fragments of TypeError messages that mean "the mapping fn takes the old one-arg form".
_LEGACY_SIGNATURE_ERRORS = ("positional argument", "unexpected keyword argument")


class Episode:
    """Tracks one episode of one sub-env (RLlib's `ray.rllib.evaluation.episode.Episode`).

    Args:
        policies: Policy id -> Policy (the worker's policy map).
        policy_mapping_fn: `(agent_id, episode, worker, **kwargs) -> policy_id`, called
            once per agent and episode (the result is kept for the rest of the
            episode). The legacy one-argument form `(agent_id) -> policy_id` still
            works (with a deprecation warning).
        batch_builder_factory: Zero-argument callable returning a new
            `MultiAgentSampleBatchBuilder` (exposed as `new_batch_builder`); called once
            on construction for `batch_builder`.
        extra_batch_callback: Called with a SampleBatch/MultiAgentBatch by
            `add_extra_batch`; the sampler returns such batches from
            `get_extra_batches()`.
        env_id: Id of the sub-env this episode runs in.
        worker: The owning RolloutWorker (or None).

    Attributes:
        episode_id: Random int in `[0, 2e9)`; a new one after `soft_reset`.
        length: Env steps so far.
        total_reward: Sum of all agents' rewards.
        agent_rewards: `(agent_id, policy_id) -> summed reward` (as RLlib).
        custom_metrics: Name -> float; reported with the episode's metrics.
        user_data: Scratch space for callbacks.
        hist_data: Name -> list of floats; reported as histograms.
        media: Name -> anything; reported with the episode's metrics.
        batch_builder: The builder made by `batch_builder_factory` on construction.
        policy_map: The policies (also as `_policies`).
    """

    def __init__(self, policies: Dict[PolicyID, Any], policy_mapping_fn: Callable,
                 batch_builder_factory: Callable[[], Any], extra_batch_callback: Callable,
                 env_id: EnvID, *, worker: Any = None):
        self.new_batch_builder = batch_builder_factory
        self.add_extra_batch = extra_batch_callback
        # As in RLlib, the episode's first builder exists from the start.
        self.batch_builder = batch_builder_factory()
        self.total_reward = 0.0
        self.length = 0
        self.episode_id = random.randrange(int(2e9))
        self.env_id = env_id
        self.worker = worker
        self.agent_rewards: Dict[tuple, float] = defaultdict(float)
        self.custom_metrics: Dict[str, float] = {}
        self.user_data: Dict[str, Any] = {}
        self.hist_data: Dict[str, List[float]] = {}
        self.media: Dict[str, Any] = {}
        self.policy_map = policies
        self._policies = policies
        self.policy_mapping_fn = policy_mapping_fn
        self._next_agent_index = 0
        self._agent_to_index: Dict[AgentID, int] = {}
        self._agent_to_policy: Dict[AgentID, PolicyID] = {}
        self._agent_to_rnn_state: Dict[AgentID, List[Any]] = {}
        self._agent_to_last_obs: Dict[AgentID, Any] = {}
        self._agent_to_last_raw_obs: Dict[AgentID, Any] = {}
        self._agent_to_last_terminated: Dict[AgentID, bool] = {}
        self._agent_to_last_truncated: Dict[AgentID, bool] = {}
        self._agent_to_last_info: Dict[AgentID, dict] = {}
        self._agent_to_last_action: Dict[AgentID, Any] = {}
        self._agent_to_last_extra_action_outs: Dict[AgentID, dict] = {}
        self._agent_to_prev_action: Dict[AgentID, Any] = {}
        self._agent_reward_history: Dict[AgentID, List[float]] = defaultdict(list)

    # --------------------------------------------------------------- getters
    def get_agents(self) -> List[AgentID]:
        """Ids of the agents seen so far, in order of first appearance."""
        return list(self._agent_to_index)

    def policy_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> PolicyID:
        """The policy id of `agent_id`, bound on first call for the rest of the episode.

        Raises:
            KeyError: The mapping fn returned an id that is not in the policy map
                (raised on every call for that agent).
        """
        if agent_id not in self._agent_to_policy:
            try:
                policy_id = self.policy_mapping_fn(agent_id, self, worker=self.worker)
            except TypeError as e:
                if not any(s in str(e) for s in _LEGACY_SIGNATURE_ERRORS):
                    raise
                if not getattr(Episode, "_warned_legacy_mapping", False):
                    logger.warning(
                        "policy_mapping_fn(agent_id) is deprecated; use "
                        "policy_mapping_fn(agent_id, episode, worker, **kwargs).")
                    Episode._warned_legacy_mapping = True
                policy_id = self.policy_mapping_fn(agent_id)
            self._agent_to_policy[agent_id] = policy_id
        policy_id = self._agent_to_policy[agent_id]
        if policy_id not in self.policy_map:
            raise KeyError(
                f"policy_mapping_fn returned invalid policy id {policy_id!r} for agent "
                f"{agent_id!r}! Valid policy ids: {sorted(map(str, self.policy_map))}. Fix "
                "the policy_mapping_fn or add the policy (multiagent.policies)."
            )
        return policy_id

    def last_observation_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> Any:
        """The last preprocessed and filtered observation of the agent, or None."""
        return self._agent_to_last_obs.get(agent_id)

    def last_raw_obs_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> Any:
        """The last observation of the agent as the env returned it, or None."""
        return self._agent_to_last_raw_obs.get(agent_id)

    def last_info_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> Optional[dict]:
        """The last info dict of the agent, or None."""
        return self._agent_to_last_info.get(agent_id)

    def last_action_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> Any:
        """The agent's last action, flattened to one array for Dict/Tuple actions.

        Zeros shaped like a (flattened) action of the agent's policy's action space if
        the agent has not acted yet.
        """
        if agent_id in self._agent_to_last_action:
            return _flatten_action(self._agent_to_last_action[agent_id])
        return self._zero_action(agent_id)

    def prev_action_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> Any:
        """The action before the last one (flattened); if there is none, zeros shaped
        like `last_action_for(agent_id)` (for a Dict/Tuple action: the flattened
        action's size), as in RLlib."""
        if agent_id in self._agent_to_prev_action:
            return _flatten_action(self._agent_to_prev_action[agent_id])
        return np.zeros_like(self.last_action_for(agent_id))

    def last_reward_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> float:
        """The agent's most recent reward; 0.0 if none."""
        history = self._agent_reward_history.get(agent_id)
        return history[-1] if history else 0.0

    def prev_reward_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> float:
        """The reward before the agent's most recent one; 0.0 if none."""
        history = self._agent_reward_history.get(agent_id)
        return history[-2] if history and len(history) >= 2 else 0.0

    def last_done_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> bool:
        """Whether the agent's episode ended (terminated or truncated); False if unknown."""
        return self.last_terminated_for(agent_id) or self.last_truncated_for(agent_id)

    def last_terminated_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> bool:
        """The agent's last `terminated` flag; False (and stored) if unknown."""
        return self._agent_to_last_terminated.setdefault(agent_id, False)

    def last_truncated_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> bool:
        """The agent's last `truncated` flag; False (and stored) if unknown."""
        return self._agent_to_last_truncated.setdefault(agent_id, False)

    def last_extra_action_outs_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> dict:
        """The extra outputs of `compute_actions` for the agent's last action.

        Raises:
            KeyError: The agent has not acted yet.
        """
        return self._agent_to_last_extra_action_outs[agent_id]

    def rnn_state_for(self, agent_id: AgentID = _DUMMY_AGENT_ID) -> List[Any]:
        """The agent's recurrent state; its policy's initial state if not set yet."""
        if agent_id not in self._agent_to_rnn_state:
            policy = self.policy_map[self.policy_for(agent_id)]
            self._agent_to_rnn_state[agent_id] = policy.get_initial_state()
        return self._agent_to_rnn_state[agent_id]

    def soft_reset(self) -> None:
        """Starts a new logical episode in the same env without resetting it.

        Resets `length`, `total_reward`, the per-agent rewards and reward histories and
        draws a new `episode_id`; keeps recurrent states, last observations, actions,
        infos and the agents' policy bindings.
        """
        self.length = 0
        self.episode_id = random.randrange(int(2e9))
        self.total_reward = 0.0
        self.agent_rewards = defaultdict(float)
        self._agent_reward_history = defaultdict(list)

    # ------------------------------------------------- recording (samplers)
    # The samplers record what happens through these methods; callbacks and policies
    # read it back through the getters above.
    def agent_index(self, agent_id: AgentID) -> int:
        """The agent's index in this episode (0, 1, ... in order of first call)."""
        if agent_id not in self._agent_to_index:
            self._agent_to_index[agent_id] = self._next_agent_index
            self._next_agent_index += 1
        return self._agent_to_index[agent_id]

    def add_agent_rewards(self, reward_dict: Dict[AgentID, float]) -> None:
        """Adds each agent's reward (None: no reward) to the sums and reward histories."""
        for agent_id, reward in reward_dict.items():
            if reward is not None:
                self.agent_rewards[agent_id, self.policy_for(agent_id)] += reward
                self.total_reward += reward
                self._agent_reward_history[agent_id].append(reward)

    def set_rnn_state(self, agent_id: AgentID, rnn_state: List[Any]) -> None:
        """Sets the agent's recurrent state (read by `rnn_state_for`)."""
        self._agent_to_rnn_state[agent_id] = rnn_state

    def set_last_observation(self, agent_id: AgentID, obs: Any) -> None:
        """Sets the agent's last preprocessed and filtered observation."""
        self._agent_to_last_obs[agent_id] = obs

    def set_last_raw_obs(self, agent_id: AgentID, obs: Any) -> None:
        """Sets the agent's last observation as the env returned it."""
        self._agent_to_last_raw_obs[agent_id] = obs

    def set_last_info(self, agent_id: AgentID, info: dict) -> None:
        """Sets the agent's last info dict."""
        self._agent_to_last_info[agent_id] = info

    def set_last_done(self, agent_id: AgentID, terminated: bool,
                      truncated: bool = False) -> None:
        """Sets the agent's last `terminated` and `truncated` flags."""
        self._agent_to_last_terminated[agent_id] = bool(terminated)
        self._agent_to_last_truncated[agent_id] = bool(truncated)

    def set_last_action(self, agent_id: AgentID, action: Any) -> None:
        """Sets the agent's last action; the one before becomes `prev_action_for`."""
        if agent_id in self._agent_to_last_action:
            self._agent_to_prev_action[agent_id] = self._agent_to_last_action[agent_id]
        self._agent_to_last_action[agent_id] = action

    def set_last_extra_action_outs(self, agent_id: AgentID, outs: dict) -> None:
        """Sets the extra outputs of `compute_actions` for the agent's last action."""
        self._agent_to_last_extra_action_outs[agent_id] = outs

    def set_single_agent_state(self, agent_id: AgentID, *, length: int, total_reward: float,
                               recent_rewards: List[float], obs: Any, raw_obs: Any,
                               info: dict, terminated: bool, truncated: bool,
                               action: Any = None) -> None:
        """Overwrites the state of an episode whose only agent is `agent_id`.

        For a sampler that keeps the episode's data in arrays of its own and brings the
        `Episode` up to date only when callbacks or policies look at it (the array-based
        loop): sets `length` and `total_reward`, makes `agent_rewards` hold only
        `(agent_id, its policy) -> total_reward` (nothing if `length` is 0), replaces the
        agent's reward history by `recent_rewards` (what `last_reward_for` and
        `prev_reward_for` read), and sets the last observation, raw observation, info,
        done flags and (if not None) the last action, without moving the previous last
        action to `prev_action_for`.
        """
        self.length = length
        self.total_reward = total_reward
        self.agent_rewards.clear()
        if length:
            self.agent_rewards[agent_id, self.policy_for(agent_id)] = total_reward
        if recent_rewards:
            self._agent_reward_history[agent_id] = recent_rewards
        else:  # no reward yet: no history entry (as the generic loop leaves it)
            self._agent_reward_history.pop(agent_id, None)
        self._agent_to_last_obs[agent_id] = obs
        self._agent_to_last_raw_obs[agent_id] = raw_obs
        self._agent_to_last_info[agent_id] = info
        self._agent_to_last_terminated[agent_id] = terminated
        self._agent_to_last_truncated[agent_id] = truncated
        if action is not None:
            self._agent_to_last_action[agent_id] = action

    def _zero_action(self, agent_id: AgentID) -> Any:
        space = self.policy_map[self.policy_for(agent_id)].action_space
        return _flatten_action(fill_value_for_space(space, 0))


# RLlib's name for the class; the multi-agent variant adds nothing.
MultiAgentEpisode = Episode


def _flatten_action(action: Any) -> Any:
    """Dict/Tuple actions -> one 1-D array of their leaves; other actions unchanged."""
    if isinstance(action, (dict, tuple, list)):
        leaves = [np.reshape(np.asarray(leaf), [-1]) for leaf in tree.flatten(action)]
        return np.concatenate(leaves) if leaves else np.zeros(0)
    return action
