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

The fast path, `GymnasiumVectorEnv` (what `VectorEnv.from_gymnasium` builds), is
defined in this module too (VectorEnv builds it, and it is a VectorEnv):

GymnasiumVectorEnv: one of gymnasium's own vector envs as a tfrl `VectorEnv`.

This is the fast path: `gymnasium.make_vec(id, n, vectorization_mode=
"vector_entry_point")` steps all sub-envs in one numpy call, and its BaseEnv passes the
batched arrays through. gymnasium's vector envs reset ended sub-envs by themselves
(`env.metadata["autoreset_mode"]`); the BaseEnv keeps its own semantics in every mode:
the step that ends an episode reports the true final observation, the reset
observation comes with a later poll (reward None), and no step is lost:

* NEXT_STEP (gymnasium's default): the step after an episode ended resets that
  sub-env (its action is ignored), which is exactly that later poll.
* SAME_STEP: the step returns the reset observation and the final one in
  `info["final_obs"]`; the final one is reported, the reset one is kept for the next
  poll (or `try_reset`), before the sub-env is stepped again.
* DISABLED: ended sub-envs are reset with `options={"reset_mask": ...}`.

Example:
    >>> import gymnasium as gym
    >>> env = GymnasiumVectorEnv(gym.make_vec("CartPole-v1", 3, vectorization_mode="vector_entry_point"))
    >>> base_env = env.to_base_env()
    >>> obs, infos = base_env.try_reset(seed=0)
    >>> sorted(obs), obs[0]["agent0"].shape
    ([0, 1, 2], (4,))
    >>> base_env.send_actions({i: {"agent0": 1} for i in range(3)})
    >>> obs, rewards, terminateds, truncateds, infos, _ = base_env.poll()
    >>> rewards, terminateds[0]
    ({0: {'agent0': 1.0}, 1: {'agent0': 1.0}, 2: {'agent0': 1.0}}, {'agent0': False, '__all__': False})
"""

import copy
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from tfrl.env.base_env_interface import BaseEnv
from tfrl.env.vector_env_to_base_env import _VectorEnvToBaseEnv
from tfrl.env.vector_transitions import SIMPLE_SPACES, _Transitions
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
        # Reset results of sub-envs reset by their creator (see `adopt_reset`).
        self._adopted: Dict[int, Tuple[EnvObsType, EnvInfoDict]] = {}

    def adopt_reset(self, index: int, result: Tuple[EnvObsType, EnvInfoDict]) -> None:
        """Sub-env `index` was just reset (e.g. by a rollout worker's env check) and
        returned `result`: its next reset without seed or options returns `result`
        instead of resetting it again, so the env's first episode is that reset's."""
        self._adopted[self._index(index)] = result

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
        if self._adopted and seed is None and options is None and i in self._adopted:
            return self._adopted.pop(i)
        self._adopted.pop(i, None)
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


class GymnasiumVectorEnv(VectorEnv):
    """Wraps a `gymnasium.vector.VectorEnv` (see the module docstring).

    `vector_step` follows the wrapped env's autoreset mode (e.g. with NEXT_STEP, the
    step after an episode ended returns that sub-env's reset observation);
    `to_base_env()` gives RLlib's BaseEnv semantics in every mode. Single sub-envs
    can be reset on demand only if the env supports `options["reset_mask"]`
    (gymnasium's `SyncVectorEnv` and `AsyncVectorEnv` do).

    Args:
        env: The gymnasium vector env.

    Raises:
        TypeError: If `env` is not a `gymnasium.vector.VectorEnv`.
        ValueError: For an unknown autoreset mode, or DISABLED autoreset without
            `reset_mask` support.
    """

    _takes_action_batch = True

    def __init__(self, env: gym.vector.VectorEnv):
        if not isinstance(env, gym.vector.VectorEnv):
            raise TypeError(
                f"from_gymnasium needs a gymnasium.vector.VectorEnv (e.g. from gymnasium.make_vec); "
                f"received {type(env).__name__}. Use VectorEnv.vectorize_gym_envs for single envs."
            )
        super().__init__(env.single_observation_space, env.single_action_space, env.num_envs)
        self.env = env
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        try:
            self.autoreset_mode = AutoresetMode(mode)
        except ValueError:
            raise ValueError(
                f"{type(env).__name__} reports autoreset_mode={mode!r}; expected one of "
                f"{[m.value for m in AutoresetMode]}."
            ) from None
        self._masked_reset = isinstance(env.unwrapped, (SyncVectorEnv, AsyncVectorEnv))
        if self.autoreset_mode is AutoresetMode.DISABLED and not self._masked_reset:
            raise ValueError(
                f"{type(env).__name__} has autoreset disabled but does not support "
                "options['reset_mask'], so its sub-envs cannot be reset one by one."
            )
        self._resets_in_step = self.autoreset_mode is AutoresetMode.NEXT_STEP
        self._copy_obs = getattr(env.unwrapped, "copy", True) is False
        self._batched_obs_space = gym.vector.utils.batch_space(self.observation_space, self.num_envs)
        self._simple_actions = isinstance(self.action_space, SIMPLE_SPACES)
        self._scalar_actions = isinstance(self.action_space, gym.spaces.Discrete)
        self._action_dtype = getattr(self.action_space, "dtype", None)
        self._range = range(self.num_envs)
        self._id_list = list(self._range)
        self._same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        # Last action of every sub-env: valid filler for sub-envs that do not act.
        self._action_items = [_neutral_action(self.action_space)] * self.num_envs
        self._last_batch = None  # or the last action batch, if newer than _action_items
        self._ended: List[int] = []  # sub-envs whose episode ended, not reset yet
        self._pending_resets: Dict[int, Tuple[Any, dict]] = {}  # SAME_STEP reset obs

    # ----------------------------------------------------------------- public API
    @property
    def can_reset_sub_envs(self) -> bool:
        """Whether `reset_at(i)` resets sub-env `i` alone at any time (the wrapped env
        supports `options["reset_mask"]`, as gymnasium's Sync/AsyncVectorEnv do);
        False for `vector_entry_point` envs, which reset a sub-env only inside
        `step()` after its episode ended."""
        return self._masked_reset

    @property
    def max_episode_steps(self) -> Optional[int]:
        """The step limit after which the wrapped env truncates episodes itself (from
        `gymnasium.make_vec(..., max_episode_steps=...)` or the registered spec), or
        None if unknown."""
        spec = getattr(self.env, "spec", None)
        limit = (getattr(spec, "kwargs", None) or {}).get("max_episode_steps")
        if limit is None:
            limit = getattr(self.env.unwrapped, "max_episode_steps", None)
        if limit is None:
            limit = getattr(spec, "max_episode_steps", None)
        return int(limit) if isinstance(limit, (int, np.integer)) and limit > 0 else None

    def vector_reset(
        self, *, seeds: Seeds = None, options: Optional[dict] = None
    ) -> Tuple[List[EnvObsType], List[EnvInfoDict]]:
        tr = self._full_reset(seeds, options)
        return self._rows(tr.obs), tr.infos

    def reset_at(
        self, index: Optional[int] = None, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> Tuple[EnvObsType, EnvInfoDict]:
        index = 0 if index is None else index
        if not 0 <= index < self.num_envs:
            raise IndexError(f"Sub-env index {index} out of range: num_envs={self.num_envs}.")
        result = self._reset_one(index, seed, options)
        if result is None:
            raise RuntimeError(
                f"Sub-env {index} of {type(self.env).__name__} is reset by its next step() "
                "(gymnasium NEXT_STEP autoreset), not on demand; step it, or use to_base_env()."
            )
        return result

    def vector_step(self, actions: Sequence[EnvActionType]) -> StepLists:
        if len(actions) != self.num_envs:
            raise ValueError(
                f"vector_step needs one action per sub-env (num_envs={self.num_envs}); "
                f"received {len(actions)}."
            )
        tr = self._batch_step(dict(enumerate(actions)), [])
        if not tr.batched:
            return list(tr.obs), list(tr.rewards), list(tr.terminateds), list(tr.truncateds), tr.infos
        infos = [{} for _ in self._range] if tr.infos is None else tr.infos
        return (self._rows(tr.obs), tr.rewards.tolist(), tr.terminateds.tolist(),
                tr.truncateds.tolist(), infos)

    def try_render_at(self, index: Optional[int] = None) -> Any:
        frames = self.env.render()
        if index is None or not isinstance(frames, (list, tuple)):
            return frames
        return frames[index]

    def get_sub_environments(self) -> List[Any]:
        return list(getattr(self.env.unwrapped, "envs", []))

    def close(self) -> None:
        self.env.close()

    # ------------------------------------------- protocol of the BaseEnv bridge
    def _full_reset(self, seed: Seeds, options: Optional[dict]) -> _Transitions:
        obs, infos = self.env.reset(seed=seed, options=options)
        n = self.num_envs
        self._ended = []
        self._pending_resets.clear()
        return _Transitions(range(n), self._own(obs), np.zeros(n), np.zeros(n, bool),
                            np.zeros(n, bool), split_infos(infos, n), range(n), True, [])

    def _reset_one(
        self, index: int, seed: Optional[int], options: Optional[dict]
    ) -> Optional[Tuple[EnvObsType, EnvInfoDict]]:
        plain = seed is None and options is None
        if plain and self._resets_in_step and index in self._ended:
            return None  # the next step resets it
        if plain and index in self._pending_resets:
            return self._pending_resets.pop(index)
        if not self._masked_reset:
            raise RuntimeError(
                f"{type(self.env).__name__} cannot reset sub-env {index} alone (it has no "
                "options['reset_mask'] support"
                + (", and a NEXT_STEP env resets an ended sub-env only inside step(), "
                   "without seed or options" if index in self._ended else "")
                + "). Reset all sub-envs with try_reset() / vector_reset(), or use "
                "gymnasium's SyncVectorEnv/AsyncVectorEnv."
            )
        obs, infos = self._masked_reset_rows([index], seed, options)
        return obs[0], infos[0]

    def _batch_step(
        self, actions: Dict[int, EnvActionType], reset_ids: List[int], action_batch: Any = None
    ) -> _Transitions:
        if not actions and action_batch is None and reset_ids and not self._resets_in_step:
            if self._same_step:
                rows = [self._pending_resets.pop(i) for i in reset_ids]
                obs, infos = [r[0] for r in rows], [r[1] for r in rows]
            else:
                obs, infos = self._masked_reset_rows(reset_ids, None, None)
            k = len(reset_ids)
            return _Transitions(reset_ids, obs, [0.0] * k, [False] * k, [False] * k, infos, range(k), False)

        obs, rewards, terms, truncs, infos, first, done = self._step_all(
            actions, action_batch, split=not self._same_step)
        if not self._same_step:
            return _Transitions(self._range, obs, rewards, terms, truncs, infos, first, True, done)
        n = self.num_envs
        # SAME_STEP: report the final observations; keep the reset ones for later.
        final_obs, final_info = infos.pop("final_obs", None), infos.pop("final_info", {})
        infos.pop("_final_obs", None), infos.pop("_final_info", None)
        obs_list, info_list = self._rows(obs), split_infos(infos, n)
        final_infos = split_infos(final_info, n) if final_info else [{} for _ in range(n)]
        for i in done:
            self._pending_resets[i] = (obs_list[i], info_list[i])
            obs_list[i], info_list[i] = final_obs[i], final_infos[i]
        self._ended = []  # already reset by gymnasium
        return _Transitions(range(n), obs_list, rewards.tolist(), terms.tolist(), truncs.tolist(),
                            info_list, (), False, done)

    def _step_all(self, actions: Dict[int, EnvActionType], action_batch: Any, split: bool = True) -> tuple:
        """Steps every sub-env (NEXT_STEP: resetting the ended ones instead).

        Returns:
            `(obs, rewards, terminateds, truncateds)` as gymnasium returned them, the
            infos (one dict per sub-env, None if all are empty; gymnasium's dict if
            not `split`), then `first`: the sub-envs reset by this step, and `done`:
            the sub-envs whose episode ended (ascending lists).
        """
        if action_batch is None and self._scalar_actions and len(actions) == self.num_envs:
            # The common case: a new (Discrete) action for every sub-env, in env id order.
            values = list(actions.values()) if list(actions) == self._id_list else [
                actions[i] for i in self._range]
            batch = self._last_batch = np.array(values, dtype=self._action_dtype)
        else:
            batch = self._assemble_actions(actions, action_batch)
        first = self._ended if self._resets_in_step else ()
        obs, rewards, terms, truncs, infos = self.env.step(batch)
        term_list, trunc_list = terms.tolist(), truncs.tolist()
        if True in term_list or True in trunc_list:
            done = [i for i in self._range if term_list[i] or trunc_list[i]]
        else:
            done = []
        self._ended = done
        if self._copy_obs:
            obs = copy.deepcopy(obs)
        if split:
            infos = split_infos(infos, self.num_envs) if infos else None
        return obs, rewards, terms, truncs, infos, first, done

    # ----------------------------------------------------------------- helpers
    def _assemble_actions(self, actions: Dict[int, EnvActionType], action_batch: Any) -> Any:
        """One action batch: `action_batch` and/or `actions`, old actions elsewhere."""
        if action_batch is not None and not actions:
            self._last_batch = action_batch
            return action_batch
        if action_batch is None and len(actions) == self.num_envs:  # a new action for every sub-env
            batch = self._stack_actions(list(map(actions.__getitem__, self._range)))
            self._last_batch = batch
            return batch
        items = self._action_items
        if self._last_batch is not None or action_batch is not None:
            last = action_batch if action_batch is not None else self._last_batch
            items[:] = list(last) if self._simple_actions else list(iterate(self.env.action_space, last))
            self._last_batch = None
        for i, a in actions.items():
            items[i] = a
        return self._stack_actions(items)

    def _stack_actions(self, items: List[Any]) -> Any:
        if self._simple_actions:
            return np.asarray(items, dtype=self.action_space.dtype)
        return concatenate(self.action_space, items, create_empty_array(self.action_space, self.num_envs))

    def _masked_reset_rows(
        self, ids: List[int], seed: Optional[int], options: Optional[dict]
    ) -> Tuple[List[Any], List[dict]]:
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[ids] = True
        seeds = None
        if seed is not None:
            seeds = [None] * self.num_envs
            seeds[ids[0]] = seed
        obs, infos = self.env.reset(seed=seeds, options={**(options or {}), "reset_mask": mask})
        rows, info_list = self._rows(self._own(obs)), split_infos(infos, self.num_envs)
        self._ended = [i for i in self._ended if not mask[i]]
        for i in ids:
            self._pending_resets.pop(i, None)
        return [rows[i] for i in ids], [info_list[i] for i in ids]

    def _rows(self, obs: Any) -> List[Any]:
        if isinstance(self.observation_space, SIMPLE_SPACES):
            return list(obs)
        return list(iterate(self._batched_obs_space, obs))

    def _own(self, obs: Any) -> Any:
        # With copy=False, gymnasium reuses its observation buffer on the next step.
        return copy.deepcopy(obs) if self._copy_obs else obs


def split_infos(infos: Dict[str, Any], n: int) -> List[dict]:
    """gymnasium's vector info (`{key: values, "_key": mask}`) -> one dict per sub-env.

    Example:
        >>> split_infos({"x": np.array([1, 2]), "_x": np.array([True, False])}, 2)
        [{'x': 1}, {}]
    """
    out = [{} for _ in range(n)]
    for key, values in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        mask = infos.get("_" + key)
        rows = split_infos(values, n) if isinstance(values, dict) else values
        for i in range(n):
            if mask is None or mask[i]:
                value = rows[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out


def _neutral_action(space: gym.Space) -> Any:
    """A valid action of `space`, drawn without touching `space`'s own RNG."""
    scratch = copy.deepcopy(space)
    scratch.seed(0)
    return scratch.sample()
