"""MultiAgentEnv: several agents in one gymnasium-style env, dicts keyed by agent id.

`reset(*, seed=None, options=None) -> (obs, infos)` and
`step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)`, every value a
dict `agent_id -> value`. Only the agents present in `obs` act next (they may differ
from step to step: agents join and leave within an episode). `terminateds` and
`truncateds` both carry `"__all__"`: the episode ended for everyone.

Example:
    >>> import gymnasium as gym
    >>> MultiCartPole = make_multi_agent("CartPole-v1")
    >>> env = MultiCartPole({"num_agents": 2})
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs), env.get_agent_ids()
    ([0, 1], {0, 1})
    >>> obs, rewards, terminateds, truncateds, infos = env.step({0: 1, 1: 0})
    >>> rewards, terminateds
    ({0: 1.0, 1: 1.0}, {0: False, 1: False, '__all__': False})

`MultiAgentEnv.to_base_env()` wraps it (and more sub-envs) as `_MultiAgentEnvToBaseEnv`,
defined here too, as in RLlib: the env builds the adapter and the adapter checks its
sub-envs are MultiAgentEnvs. `MultiAgentEnvWrapper` is RLlib 2.x's name for the adapter;
it reports polls as RLlib 2.x does (what the sub-envs returned, see its docstring), and
`_MultiAgentEnvToBaseEnv` (RLlib 1.x's name, a subclass) as tfrl's sampler reads them:

MultiAgentEnvs seen through BaseEnv's `poll`/`send_actions`.

Per sub-env it tracks which agents await an action (the agents of the last poll's
observations that are not done), the actions sent since the last step, and whether
the episode ended. A poll resets the sub-envs whose episode ended (or that never
started) and steps the sub-envs that got actions; a sub-env that got no action is
not stepped and not reported.

What `_MultiAgentEnvToBaseEnv`'s poll reports for a sub-env: the observations,
rewards, flags and infos of the step (or reset), with every observed agent present in
all four other dicts. A reward is None for an agent's first observation in an episode
(so for all agents right after a reset) unless the env gave one, and 0.0 for a
returning agent the env gave none. Flags default to False, infos to `{}`.

`MultiAgentEnv.with_agent_groups()` builds `GroupAgentsWrapper`, defined here too for
the same reason (RLlib's path `tfrl.env.wrappers.group_agents_wrapper` re-exports it):
each group of agents acts as one agent with Tuple observations and actions.
"""

from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Type, Union

import gymnasium as gym

from tfrl.env.base_env_interface import BaseEnv
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator
from tfrl.utils.typing import AgentID, EnvID, MultiAgentDict, MultiEnvDict

# The key of an agent's Dict observation that holds the global env state (RLlib's
# `ENV_STATE`): QMIX's mixer reads it when present.
ENV_STATE = "state"
# Info keys of a grouped agent (`GroupAgentsWrapper`): its members' own rewards (in the
# group's order; the group's reward is their sum) and their own infos.
GROUP_REWARDS = "_group_rewards"
GROUP_INFO = "_group_info"


class MultiAgentEnv(gym.Env):
    """A gymnasium env whose observations, actions, rewards and flags are agent dicts.

    Subclasses implement `reset(*, seed=None, options=None)` and `step(action_dict)`
    (see the module docstring), and set `observation_space` and `action_space`: one
    space shared by all agents, or a `gymnasium.spaces.Dict` keyed by agent id. Declare
    the agent ids in `self._agent_ids` (or `self.possible_agents`); a Dict space whose
    keys are exactly the agent ids is per agent. If no ids are declared, Dict
    observation and action spaces with the same keys are taken as per agent.
    """

    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None

    def __init__(self):
        if not hasattr(self, "_agent_ids"):
            self._agent_ids = set()

    def get_agent_ids(self) -> Set[AgentID]:
        """The ids of all agents that may appear in this env (empty set if unknown)."""
        ids = getattr(self, "_agent_ids", None) or getattr(self, "possible_agents", None)
        if ids:
            return set(ids)
        obs_space, act_space = self.observation_space, self.action_space
        if (isinstance(obs_space, gym.spaces.Dict) and isinstance(act_space, gym.spaces.Dict)
                and set(obs_space.spaces) == set(act_space.spaces)):
            return set(obs_space.spaces)
        return set()

    def get_observation_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The observation space of agent `agent_id`.

        Raises:
            ValueError: If the spaces are per agent and `agent_id` has none.
        """
        return self._space_of(self.observation_space, agent_id, "observation")

    def get_action_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The action space of agent `agent_id`.

        Raises:
            ValueError: If the spaces are per agent and `agent_id` has none.
        """
        return self._space_of(self.action_space, agent_id, "action")

    @property
    def num_agents(self) -> int:
        """How many agents are in the env now: `len(self.agents)` if the env keeps the
        list of its active agents (gymnasium/PettingZoo's `agents`, as RLlib 2.x),
        else the number of its agent ids. Envs may assign it (`self.num_agents = n`)."""
        if getattr(self, "_num_agents", None) is not None:
            return self._num_agents
        agents = getattr(self, "agents", None)
        return len(agents) if agents is not None else len(self.get_agent_ids())

    @num_agents.setter
    def num_agents(self, value: int) -> None:
        self._num_agents = value

    @property
    def max_num_agents(self) -> int:
        """How many agents the env may have: `len(self.possible_agents)` if set, else the
        number of its agent ids."""
        possible = getattr(self, "possible_agents", None)
        return len(possible) if possible else len(self.get_agent_ids())

    def _check_if_obs_space_maps_agent_id_to_sub_space(self) -> bool:
        """Whether `observation_space` is a Dict keyed by exactly the agent ids (RLlib's
        "preferred format")."""
        return self._is_per_agent(self.observation_space)

    def _check_if_action_space_maps_agent_id_to_sub_space(self) -> bool:
        """Whether `action_space` is a Dict keyed by exactly the agent ids."""
        return self._is_per_agent(self.action_space)

    def _check_if_space_maps_agent_id_to_sub_space(self) -> bool:
        """Whether both spaces are in the preferred format (per-agent Dicts)."""
        return (self._check_if_obs_space_maps_agent_id_to_sub_space()
                and self._check_if_action_space_maps_agent_id_to_sub_space())

    def observation_space_sample(self, agent_ids: Optional[List[AgentID]] = None) -> MultiAgentDict:
        """A random observation per agent (`agent_ids`, default all agent ids)."""
        ids = self.get_agent_ids() if agent_ids is None else agent_ids
        return {aid: self.get_observation_space(aid).sample() for aid in ids if aid != "__all__"}

    def action_space_sample(self, agent_ids: Optional[List[AgentID]] = None) -> MultiAgentDict:
        """A random action per agent (`agent_ids`, default all agent ids)."""
        ids = self.get_agent_ids() if agent_ids is None else agent_ids
        return {aid: self.get_action_space(aid).sample() for aid in ids if aid != "__all__"}

    def observation_space_contains(self, x: MultiAgentDict) -> bool:
        """Whether `x` is a dict of observations each in its agent's space."""
        return self._contains(x, self.get_observation_space)

    def action_space_contains(self, x: MultiAgentDict) -> bool:
        """Whether `x` is a dict of actions each in its agent's space."""
        return self._contains(x, self.get_action_space)

    def _contains(self, x: Any, space_of: Callable[[AgentID], Optional[gym.Space]]) -> bool:
        if not isinstance(x, dict):
            return False
        try:
            return all(space_of(aid).contains(value) for aid, value in x.items())
        except ValueError:  # an agent id without a space
            return False

    def _is_per_agent(self, space: Optional[gym.Space]) -> bool:
        ids = self.get_agent_ids()
        return bool(isinstance(space, gym.spaces.Dict) and ids and set(space.spaces) == ids)

    def with_agent_groups(self, groups: Dict[str, List[AgentID]],
                          obs_space: Optional[gym.Space] = None,
                          act_space: Optional[gym.Space] = None) -> "MultiAgentEnv":
        """This env with each group of agents acting as one agent (RLlib's grouping).

        A group's observation is the tuple of its members' observations, its action a
        sequence of its members' actions (in `groups[group_id]`'s order), its reward the
        sum of theirs (each member's own in its info under `"_group_rewards"`), and it
        is terminated (truncated) when all its members are. All members of a group
        must act at the same time. Agents in no group stay as they are.

        Args:
            groups: group id -> the ids of its agents.
            obs_space: The grouped env's observation space (for a single group, the
                Tuple of its members' spaces). None: a Dict keyed by the new agent ids
                (a group's entry the Tuple of its members' spaces), if the env's agent
                ids are known, else the env's space.
            act_space: The same for actions.

        Returns:
            A `GroupAgentsWrapper` around this env.

        Example:
            >>> MultiCartPole = make_multi_agent("CartPole-v1")
            >>> env = MultiCartPole({"num_agents": 2}).with_agent_groups({"team": [0, 1]})
            >>> obs, infos = env.reset(seed=0)
            >>> sorted(obs), len(obs["team"])
            (['team'], 2)
            >>> obs, rewards, terminateds, truncateds, infos = env.step({"team": (1, 0)})
            >>> team_info = infos["team"]  # each member's reward, in the group's order
            >>> rewards, team_info["_group_rewards"]
            ({'team': 2.0}, [1.0, 1.0])
        """
        return GroupAgentsWrapper(self, groups, obs_space, act_space)

    def to_base_env(
        self, make_env: Optional[Callable[[int], "MultiAgentEnv"]] = None, num_envs: int = 1
    ) -> BaseEnv:
        """This env as sub-env 0 of a BaseEnv; `make_env(i)` creates sub-envs 1.."""
        return _MultiAgentEnvToBaseEnv(make_env=make_env, existing_envs=[self], num_envs=num_envs)

    def _space_of(self, space: Optional[gym.Space], agent_id: AgentID, kind: str) -> Optional[gym.Space]:
        ids = self.get_agent_ids()
        if not self._is_per_agent(space):
            return space
        if agent_id not in space.spaces:
            raise ValueError(
                f"{type(self).__name__} has no {kind} space for agent {agent_id!r}; its agent "
                f"ids are {sorted(ids, key=repr)}."
            )
        return space[agent_id]


def make_multi_agent(env_name_or_creator: Union[str, Callable[[EnvContext], gym.Env]]) -> Type[MultiAgentEnv]:
    """A MultiAgentEnv class running `config["num_agents"]` independent copies of an env.

    Agent `i` (ids `0..num_agents-1`) acts in copy `i`; it leaves the episode when its
    copy terminates or truncates, and the episode ends when all copies have. Then
    `terminateds["__all__"]` is True if any copy terminated, else `truncateds["__all__"]`.

    Args:
        env_name_or_creator: A gymnasium id or registered name, or a callable taking
            the config (an `EnvContext` without `"num_agents"`) and returning a
            single-agent gymnasium env.

    Returns:
        A MultiAgentEnv subclass, constructed with a config dict (`num_agents`
        defaults to 1; the other keys configure each copy).
    """
    creator = get_env_creator(env_name_or_creator)

    class MultiEnv(MultiAgentEnv):
        def __init__(self, config: Optional[dict] = None):
            super().__init__()
            config = {} if config is None else config
            rest = {k: v for k, v in config.items() if k != "num_agents"}
            num = config.get("num_agents", 1)
            if isinstance(num, bool) or not isinstance(num, int) or num < 1:
                raise ValueError(f"num_agents must be an int >= 1; received {num!r}.")
            ctx = (config.copy_with_overrides(env_config=rest) if isinstance(config, EnvContext)
                   else EnvContext(rest, worker_index=0))
            self.envs = [creator(ctx) for _ in range(num)]
            self._agent_ids = set(range(num))
            self.agents = list(range(num))
            self.possible_agents = list(range(num))
            self.observation_space = self.envs[0].observation_space
            self.action_space = self.envs[0].action_space
            self._terminated, self._done = set(), set()

        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
            self._terminated, self._done = set(), set()
            obs, infos = {}, {}
            for i, env in enumerate(self.envs):
                obs[i], infos[i] = env.reset(seed=None if seed is None else seed + i, options=options)
            return obs, infos

        def step(self, action_dict: MultiAgentDict):
            obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
            for i, action in action_dict.items():
                obs[i], rewards[i], terminateds[i], truncateds[i], infos[i] = self.envs[i].step(action)
                if terminateds[i]:
                    self._terminated.add(i)
                if terminateds[i] or truncateds[i]:
                    self._done.add(i)
            all_done = len(self._done) == len(self.envs)
            terminateds["__all__"] = all_done and bool(self._terminated)
            truncateds["__all__"] = all_done and not self._terminated
            return obs, rewards, terminateds, truncateds, infos

        def render(self) -> Any:
            return self.envs[0].render()

        def close(self) -> None:
            for env in self.envs:
                env.close()

    return MultiEnv


class GroupAgentsWrapper(MultiAgentEnv):
    """A MultiAgentEnv whose groups of agents act as one agent each (RLlib's grouping;
    built by `MultiAgentEnv.with_agent_groups()`, whose docstring says what a group
    observes, does and receives).

    Args:
        env: The MultiAgentEnv to wrap.
        groups: group id -> the ids of its agents (each agent in one group at most).
        obs_space: The grouped env's observation space (see `with_agent_groups`).
        act_space: The grouped env's action space.

    Raises:
        TypeError: If `env` is not a MultiAgentEnv.
        ValueError: If `groups` is not a dict of non-empty agent id lists, an agent is
            in two groups, or a group id is the id of an agent in no group.
    """

    def __init__(self, env: MultiAgentEnv, groups: Dict[str, List[AgentID]],
                 obs_space: Optional[gym.Space] = None,
                 act_space: Optional[gym.Space] = None):
        super().__init__()
        if not isinstance(env, MultiAgentEnv):
            raise TypeError(f"with_agent_groups() groups the agents of a MultiAgentEnv; "
                            f"received a {type(env).__name__}.")
        if not isinstance(groups, dict) or not all(
                isinstance(ids, (list, tuple)) and ids for ids in groups.values()):
            raise ValueError(
                "groups must be a dict group_id -> non-empty list of agent ids (e.g. "
                f"{{'team': [0, 1]}}); received {groups!r}.")
        self.env = env
        self.groups = {gid: list(ids) for gid, ids in groups.items()}
        self.agent_id_to_group: Dict[AgentID, str] = {}
        for group_id, agent_ids in self.groups.items():
            for agent_id in agent_ids:
                if agent_id in self.agent_id_to_group:
                    raise ValueError(
                        f"Agent {agent_id!r} is in two groups ({self.agent_id_to_group[agent_id]!r} "
                        f"and {group_id!r}); put each agent in one group at most.")
                self.agent_id_to_group[agent_id] = group_id
        inner_ids = env.get_agent_ids()
        ungrouped = inner_ids - set(self.agent_id_to_group)
        clash = set(self.groups) & ungrouped
        if clash:
            raise ValueError(f"Group ids {sorted(clash, key=repr)} are also ids of agents "
                             "outside them; give the groups other ids.")
        self._agent_ids = set(self.groups) | ungrouped
        self.observation_space = (obs_space if obs_space is not None
                                  else self._grouped_space(env.observation_space, "observation"))
        self.action_space = (act_space if act_space is not None
                             else self._grouped_space(env.action_space, "action"))

    def _grouped_space(self, space: Optional[gym.Space], kind: str) -> Optional[gym.Space]:
        """A Dict keyed by the grouped env's agent ids (a group: the Tuple of its members'
        spaces), or the env's own space if its agent ids are unknown."""
        if not self.env.get_agent_ids():
            return space
        space_of = (self.env.get_observation_space if kind == "observation"
                    else self.env.get_action_space)
        spaces: Dict[Any, gym.Space] = {}
        for agent_id in sorted(self._agent_ids, key=repr):
            if agent_id in self.groups:
                spaces[agent_id] = gym.spaces.Tuple([space_of(a) for a in self.groups[agent_id]])
            else:
                spaces[agent_id] = space_of(agent_id)
        return gym.spaces.Dict(spaces)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._group_items(obs, "observations"), self._group_infos(infos)

    def step(self, action_dict: MultiAgentDict):
        obs, rewards, terminateds, truncateds, infos = self.env.step(
            self._ungroup_actions(action_dict))
        obs = self._group_items(obs, "observations")
        grouped_rewards = self._group_items(rewards, "rewards", aggregate=list)
        terminateds = self._group_items(terminateds, "terminateds", aggregate=all)
        truncateds = self._group_items(truncateds, "truncateds", aggregate=all)
        infos = self._group_infos(infos)
        rewards = {}
        for agent_id, reward in grouped_rewards.items():
            if agent_id in self.groups:
                rewards[agent_id] = sum(reward)
                infos.setdefault(agent_id, {})[GROUP_REWARDS] = reward
            else:
                rewards[agent_id] = reward
        return obs, rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def _ungroup_actions(self, action_dict: MultiAgentDict) -> MultiAgentDict:
        out = {}
        for agent_id, action in action_dict.items():
            if agent_id not in self.groups:
                out[agent_id] = action
                continue
            members = self.groups[agent_id]
            if isinstance(action, (dict, str)) or not hasattr(action, "__len__") or (
                    len(action) != len(members)):
                raise ValueError(
                    f"The action of group {agent_id!r} must be a sequence of one action per "
                    f"member {members}; received {action!r}.")
            out.update(zip(members, action))
        return out

    def _group_items(self, items: MultiAgentDict, what: str,
                     aggregate: Callable[[list], Any] = tuple) -> MultiAgentDict:
        """`items` with each group's members replaced by `aggregate([member values])`;
        all members of a group must be present if one is."""
        out = {}
        for agent_id, value in items.items():
            group_id = self.agent_id_to_group.get(agent_id)
            if group_id is None:
                out[agent_id] = value
            elif group_id not in out:
                members = self.groups[group_id]
                missing = [a for a in members if a not in items]
                if missing:
                    raise ValueError(
                        f"{type(self.env).__name__} returned {what} for some members of group "
                        f"{group_id!r} but not for {missing}: all agents of a group must act "
                        f"at the same time. Received {what} for {sorted(items, key=repr)}.")
                out[group_id] = aggregate([items[a] for a in members])
        return out

    def _group_infos(self, infos: MultiAgentDict) -> MultiAgentDict:
        """Infos with a group's members' infos (`{}` for a member without one) under
        `"_group_info"` in the group's info."""
        out = {}
        for agent_id, info in infos.items():
            group_id = self.agent_id_to_group.get(agent_id)
            if group_id is None:
                out[agent_id] = info
            elif group_id not in out:
                out[group_id] = {GROUP_INFO: [infos.get(a, {}) for a in self.groups[group_id]]}
        return out


class MultiAgentEnvWrapper(BaseEnv):
    """Several MultiAgentEnv sub-envs as a BaseEnv (env ids `0..num_envs-1`), reporting
    as RLlib 2.x's `MultiAgentEnvWrapper` does.

    A poll reports what the sub-envs returned, as RLlib 2.x does: right after a reset no
    rewards (`{}`) and only the `"__all__"` flags; after a step the rewards and flags of
    the observed agents (a reward given to an agent that is not observed is summed up
    until it is, a flag is kept until then), and all of them when the episode ends; the
    infos as the env gave them. `_MultiAgentEnvToBaseEnv` (what `to_base_env` builds, and
    what tfrl's sampler reads) reports every observed agent in every dict instead.

    Args:
        make_env: `vector_index -> MultiAgentEnv`; creates the sub-envs beyond
            `existing_envs`. Required if `len(existing_envs) < num_envs`.
        existing_envs: Already created sub-envs (sub-envs 0, 1, ...).
        num_envs: Total number of sub-envs.

    Raises:
        ValueError: If more sub-envs are needed but `make_env` is None, or `num_envs`
            is not an int >= max(1, len(existing_envs)).
        TypeError: If a sub-env is not a MultiAgentEnv.
    """

    def __init__(
        self,
        make_env: Optional[Callable[[int], Any]] = None,
        existing_envs: Optional[List[Any]] = None,
        num_envs: int = 1,
    ):
        envs = list(existing_envs or [])
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < max(1, len(envs)):
            raise ValueError(
                f"num_envs must be an int >= max(1, len(existing_envs)={len(envs)}); received {num_envs!r}."
            )
        if len(envs) < num_envs and make_env is None:
            raise ValueError(
                f"num_envs={num_envs} but only {len(envs)} existing MultiAgentEnvs and no "
                "make_env; pass make_env (vector_index -> MultiAgentEnv) to create the rest."
            )
        while len(envs) < num_envs:
            envs.append(make_env(len(envs)))
        for i, env in enumerate(envs):
            if not isinstance(env, MultiAgentEnv):
                raise TypeError(
                    f"Sub-env {i} is a {type(env).__name__}, expected a MultiAgentEnv; make_env "
                    "must create envs of the same kind as the given env."
                )
        self.envs = envs
        self.num_envs = num_envs
        self.observation_space = envs[0].observation_space
        self.action_space = envs[0].action_space
        self._needs_reset: Set[int] = set(range(num_envs))
        self._awaiting: Dict[int, Set[AgentID]] = {i: set() for i in range(num_envs)}
        self._seen: Dict[int, Set[AgentID]] = {i: set() for i in range(num_envs)}
        self._pending: Dict[int, MultiAgentDict] = {}
        self._started: Set[int] = set()  # sub-envs reset at least once
        # Reset results of sub-envs reset by their creator (see `adopt_reset`).
        self._adopted: Dict[int, Tuple[MultiAgentDict, MultiAgentDict]] = {}
        # Per sub-env: rewards and flags of agents not yet observed since they were given.
        self._held: Dict[int, Tuple[dict, dict, dict]] = {}

    def poll(
        self,
    ) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict]:
        out = ({}, {}, {}, {}, {})
        for env_id in sorted(self._needs_reset):
            obs, infos = self._reset(env_id, None, None)
            self._observe(env_id, out, obs, {}, {"__all__": False}, {"__all__": False}, infos)
        self._needs_reset.clear()
        pending, self._pending = self._pending, {}
        for env_id, actions in pending.items():
            result = self.envs[env_id].step(actions)
            self._observe(env_id, out, *self._check_step(env_id, result))
        return out + ({},)

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        for env_id, agent_actions in action_dict.items():
            self._check_actions(env_id, agent_actions)
        for env_id, agent_actions in action_dict.items():
            self._pending.setdefault(env_id, {}).update(agent_actions)
            self._awaiting[env_id].difference_update(agent_actions)

    def try_reset(
        self,
        env_id: Optional[EnvID] = None,
        *,
        seed: Optional[int] = None,
        options: Optional[dict] = None,
    ) -> Tuple[MultiEnvDict, MultiEnvDict]:
        """Resets sub-env `env_id` (all if None; an int `seed` then gives sub-env i
        `seed + i`) and returns `(obs, infos)` two-level dicts.

        Raises:
            ValueError: For an unknown `env_id`.
        """
        if env_id is None:
            seeds = {i: None if seed is None else seed + i for i in range(self.num_envs)}
        else:
            self._check_env_id(env_id, "try_reset")
            seeds = {env_id: seed}
        all_obs, all_infos = {}, {}
        for i, env_seed in seeds.items():
            obs, infos = self._reset(i, env_seed, options)
            self._needs_reset.discard(i)
            out = ({}, {}, {}, {}, {})
            self._observe(i, out, obs, {}, {"__all__": False}, {"__all__": False}, infos)
            all_obs[i], all_infos[i] = out[0][i], out[4][i]
        return all_obs, all_infos

    def try_render(self, env_id: Optional[EnvID] = None) -> Any:
        if env_id is not None:
            self._check_env_id(env_id, "try_render")
        return self.envs[env_id or 0].render()

    def get_sub_environments(self, as_dict: bool = False) -> Any:
        return dict(enumerate(self.envs)) if as_dict else self.envs

    def get_agent_ids(self) -> set:
        return self.envs[0].get_agent_ids()

    # ----------------------------------------------------------------- internals
    def adopt_reset(self, env_id: int, result: Tuple[MultiAgentDict, MultiAgentDict]) -> None:
        """Sub-env `env_id` was just reset (e.g. by a rollout worker's env check) and
        returned `result`: its next reset without seed or options returns `result`
        instead of resetting it again, so the env's first episode is that reset's."""
        self._check_env_id(env_id, "adopt_reset")
        self._adopted[env_id] = result

    def _reset(self, env_id: int, seed: Optional[int], options: Optional[dict]) -> Tuple[dict, dict]:
        self._pending.pop(env_id, None)
        self._held.pop(env_id, None)
        self._seen[env_id] = set()
        self._started.add(env_id)
        adopted = self._adopted.pop(env_id, None)
        result = (adopted if adopted is not None and seed is None and options is None
                  else self.envs[env_id].reset(seed=seed, options=options))
        if not (isinstance(result, tuple) and len(result) == 2
                and isinstance(result[0], dict) and isinstance(result[1], dict)):
            raise ValueError(
                f"{type(self.envs[env_id]).__name__}.reset() (sub-env {env_id}) must return "
                f"(obs_dict, info_dict) keyed by agent id; received {result!r}."
            )
        return result

    def _check_step(self, env_id: int, result: Any) -> Tuple[dict, dict, dict, dict, dict]:
        name = type(self.envs[env_id]).__name__
        if not (isinstance(result, tuple) and len(result) == 5 and all(isinstance(r, dict) for r in result)):
            raise ValueError(
                f"{name}.step() (sub-env {env_id}) must return 5 dicts keyed by agent id: "
                f"(obs, rewards, terminateds, truncateds, infos); received {result!r}."
            )
        for flags, which in ((result[2], "terminateds"), (result[3], "truncateds")):
            if "__all__" not in flags:
                raise ValueError(
                    f"{name}.step() (sub-env {env_id}) returned {which}={flags!r} without the "
                    f"'__all__' key; set {which}['__all__'] to whether the episode ended for all agents."
                )
        return result

    def _observe(self, env_id: int, out: tuple, obs: dict, rewards: dict, terminateds: dict,
                 truncateds: dict, infos: dict) -> None:
        """Adds one sub-env's results to the poll dicts `out` and updates its state."""
        ended = bool(terminateds.get("__all__") or truncateds.get("__all__"))
        if ended:
            self._needs_reset.add(env_id)
        self._awaiting[env_id] = set() if ended else {
            agent for agent in obs if not (terminateds.get(agent) or truncateds.get(agent))
        }
        report = self._report(env_id, obs, rewards, terminateds, truncateds, infos, ended)
        self._seen[env_id].update(obs)
        for d, value in zip(out, report):
            d[env_id] = value

    def _report(self, env_id: int, obs: dict, rewards: dict, terminateds: dict,
                truncateds: dict, infos: dict, ended: bool) -> Tuple[dict, dict, dict, dict, dict]:
        """What a poll reports for one sub-env (RLlib 2.x: see the class docstring)."""
        held_rewards, held_terms, held_truncs = self._held.setdefault(env_id, ({}, {}, {}))
        for agent, reward in rewards.items():
            held_rewards[agent] = held_rewards.get(agent, 0.0) + reward if agent in held_rewards else reward
        for held, flags in ((held_terms, terminateds), (held_truncs, truncateds)):
            for agent, flag in flags.items():
                if agent != "__all__":
                    held[agent] = bool(held.get(agent, False) or flag)
        released = set(held_rewards) | set(held_terms) | set(held_truncs) if ended else set(obs)
        out_rewards = {a: held_rewards.pop(a) for a in list(held_rewards) if a in released}
        out_terms = {a: held_terms.pop(a) for a in list(held_terms) if a in released}
        out_truncs = {a: held_truncs.pop(a) for a in list(held_truncs) if a in released}
        out_terms["__all__"] = bool(terminateds.get("__all__", False))
        out_truncs["__all__"] = bool(truncateds.get("__all__", False))
        return dict(obs), out_rewards, out_terms, out_truncs, dict(infos)

    def _check_env_id(self, env_id: Any, where: str) -> None:
        if not (isinstance(env_id, int) and not isinstance(env_id, bool) and 0 <= env_id < self.num_envs):
            raise ValueError(
                f"{where}: unknown env id {env_id!r}; this env has env ids 0..{self.num_envs - 1}."
            )

    def _check_actions(self, env_id: Any, agent_actions: Any) -> None:
        self._check_env_id(env_id, "send_actions")
        if not isinstance(agent_actions, dict):
            raise ValueError(
                f"send_actions: the actions of env {env_id} must be a dict agent_id -> action; "
                f"received {agent_actions!r}."
            )
        awaiting = self._awaiting[env_id]
        for agent in agent_actions:
            if agent in awaiting:
                continue
            if env_id not in self._started:
                why = f"env {env_id} has not been reset yet; call poll() first"
            elif env_id in self._needs_reset:
                why = f"the episode of env {env_id} ended; the next poll() (or try_reset) resets it"
            elif agent in self._pending.get(env_id, {}):
                why = "it already has an action for the next step"
            elif agent in self._seen[env_id]:
                why = "it was not in the last poll's observations, or it is done"
            else:
                why = "it has not been observed in this episode"
            raise ValueError(
                f"send_actions: agent {agent!r} of env {env_id} is not waiting for an action "
                f"({why}). Agents of env {env_id} waiting for an action: {sorted(awaiting, key=repr)}."
            )


class _MultiAgentEnvToBaseEnv(MultiAgentEnvWrapper):
    """MultiAgentEnvWrapper reporting every observed agent in every poll dict (RLlib
    1.x's name; what `MultiAgentEnv.to_base_env` builds and tfrl's sampler reads).

    A reward is None for an agent's first observation in an episode (so for all agents
    right after a reset) unless the env gave one, and 0.0 for a returning agent the env
    gave none. Flags default to False, infos to `{}`. Rewards and flags of agents that
    are not observed are reported as the env gave them.
    """

    def _report(self, env_id: int, obs: dict, rewards: dict, terminateds: dict,
                truncateds: dict, infos: dict, ended: bool) -> Tuple[dict, dict, dict, dict, dict]:
        seen = self._seen[env_id]
        rewards = dict(rewards)
        for agent in obs:
            if agent not in rewards:
                rewards[agent] = 0.0 if agent in seen else None
        terms = {agent: False for agent in obs}
        terms.update(terminateds)
        truncs = {agent: False for agent in obs}
        truncs.update(truncateds)
        infos_out: dict = {agent: {} for agent in obs}
        infos_out.update(infos)
        return dict(obs), rewards, terms, truncs, infos_out
