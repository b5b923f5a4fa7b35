"""VectorEnv: batch evaluation over `num_envs` copies of a sub-env.

Two ready-made vector envs exist: `VectorEnv.vectorize_gym_envs(...)` steps a list of
gymnasium envs in this process, and `VectorEnv.from_gymnasium(vector_env)` wraps one
of gymnasium's own vector envs (e.g. `gymnasium.make_vec("CartPole-v1", 8,
vectorization_mode="vector_entry_point")`, which steps all sub-envs in one numpy
call). `to_base_env()` turns either into the `BaseEnv` samplers poll.

Example:
    >>> import gymnasium as gym
    >>> env = VectorEnv.vectorize_gym_envs(lambda i: gym.make("CartPole-v1"), num_envs=2)
    >>> obs, infos = env.vector_reset(seeds=0)
    >>> len(obs), obs[0].shape
    (2, (4,))
    >>> obs, rewards, terminateds, truncateds, infos = env.vector_step([0, 1])
    >>> rewards, terminateds
    ([1.0, 1.0], [False, False])
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium as gym

from tfrl.env.base_env import BaseEnv
from tfrl.env.vector_env_to_base_env import _VectorEnvToBaseEnv
from tfrl.env.vector_transitions import _Transitions
from tfrl.utils.typing import EnvActionType, EnvInfoDict, EnvObsType

Seeds = Optional[Union[int, Sequence[Optional[int]]]]
StepLists = Tuple[List[EnvObsType], List[float], List[bool], List[bool], List[EnvInfoDict]]


class VectorEnv:
    """Steps `num_envs` sub-envs with one call; RLlib semantics, gymnasium results.

    Subclasses implement `vector_reset`, `reset_at` and `vector_step` (no automatic
    resets: after a sub-env's episode ends, the caller resets it with `reset_at`).
    Subclasses may also override the private `_full_reset`, `_reset_one` and
    `_batch_step` (and the flags below) that `to_base_env()`'s BaseEnv drives, to
    avoid per-sub-env Python work; an env with `_resets_in_step` and
    `_takes_action_batch` may also offer `_step_all` (see `GymnasiumVectorEnv`), the
    BaseEnv's fastest path.

    Args:
        observation_space: The observation space of one sub-env.
        action_space: The action space of one sub-env.
        num_envs: The number of sub-envs.

    Raises:
        ValueError: If `num_envs` is not a positive int.
    """

    # May the BaseEnv step only the sub-envs that got actions, resetting ended ones in
    # the same call? / Does one step both step all sub-envs and reset the ended ones?
    _steps_subsets = False
    _resets_in_step = False
    # Does `_batch_step` take a whole `[num_envs]` action batch (`action_batch`)?
    _takes_action_batch = False

    @property
    def resets_in_step(self) -> bool:
        """Whether one step steps every sub-env and resets the ended ones on the way (so
        every poll of the BaseEnv reports every sub-env)."""
        return self._resets_in_step

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, num_envs: int):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1; received {num_envs!r}.")
        self.observation_space = observation_space
        self.action_space = action_space
        self.num_envs = num_envs

    # ----------------------------------------------------------------- public API
    def vector_reset(
        self, *, seeds: Seeds = None, options: Optional[dict] = None
    ) -> Tuple[List[EnvObsType], List[EnvInfoDict]]:
        """Resets all sub-envs.

        Args:
            seeds: None, an int (sub-env i gets `seeds + i`, as in gymnasium) or one
                seed (or None) per sub-env.
            options: Passed to every sub-env's `reset`.

        Returns:
            `(observations, infos)`, one per sub-env.
        """
        raise NotImplementedError

    def reset_at(
        self, index: Optional[int] = None, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> Tuple[EnvObsType, EnvInfoDict]:
        """Resets sub-env `index` (0 if None); returns its `(obs, info)`."""
        raise NotImplementedError

    def vector_step(self, actions: Sequence[EnvActionType]) -> StepLists:
        """Steps every sub-env with its action (one per sub-env).

        Returns:
            `(obs, rewards, terminateds, truncateds, infos)`, lists of `num_envs`.
        """
        raise NotImplementedError

    def try_render_at(self, index: Optional[int] = None) -> Any:
        """Renders sub-env `index`: an RGB `uint8` array `(h, w, 3)`, or None."""
        return None

    def get_sub_environments(self) -> List[Any]:
        """The sub-env objects, if there are any ([] otherwise)."""
        return []

    def close(self) -> None:
        """Closes every sub-env that has a `close()`."""
        for env in self.get_sub_environments():
            if callable(getattr(env, "close", None)):
                env.close()

    def to_base_env(self) -> BaseEnv:
        """This vector env as a BaseEnv (env ids `0..num_envs-1`, agent `"agent0"`)."""
        return _VectorEnvToBaseEnv(self)

    @staticmethod
    def vectorize_gym_envs(
        make_env: Optional[Callable[[int], gym.Env]] = None,
        existing_envs: Optional[List[gym.Env]] = None,
        num_envs: int = 1,
        action_space: Optional[gym.Space] = None,
        observation_space: Optional[gym.Space] = None,
        env_config: Optional[dict] = None,
        policy_config: Optional[dict] = None,
    ) -> "VectorEnv":
        """A VectorEnv over gymnasium envs stepped one by one in this process.

        Args:
            make_env: `vector_index -> gymnasium.Env`; creates the sub-envs beyond
                `existing_envs`. Required if `len(existing_envs) < num_envs`.
            existing_envs: Already created sub-envs (used as sub-envs 0, 1, ...).
            num_envs: Total number of sub-envs.
            action_space: The action space; None: the first sub-env's.
            observation_space: The observation space; None: the first sub-env's.
            env_config: Unused (kept for RLlib compatibility).
            policy_config: Unused (kept for RLlib compatibility).

        Raises:
            ValueError: If more sub-envs are needed but `make_env` is None, or
                `num_envs` is smaller than `len(existing_envs)`.
            TypeError: If a sub-env is not a `gymnasium.Env`.
        """
        del env_config, policy_config
        return _VectorizedGymEnv(
            make_env=make_env,
            existing_envs=existing_envs or [],
            num_envs=num_envs,
            observation_space=observation_space,
            action_space=action_space,
        )

    @staticmethod
    def from_gymnasium(gymnasium_vector_env: gym.vector.VectorEnv) -> "VectorEnv":
        """Wraps one of gymnasium's vector envs (the fast path; see `GymnasiumVectorEnv`)."""
        from tfrl.env.gymnasium_vector_env import GymnasiumVectorEnv

        return GymnasiumVectorEnv(gymnasium_vector_env)

    # ------------------------------------------- protocol of the BaseEnv bridge
    def _full_reset(self, seed: Seeds, options: Optional[dict]) -> _Transitions:
        """Resets all sub-envs (see `vector_reset`)."""
        kwargs = _reset_kwargs(seeds=seed, options=options)
        result = self.vector_reset(**kwargs)
        obs, infos = _check_lists(self, "vector_reset()", result, 2)
        n = self.num_envs
        return _Transitions(range(n), obs, [0.0] * n, [False] * n, [False] * n, infos, range(n), False)

    def _reset_one(
        self, index: int, seed: Optional[int], options: Optional[dict]
    ) -> Optional[Tuple[EnvObsType, EnvInfoDict]]:
        """Resets one sub-env now; None if its reset obs arrives with the next step."""
        return self.reset_at(index, **_reset_kwargs(seed=seed, options=options))

    def _batch_step(
        self, actions: Dict[int, EnvActionType], reset_ids: List[int], action_batch: Any = None
    ) -> _Transitions:
        """Steps the sub-envs in `actions` and resets those in `reset_ids`.

        Without `_steps_subsets`/`_resets_in_step`, a call either only resets
        (`actions` empty) or steps every sub-env.
        """
        if reset_ids:
            results = [self.reset_at(i) for i in reset_ids]
            obs, infos = [r[0] for r in results], [r[1] for r in results]
            k = len(reset_ids)
            return _Transitions(reset_ids, obs, [0.0] * k, [False] * k, [False] * k, infos, range(k), False)
        result = self.vector_step([actions[i] for i in range(self.num_envs)])
        obs, rewards, terms, truncs, infos = _check_lists(self, "vector_step()", result, 5)
        return _Transitions(range(self.num_envs), obs, rewards, terms, truncs, infos, (), False)


class _VectorizedGymEnv(VectorEnv):
    """Gymnasium envs stepped one by one in this process (see `vectorize_gym_envs`).

    Its BaseEnv steps exactly the sub-envs that got actions and resets ended ones in
    the same poll.
    """

    _steps_subsets = True
    _resets_in_step = True

    def __init__(
        self,
        make_env: Optional[Callable[[int], gym.Env]],
        existing_envs: List[gym.Env],
        num_envs: int,
        observation_space: Optional[gym.Space] = None,
        action_space: Optional[gym.Space] = None,
    ):
        envs = list(existing_envs)
        if isinstance(num_envs, int) and len(envs) > num_envs:
            raise ValueError(
                f"vectorize_gym_envs: received {len(envs)} existing_envs but num_envs="
                f"{num_envs}; num_envs counts the existing envs, so pass num_envs >= {len(envs)}."
            )
        for i, env in enumerate(envs):
            _check_gym_env(env, f"existing_envs[{i}]")
        if isinstance(num_envs, int) and len(envs) < num_envs and make_env is None:
            raise ValueError(
                f"vectorize_gym_envs: num_envs={num_envs} but only {len(envs)} existing_envs "
                "and no make_env; pass make_env (vector_index -> gymnasium.Env) to create the rest."
            )
        while isinstance(num_envs, int) and len(envs) < num_envs:
            envs.append(_check_gym_env(make_env(len(envs)), f"make_env({len(envs)})"))
        first = envs[0] if envs else None
        super().__init__(
            observation_space if observation_space is not None else getattr(first, "observation_space", None),
            action_space if action_space is not None else getattr(first, "action_space", None),
            num_envs,
        )
        self.envs = envs

    def vector_reset(
        self, *, seeds: Seeds = None, options: Optional[dict] = None
    ) -> Tuple[List[EnvObsType], List[EnvInfoDict]]:
        seed_list = _seed_list(seeds, self.num_envs)
        results = [self._reset_env(i, seed_list[i], options) for i in range(self.num_envs)]
        return [r[0] for r in results], [r[1] for r in results]

    def reset_at(
        self, index: Optional[int] = None, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> Tuple[EnvObsType, EnvInfoDict]:
        return self._reset_env(self._index(index), seed, options)

    def vector_step(self, actions: Sequence[EnvActionType]) -> StepLists:
        if len(actions) != self.num_envs:
            raise ValueError(
                f"vector_step needs one action per sub-env (num_envs={self.num_envs}); "
                f"received {len(actions)}."
            )
        results = [self._step_env(i, a) for i, a in enumerate(actions)]
        return tuple(list(column) for column in zip(*results))

    def try_render_at(self, index: Optional[int] = None) -> Any:
        return self.envs[self._index(index)].render()

    def get_sub_environments(self) -> List[gym.Env]:
        return self.envs

    def _batch_step(
        self, actions: Dict[int, EnvActionType], reset_ids: List[int], action_batch: Any = None
    ) -> _Transitions:
        ids = sorted(set(reset_ids).union(actions)) if reset_ids else sorted(actions)
        obs, rewards, terms, truncs, infos, first = [], [], [], [], [], []
        for pos, i in enumerate(ids):
            if i in actions:
                o, r, t, u, info = self._step_env(i, actions[i])
            else:
                (o, info), r, t, u = self._reset_env(i, None, None), 0.0, False, False
                first.append(pos)
            obs.append(o)
            rewards.append(r)
            terms.append(t)
            truncs.append(u)
            infos.append(info)
        return _Transitions(ids, obs, rewards, terms, truncs, infos, first, False)

    def _reset_env(self, i: int, seed: Optional[int], options: Optional[dict]) -> Tuple[Any, dict]:
        result = self.envs[i].reset(seed=seed, options=options)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ValueError(
                f"Sub-env {i} ({type(self.envs[i]).__name__}).reset() must return gymnasium's "
                f"(obs, info); received {result!r}."
            )
        return result

    def _step_env(self, i: int, action: EnvActionType) -> Tuple[Any, float, bool, bool, dict]:
        result = self.envs[i].step(action)
        if len(result) != 5:
            raise ValueError(
                f"Sub-env {i} ({type(self.envs[i]).__name__}).step() returned {len(result)} "
                "values; tfrl needs gymnasium's 5: (obs, reward, terminated, truncated, info)."
            )
        obs, reward, terminated, truncated, info = result
        return obs, float(reward), bool(terminated), bool(truncated), info

    def _index(self, index: Optional[int]) -> int:
        index = 0 if index is None else index
        if not 0 <= index < self.num_envs:
            raise IndexError(f"Sub-env index {index} out of range: num_envs={self.num_envs}.")
        return index


def _check_gym_env(env: Any, what: str) -> gym.Env:
    if not isinstance(env, gym.Env):
        raise TypeError(
            f"vectorize_gym_envs: {what} is a {type(env).__name__}, expected a gymnasium.Env. "
            "Create envs with gymnasium (gymnasium.make or a gymnasium.Env subclass); "
            "wrap a gymnasium vector env with VectorEnv.from_gymnasium instead."
        )
    return env


def _seed_list(seeds: Seeds, n: int) -> List[Optional[int]]:
    """gymnasium's convention: None, an int (sub-env i gets seeds + i) or n seeds."""
    if seeds is None:
        return [None] * n
    if isinstance(seeds, int):
        return [seeds + i for i in range(n)]
    seeds = list(seeds)
    if len(seeds) != n:
        raise ValueError(f"seeds must be None, an int or {n} seeds (one per sub-env); received {seeds!r}.")
    return seeds


def _reset_kwargs(**kwargs: Any) -> Dict[str, Any]:
    # Leave out None values, so RLlib-style `vector_reset(self)` overrides still work.
    return {k: v for k, v in kwargs.items() if v is not None}


def _check_lists(env: VectorEnv, call: str, result: Any, count: int) -> Tuple[list, ...]:
    """Checks that `result` is `count` sequences of `env.num_envs` items each."""
    if not isinstance(result, tuple) or len(result) != count or any(
        not hasattr(part, "__len__") or len(part) != env.num_envs for part in result
    ):
        what = "(obs, infos)" if count == 2 else "(obs, rewards, terminateds, truncateds, infos)"
        raise ValueError(
            f"{type(env).__name__}.{call} must return a tuple {what} of lists with "
            f"num_envs={env.num_envs} items each (gymnasium API); received {result!r}."
        )
    return tuple(list(part) for part in result)
