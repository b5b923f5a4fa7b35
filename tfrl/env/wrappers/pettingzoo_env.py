"""PettingZoo environments as tfrl `MultiAgentEnv`s (RLlib's `ray.rllib.env.wrappers.pettingzoo_env`).

`ParallelPettingZooEnv(env)` adapts a PettingZoo Parallel env (every live agent acts at
each step); `PettingZooEnv(env)` adapts an AEC env (one agent acts at a time: the
env's `agent_selection`). Neither imports PettingZoo: they use its API by name.

Example (an AEC game with action masks in the observations):
    >>> import pettingzoo
    >>> env = PettingZooEnv(pettingzoo.make("aec", "classic/tictactoe-v3"))
    >>> sorted(env.get_agent_ids()), env.get_action_space("player_1")
    (['player_1', 'player_2'], Discrete(9))
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs), sorted(obs["player_1"])
    (['player_1'], ['action_mask', 'observation'])
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_1": 4})
    >>> list(obs), obs["player_2"]["action_mask"].tolist()
    (['player_2'], [1, 1, 1, 1, 0, 1, 1, 1, 1])

The rules both adapters follow:

* **Agents and spaces.** The agent ids are the env's `possible_agents` (an env without
  them is reset once at construction and its `agents` are taken, as RLlib does).
  `observation_space` and `action_space` are `gymnasium.spaces.Dict`s keyed by those
  ids, each agent's space the PettingZoo env's `observation_space(agent)` /
  `action_space(agent)`; `get_observation_space(agent)` and `get_action_space(agent)`
  ask the PettingZoo env, so an agent that joins later under a new id has spaces too
  (a policy that only such agents map to needs its spaces in its `PolicySpec`).
* **Agents joining and leaving.** A step reports the agents that acted in it and the
  agents that joined (Parallel: every agent live at the start of the step and every
  agent in `env.agents` after it; AEC: the agent selected next, after any finished
  agents PettingZoo selects first). An agent whose `terminated` or `truncated` flag is
  set is reported once with it and then leaves: it is absent from later dicts. The
  episode ends when the PettingZoo env has no agents left; then `truncateds["__all__"]`
  is True if any agent reported in that step was truncated (a time limit ends the
  episode for everyone), else `terminateds["__all__"]` is. Rewards an AEC env gives an
  agent while it waits are summed by PettingZoo and reported at the agent's next turn.
* **Action masks.** Observations and infos pass through unchanged. PettingZoo's masks
  live either in dict observations `{"observation": ..., "action_mask": ...}` (the
  classic games: the agent's observation space is that `Dict`) or in `infos[agent]
  ["action_mask"]`. A dict observation reaches the policy flattened in the space's key
  order (the row starts with the mask: "action_mask" sorts before "observation"), and
  the catalog's default models mask the logits / Q-values with it
  (`tfrl.models.action_mask`); a custom model receives the mask in its input and masks
  for itself. Masks in infos reach callbacks and the batch's `infos` column, not the
  model.
* **Checked at the door.** A non-PettingZoo env, an AEC env given to the Parallel
  adapter (or the reverse), a space that is not a gymnasium space, actions for agents
  that are not to act (or none for one that is), a live agent missing from a step's
  dicts, an agent that leaves without a `terminated`/`truncated` flag (or keeps acting
  with one), and a finished agent that comes back all raise errors naming the agent,
  what was received and what was expected. Keys of a Parallel env's dicts that are no
  agent of the step (PettingZoo allows extras such as a shared "common" entry) are
  dropped.
"""

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

import gymnasium as gym

from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.utils.typing import AgentID, MultiAgentDict

__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]

_FIVE = ("obs", "rewards", "terminateds", "truncateds", "infos")


def _is_aec(env: Any) -> bool:
    return hasattr(env, "last") and hasattr(env, "observe")


def _check_is_pettingzoo(env: Any, adapter: str) -> None:
    space_fn = getattr(env, "observation_space", None)
    if (not callable(space_fn) or isinstance(space_fn, gym.Space)
            or not callable(getattr(env, "action_space", None)) or not hasattr(env, "step")):
        raise TypeError(
            f"{adapter} wraps a PettingZoo env; received {type(env).__name__}: {env!r}, which "
            "has no observation_space(agent) / action_space(agent) methods. Expected a "
            "pettingzoo.ParallelEnv (ParallelPettingZooEnv) or pettingzoo.AECEnv (PettingZooEnv); "
            "a gymnasium env needs no adapter, and make_multi_agent() runs several copies of one."
        )


def _agent_list(env: Any, adapter: str) -> List[AgentID]:
    """`env.possible_agents`, or the agents after a reset for envs that do not declare them."""
    agents = getattr(env, "possible_agents", None)
    if not agents:
        env.reset()
        agents = getattr(env, "agents", None)
    if not agents:
        raise ValueError(
            f"{adapter}: {type(env).__name__} has no possible_agents and no agents after "
            "reset(); expected at least one agent id."
        )
    return list(agents)


def _agent_spaces(env: Any, agents: Iterable[AgentID], kind: str) -> Dict[AgentID, gym.Space]:
    spaces = {}
    for agent in agents:
        try:
            space = getattr(env, f"{kind}_space")(agent)
        except KeyError as e:
            known = getattr(env, "possible_agents", None) or getattr(env, "agents", [])
            raise ValueError(
                f"{type(env).__name__} has no {kind} space for agent {agent!r} ({kind}_space"
                f"({agent!r}) raised KeyError); its agents are {sorted(known, key=repr)}."
            ) from e
        if not isinstance(space, gym.Space):
            raise TypeError(
                f"{type(env).__name__}.{kind}_space({agent!r}) returned {type(space).__name__}: "
                f"{space!r}; expected a gymnasium.spaces.Space (PettingZoo >= 1.22 uses "
                "gymnasium; convert gym spaces to gymnasium ones)."
            )
        spaces[agent] = space
    return spaces


def _all_flags(reported: Dict[AgentID, Tuple[bool, bool]], ended: bool) -> Tuple[bool, bool]:
    """(`terminateds["__all__"]`, `truncateds["__all__"]`) of a step (see the module docstring)."""
    truncated = ended and any(trunc for _, trunc in reported.values())
    return ended and not truncated, truncated


class _PettingZooAdapter(MultiAgentEnv):
    """What both adapters share: agent ids, per-agent spaces, finished agents, render/close."""

    def __init__(self, env: Any, adapter: str):
        super().__init__()
        _check_is_pettingzoo(env, adapter)
        self._pz = env
        self._adapter = adapter
        agents = _agent_list(env, adapter)
        self._agent_ids = set(agents)
        self.observation_space = gym.spaces.Dict(_agent_spaces(env, agents, "observation"))
        self.action_space = gym.spaces.Dict(_agent_spaces(env, agents, "action"))
        self._finished: Set[AgentID] = set()  # agents that left this episode

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The PettingZoo env's `observation_space(agent_id)` (checked to be a gymnasium space).

        Raises:
            ValueError: If the PettingZoo env has no space for `agent_id` (a KeyError).
        """
        return _agent_spaces(self._pz, [agent_id], "observation")[agent_id]

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The PettingZoo env's `action_space(agent_id)` (checked to be a gymnasium space).

        Raises:
            ValueError: If the PettingZoo env has no space for `agent_id` (a KeyError).
        """
        return _agent_spaces(self._pz, [agent_id], "action")[agent_id]

    @property
    def get_sub_environments(self) -> Any:
        """The unwrapped PettingZoo env (a property, as in RLlib)."""
        return self._pz.unwrapped

    def state(self) -> Any:
        """The PettingZoo env's global state (its `state()`; centralized critics such as
        MAPPO's read it). Raises what the PettingZoo env raises without one
        (`NotImplementedError`)."""
        return self._pz.state()

    def render(self) -> Any:
        return self._pz.render()

    def close(self) -> None:
        self._pz.close()

    def _check_not_revived(self, agents: Iterable[AgentID]) -> None:
        revived = [agent for agent in agents if agent in self._finished]
        if revived:
            raise ValueError(
                f"{self._adapter}: agent {revived[0]!r} of {type(self._pz).__name__} is live "
                "again after it was reported terminated or truncated in this episode; "
                "PettingZoo agents cannot come back (give a returning agent a new id)."
            )

    def _check_actions(self, action_dict: Any, expected: List[AgentID]) -> None:
        if not isinstance(action_dict, dict):
            raise ValueError(
                f"{self._adapter}.step() takes a dict agent_id -> action; received "
                f"{type(action_dict).__name__}: {action_dict!r}."
            )
        missing = [agent for agent in expected if agent not in action_dict]
        extra = [agent for agent in action_dict if agent not in set(expected)]
        if missing or extra:
            agent = (missing or extra)[0]
            why = ("is to act but got no action" if missing else
                   "is not to act at this step (finished, unknown or waiting for its turn)")
            raise ValueError(
                f"{self._adapter}.step(): agent {agent!r} {why}. Received actions for "
                f"{sorted(action_dict, key=repr)}; expected actions for exactly "
                f"{sorted(expected, key=repr)}."
            )


class ParallelPettingZooEnv(_PettingZooAdapter):
    """A PettingZoo Parallel env as a `MultiAgentEnv`.

    Args:
        env: A `pettingzoo.ParallelEnv` (e.g. `mpe2.simple_spread_v3.parallel_env()`),
            kept as `self.par_env`.

    Raises:
        TypeError: If `env` is not a PettingZoo Parallel env, or a space is not a
            gymnasium space.

    See the module docstring for agents joining and leaving, action masks, and checks.
    """

    def __init__(self, env: Any):
        if _is_aec(env):
            raise TypeError(
                f"ParallelPettingZooEnv wraps a PettingZoo Parallel env; received the AEC env "
                f"{type(env).__name__}. Wrap it in PettingZooEnv instead, or convert it with "
                "pettingzoo.utils.aec_to_parallel(env)."
            )
        super().__init__(env, "ParallelPettingZooEnv")
        self.par_env = env

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Tuple[MultiAgentDict, MultiAgentDict]:
        self._finished = set()
        result = self.par_env.reset(seed=seed, options=options)
        if not (isinstance(result, tuple) and len(result) == 2
                and all(isinstance(d, dict) for d in result)):
            raise ValueError(
                f"{type(self.par_env).__name__}.reset() must return (observations, infos), two "
                f"dicts keyed by agent (PettingZoo >= 1.23); received {result!r}."
            )
        obs, infos = result
        agents = list(self.par_env.agents)
        if not agents:
            raise ValueError(f"{type(self.par_env).__name__} has no agents after reset(); "
                             "expected at least one.")
        self._check_keys(agents, {"obs": obs}, "reset")
        return {a: obs[a] for a in agents}, {a: infos.get(a, {}) for a in agents}

    def step(self, action_dict: MultiAgentDict) -> Tuple[MultiAgentDict, ...]:
        live = list(self.par_env.agents)
        self._check_actions(action_dict, live)
        result = self.par_env.step(action_dict)
        if not (isinstance(result, tuple) and len(result) == 5
                and all(isinstance(d, dict) for d in result)):
            raise ValueError(
                f"{type(self.par_env).__name__}.step() must return five dicts keyed by agent: "
                f"(observations, rewards, terminations, truncations, infos); received {result!r}."
            )
        obs, rewards, terms, truncs, infos = result
        now = list(self.par_env.agents)
        self._check_not_revived(now)
        reported = live + [a for a in now if a not in set(live)]
        self._check_keys(reported, dict(zip(_FIVE[:4], result[:4])), "step")
        flags = {a: (bool(terms[a]), bool(truncs[a])) for a in reported}
        still = set(now)
        for agent, (term, trunc) in flags.items():
            if (term or trunc) == (agent in still):
                raise ValueError(
                    f"ParallelPettingZooEnv: agent {agent!r} of {type(self.par_env).__name__} "
                    + (f"left env.agents without a terminated or truncated flag (received "
                       f"terminated={terms[agent]!r}, truncated={truncs[agent]!r})"
                       if agent not in still else
                       f"is still in env.agents although flagged terminated={terms[agent]!r}, "
                       f"truncated={truncs[agent]!r}")
                    + "; expected the agents flagged in a step to be exactly those that "
                    "leave env.agents."
                )
            if term or trunc:
                self._finished.add(agent)
        term_all, trunc_all = _all_flags(flags, not now)
        out_terms = {a: flags[a][0] for a in reported}
        out_truncs = {a: flags[a][1] for a in reported}
        out_terms["__all__"], out_truncs["__all__"] = term_all, trunc_all
        return ({a: obs[a] for a in reported}, {a: rewards[a] for a in reported}, out_terms,
                out_truncs, {a: infos.get(a, {}) for a in reported})

    def _check_keys(self, agents: List[AgentID], dicts: Dict[str, dict], where: str) -> None:
        for name, d in dicts.items():
            for agent in agents:
                if agent not in d:
                    raise ValueError(
                        f"{type(self.par_env).__name__}.{where}() gave no {name} entry for "
                        f"agent {agent!r}; received {name} for {sorted(d, key=repr)}; expected "
                        f"every agent of the step: {sorted(agents, key=repr)}."
                    )


class PettingZooEnv(_PettingZooAdapter):
    """A PettingZoo AEC env (agents act in turn) as a `MultiAgentEnv`.

    Each `step` takes the action of the selected agent only and reports the agent
    selected next (preceded by the finished agents PettingZoo selects first, each
    reported once with its flag, its final reward and observation).

    Args:
        env: A `pettingzoo.AECEnv` (e.g. `pettingzoo.classic.tictactoe_v3.env()`), kept
            as `self.env`.

    Raises:
        TypeError: If `env` is not a PettingZoo AEC env, or a space is not a gymnasium
            space.

    See the module docstring for agents joining and leaving, action masks, and checks.
    """

    def __init__(self, env: Any):
        if not _is_aec(env):
            _check_is_pettingzoo(env, "PettingZooEnv")
            raise TypeError(
                f"PettingZooEnv wraps a PettingZoo AEC env; received the Parallel env "
                f"{type(env).__name__}. Wrap it in ParallelPettingZooEnv instead, or convert "
                "it with pettingzoo.utils.parallel_to_aec(env)."
            )
        super().__init__(env, "PettingZooEnv")
        self.env = env

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Tuple[MultiAgentDict, MultiAgentDict]:
        self._finished = set()
        self.env.reset(seed=seed, options=options)
        if not self.env.agents:
            raise ValueError(f"{type(self.env).__name__} has no agents after reset(); "
                             "expected at least one.")
        agent = self.env.agent_selection
        return {agent: self.env.observe(agent)}, {agent: self.env.infos.get(agent, {})}

    def step(self, action_dict: MultiAgentDict) -> Tuple[MultiAgentDict, ...]:
        if not self.env.agents:
            raise ValueError("PettingZooEnv.step(): the episode has ended (no agents left); "
                             "call reset() first.")
        self._check_actions(action_dict, [self.env.agent_selection])
        self.env.step(action_dict[self.env.agent_selection])
        out: Tuple[dict, dict, dict, dict, dict] = ({}, {}, {}, {}, {})
        flags = {}
        while self.env.agents:
            self._check_not_revived(self.env.agents)
            agent = self.env.agent_selection
            obs, reward, term, trunc, info = self.env.last()
            flags[agent] = (bool(term), bool(trunc))
            for d, value in zip(out, (obs, reward, bool(term), bool(trunc), info)):
                d[agent] = value
            if not (term or trunc):
                break
            self._finished.add(agent)
            self.env.step(None)  # PettingZoo's "dead step": removes the finished agent
        out[2]["__all__"], out[3]["__all__"] = _all_flags(flags, not self.env.agents)
        return out
