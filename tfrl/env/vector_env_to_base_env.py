"""`_VectorEnvToBaseEnv`: a `VectorEnv` seen through BaseEnv's `poll`/`send_actions`.

The bridge is a small state machine over the sub-envs. Each sub-env is in one of three
states: *awaiting* an action (it was reported by the last poll, or reset by
`try_reset`), *acted* (an action has been sent; the next poll steps it), or *ended*
(its episode ended in the last poll; the next poll, or `try_reset`, resets it). A
reset reports the reset observation with reward None.

How a poll executes depends on what the vector env can do (flags set by `VectorEnv`
subclasses):

* `_steps_subsets`: step only the sub-envs that got actions and reset ended ones in
  the same poll (the in-process list of gymnasium envs).
* `_resets_in_step`: every step steps all sub-envs and resets the ended ones on the way
  (gymnasium's NEXT_STEP autoreset).
* neither: a poll either resets the ended sub-envs (and reports only those; the other
  sub-envs' actions wait for the next poll) or steps all sub-envs.

Besides the dicts of `poll()`, samplers may use `poll_arrays()` and
`send_action_array()`, which skip the per-sub-env dict building.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array

from tfrl.env.base_env import _DUMMY_AGENT_ID, ASYNC_RESET_RETURN, BaseEnv
from tfrl.utils.typing import EnvID, MultiEnvDict

# Spaces whose items are plain numpy arrays (or scalars): batch with np.asarray.
SIMPLE_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


class _Transitions(NamedTuple):
    """What one poll of a vector env produced, for the sub-envs in `env_ids`.

    `obs`, `rewards`, `terminateds`, `truncateds` are either per-sub-env lists aligned
    with `env_ids` (`batched=False`) or batched numpy data over all sub-envs
    (`batched=True`, then `env_ids == range(num_envs)`). `first` holds the positions
    of reset observations (their reward slot holds 0.0), `done` (if known) the
    positions whose episode ended.
    """

    env_ids: Sequence[int]
    obs: Any
    rewards: Any
    terminateds: Any
    truncateds: Any
    infos: Optional[List[dict]]  # None: all empty
    first: Sequence[int]
    batched: bool
    done: Optional[List[int]] = None


_NO_TRANSITIONS = _Transitions((), [], [], [], [], [], (), False)


class VectorPoll(NamedTuple):
    """`poll_arrays()` result: one row per reported sub-env.

    Attributes:
        env_ids: int64 `[B]` sub-env indices, ascending.
        obs: `[B, ...]` observations (a dict/tuple of arrays for composite spaces).
        rewards: float `[B]`; 0.0 where `is_first`.
        terminateds: bool `[B]`.
        truncateds: bool `[B]`.
        is_first: bool `[B]`: the row is a reset observation (reward None in `poll()`).
        infos: B info dicts.
    """

    env_ids: np.ndarray
    obs: Any
    rewards: np.ndarray
    terminateds: np.ndarray
    truncateds: np.ndarray
    is_first: np.ndarray
    infos: List[dict]


class _VectorEnvToBaseEnv(BaseEnv):
    """A `VectorEnv` as a BaseEnv: env ids `0..num_envs-1`, agent id `"agent0"`.

    Args:
        vector_env: The vector env; its sub-envs are reset by the first `poll()` (or
            by `try_reset()`, which also takes seeds).
    """

    def __init__(self, vector_env: Any):
        self.vector_env = vector_env
        self.num_envs = vector_env.num_envs
        self.observation_space = vector_env.observation_space
        self.action_space = vector_env.action_space
        self._all_ids = range(self.num_envs)
        self._arange = np.arange(self.num_envs)
        self._simple_obs = isinstance(self.observation_space, SIMPLE_SPACES)
        self._simple_actions = isinstance(self.action_space, SIMPLE_SPACES)
        self._batched_obs_space = gym.vector.utils.batch_space(self.observation_space, self.num_envs)
        self._started = False
        self._awaiting = set()  # sub-envs that may get an action now
        self._actions: Dict[int, Any] = {}  # actions sent since the last step
        self._action_batch = None  # or a full [num_envs] batch from send_action_array
        self._batch_ids = set()  # the sub-envs whose action is in _action_batch
        self._ended = set()  # episode ended, not reset yet
        self._last_ids: Sequence[int] = ()

    # ------------------------------------------------------------------ BaseEnv
    def poll(
        self,
    ) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict]:
        tr = self._poll()
        agent = _DUMMY_AGENT_ID
        if tr.batched:
            obs = tr.obs if self._simple_obs else self._obs_list(tr)  # rows of a batch
            rewards, terms, truncs = tr.rewards.tolist(), tr.terminateds.tolist(), tr.truncateds.tolist()
        else:
            obs, rewards, terms, truncs = tr.obs, list(tr.rewards), tr.terminateds, tr.truncateds
        for pos in tr.first:
            rewards[pos] = None
        obs_d, rewards_d, terms_d, truncs_d, infos_d = {}, {}, {}, {}, {}
        for i, o, r, t, u in zip(tr.env_ids, obs, rewards, terms, truncs):
            obs_d[i] = {agent: o}
            rewards_d[i] = {agent: r}
            terms_d[i] = {agent: t, "__all__": t}
            truncs_d[i] = {agent: u, "__all__": u}
            infos_d[i] = {agent: {}}
        if tr.infos is not None:
            for i, info in zip(tr.env_ids, tr.infos):
                infos_d[i][agent] = info
        return obs_d, rewards_d, terms_d, truncs_d, infos_d, {}

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        awaiting = self._awaiting
        if not awaiting.issuperset(action_dict):
            self._raise_not_awaiting(action_dict)
        agent = _DUMMY_AGENT_ID
        try:
            if sum(map(len, action_dict.values())) != len(action_dict):
                raise KeyError(agent)
            new = {env_id: agent_actions[agent] for env_id, agent_actions in action_dict.items()}
        except (KeyError, TypeError):
            for env_id, agent_actions in action_dict.items():
                if not isinstance(agent_actions, dict) or list(agent_actions) != [agent]:
                    raise ValueError(
                        f"send_actions: the actions of env {env_id!r} must be a dict "
                        f"{{{agent!r}: action}} (single-agent env); received {agent_actions!r}."
                    ) from None
            raise
        self._actions.update(new)
        awaiting.difference_update(action_dict)

    def try_reset(
        self,
        env_id: Optional[EnvID] = None,
        *,
        seed: Optional[int] = None,
        options: Optional[dict] = None,
    ) -> Any:
        """Resets sub-env `env_id` (all if None); the sub-env then awaits an action.

        Returns:
            `(obs, infos)` two-level dicts, or `ASYNC_RESET_RETURN` if the reset
            observation arrives with the next `poll()` (an ended sub-env of a vector
            env with NEXT_STEP autoreset).

        Raises:
            ValueError: For an unknown `env_id`.
            RuntimeError: For a single sub-env before the first `poll()`, or if the
                vector env cannot reset a single sub-env now.
        """
        agent = _DUMMY_AGENT_ID
        if env_id is None:
            tr = self.vector_env._full_reset(seed, options)
            self._started = True
            self._ended.clear()
            self._actions.clear()
            self._action_batch = None
            self._batch_ids = set()
            self._awaiting = set(self._all_ids)
            infos = [{} for _ in tr.env_ids] if tr.infos is None else tr.infos
            return (
                {i: {agent: o} for i, o in zip(tr.env_ids, self._obs_list(tr))},
                {i: {agent: info} for i, info in zip(tr.env_ids, infos)},
            )
        self._check_env_id(env_id, "try_reset")
        if not self._started:
            raise RuntimeError(
                f"try_reset({env_id!r}) before the first poll(): call poll() (which resets all "
                "sub-envs) or try_reset() with env_id=None first."
            )
        result = self.vector_env._reset_one(env_id, seed, options)
        if result is None:
            return ASYNC_RESET_RETURN
        self._ended.discard(env_id)
        self._actions.pop(env_id, None)
        self._batch_ids.discard(env_id)
        self._awaiting.add(env_id)
        obs, info = result
        return {env_id: {agent: obs}}, {env_id: {agent: info}}

    def try_render(self, env_id: Optional[EnvID] = None) -> Any:
        return self.vector_env.try_render_at(env_id)

    def get_sub_environments(self, as_dict: bool = False) -> Any:
        envs = self.vector_env.get_sub_environments()
        return dict(enumerate(envs)) if as_dict else envs

    def stop(self) -> None:
        self.vector_env.close()

    # ---------------------------------------------------------- batched access
    def poll_arrays(self) -> VectorPoll:
        """Like `poll()`, but returns stacked arrays (see `VectorPoll`), no dicts."""
        tr = self._poll()
        n = len(tr.env_ids)
        if tr.batched:
            env_ids, obs = self._arange, tr.obs
            rewards, terms, truncs = tr.rewards, tr.terminateds, tr.truncateds
        else:
            env_ids = np.asarray(tr.env_ids, dtype=np.int64)
            obs = self._stack_obs(tr.obs)
            rewards = np.asarray(tr.rewards, dtype=np.float64)
            terms = np.asarray(tr.terminateds, dtype=bool)
            truncs = np.asarray(tr.truncateds, dtype=bool)
        is_first = np.zeros(n, dtype=bool)
        if tr.first:
            is_first[list(tr.first)] = True
            if tr.batched:
                rewards = np.array(rewards)
            rewards[is_first] = 0.0
        self._last_ids = tr.env_ids
        infos = [{} for _ in range(n)] if tr.infos is None else tr.infos
        return VectorPoll(env_ids, obs, rewards, terms, truncs, is_first, infos)

    def send_action_array(self, actions: Any) -> None:
        """Sends stacked actions, one row per sub-env, instead of a dict.

        Args:
            actions: `[num_envs, ...]` actions by sub-env index, or one row per
                sub-env of the last `poll_arrays()`, in its `env_ids` order (a
                dict/tuple of such arrays for composite action spaces). Rows of
                sub-envs that await no action (their episode just ended) are ignored.

        Raises:
            ValueError: If the leading size is neither `num_envs` nor the number of
                sub-envs of the last `poll_arrays()`.
        """
        size = _leading_size(actions)
        if size == self.num_envs:
            ids = self._all_ids
        elif size == len(self._last_ids):
            ids = self._last_ids
        else:
            raise ValueError(
                f"send_action_array: received {size} action rows; expected num_envs="
                f"{self.num_envs} (one per sub-env) or {len(self._last_ids)} (one per "
                "sub-env of the last poll_arrays())."
            )
        acting = self._awaiting.intersection(ids)
        if (ids is self._all_ids and self.vector_env._takes_action_batch
                and self._action_batch is None and not self._actions):
            self._action_batch = actions
            self._batch_ids = acting
        else:
            rows = list(actions) if self._simple_actions else self._unbatch_actions(actions, size)
            for env_id, row in zip(ids, rows):
                if env_id in acting:
                    self._actions[env_id] = row
        self._awaiting.difference_update(acting)

    # ----------------------------------------------------------------- internals
    def _poll(self) -> _Transitions:
        env = self.vector_env
        if not self._started:
            self._started = True
            return self._record(env._full_reset(None, None), (), consumed=True)
        ended = sorted(self._ended)
        has_actions = bool(self._actions) or self._action_batch is not None
        if not has_actions and not ended:
            return _NO_TRANSITIONS
        if env._steps_subsets:
            return self._record(env._batch_step(self._actions, ended), ended, consumed=True)
        if ended and not env._resets_in_step:
            # Reset (and report) only the ended sub-envs; the others' actions wait.
            return self._record(env._batch_step({}, ended), ended, consumed=False)
        if self._awaiting:
            if not has_actions:
                return _NO_TRANSITIONS
            raise ValueError(
                f"poll(): {type(env).__name__} steps all its sub-envs together, but no "
                f"action was sent for env ids {sorted(self._awaiting)}. Send an action "
                "for every env id of the last poll whose episode has not ended."
            )
        tr = env._batch_step(self._actions, ended, self._action_batch)
        return self._record(tr, ended, consumed=True)

    def _record(self, tr: _Transitions, reset_ids: Sequence[int], consumed: bool) -> _Transitions:
        """Moves the sub-envs of `tr` to awaiting, or to ended if their episode ended."""
        self._ended.difference_update(reset_ids)
        if consumed:
            self._actions = {}
            self._action_batch = None
            self._batch_ids = set()
        ids = tr.env_ids
        self._awaiting.update(ids)
        done = tr.done
        if done is not None:
            pass
        elif tr.batched:
            done = (tr.terminateds | tr.truncateds).nonzero()[0].tolist()
        else:
            done = [p for p, (t, u) in enumerate(zip(tr.terminateds, tr.truncateds)) if t or u]
        if done:
            done_ids = [ids[p] for p in done]
            self._awaiting.difference_update(done_ids)
            self._ended.update(done_ids)
        return tr

    def _check_env_id(self, env_id: Any, where: str) -> None:
        if not (isinstance(env_id, (int, np.integer)) and not isinstance(env_id, bool)
                and 0 <= env_id < self.num_envs):
            raise ValueError(
                f"{where}: unknown env id {env_id!r}; this env has env ids 0..{self.num_envs - 1}."
            )

    def _raise_not_awaiting(self, env_ids: Any) -> None:
        for env_id in env_ids:
            if env_id in self._awaiting:
                continue
            self._check_env_id(env_id, "send_actions")
            if env_id in self._ended:
                why = (f"the episode of env {env_id} ended in the last poll; the next poll() "
                       f"(or try_reset({env_id})) resets it, so it takes no action now")
            elif env_id in self._actions or env_id in self._batch_ids:
                why = f"env {env_id} already has an action for the next step"
            else:
                why = f"env {env_id} is not waiting for an action (it was not in the last poll)"
            raise ValueError(
                f"send_actions: {why}. Env ids waiting for an action: {sorted(self._awaiting)}."
            )

    def _obs_list(self, tr: _Transitions) -> List[Any]:
        if not tr.batched:
            return tr.obs
        if self._simple_obs:
            return list(tr.obs)
        return list(gym.vector.utils.iterate(self._batched_obs_space, tr.obs))

    def _unbatch_actions(self, actions: Any, size: int) -> List[Any]:
        return list(gym.vector.utils.iterate(gym.vector.utils.batch_space(self.action_space, size), actions))

    def _stack_obs(self, items: List[Any]) -> Any:
        space = self.observation_space
        if self._simple_obs:
            if not items:
                return np.empty((0,) + tuple(space.shape), dtype=space.dtype)
            return np.asarray(items, dtype=space.dtype)
        return concatenate(space, items, create_empty_array(space, len(items)))


def _leading_size(batch: Any) -> int:
    """Size of axis 0 of an array, or of the first leaf of a dict/tuple of arrays."""
    while isinstance(batch, (dict, tuple)):
        batch = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return len(batch)
