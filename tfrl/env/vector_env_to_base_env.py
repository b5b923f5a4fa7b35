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

For gymnasium's NEXT_STEP vector envs, `poll()` and `poll_arrays()` take a fast path
(`_poll_step_all`) that passes gymnasium's arrays through with the least bookkeeping.
Besides the dicts of `poll()`, samplers may use `poll_arrays()` and
`send_action_array()`, which skip the per-sub-env dict building.
"""

from itertools import repeat
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array

from tfrl.env.base_env_interface import _DUMMY_AGENT_ID, ASYNC_RESET_RETURN, BaseEnv
from tfrl.env.space_checks import stack_values
from tfrl.env.vector_transitions import (_NO_TRANSITIONS, SIMPLE_SPACES, VectorPoll,
                                         _leading_size, _Transitions, single_agent_poll_dicts)
from tfrl.utils.typing import EnvID, MultiEnvDict


class _VectorEnvToBaseEnv(BaseEnv):
    """A `VectorEnv` as a BaseEnv: env ids `0..num_envs-1`, agent id `"agent0"`.

    Args:
        vector_env: The vector env; its sub-envs are reset by the first `poll()` (or
            by `try_reset()`, which also takes seeds).

    Attributes:
        lazy_infos: True: `poll_arrays(materialize_infos=False)` leaves empty infos to
            the caller and sets `last_poll_quiet`.
        last_poll_quiet: Whether the last `poll_arrays(materialize_infos=False)` reset
            or ended no sub-env.
    """

    lazy_infos = True

    def __init__(self, vector_env: Any):
        self.vector_env = vector_env
        self.num_envs = vector_env.num_envs
        self.observation_space = vector_env.observation_space
        self.action_space = vector_env.action_space
        self._all_ids = range(self.num_envs)
        self._all_set = set(self._all_ids)
        self._arange = np.arange(self.num_envs)
        self._no_firsts = np.zeros(self.num_envs, dtype=bool)
        self._no_firsts.setflags(write=False)
        self.last_poll_quiet = False
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
        # The NEXT_STEP fast path of gymnasium vector envs (see _poll_step_all).
        self._step_all = (getattr(vector_env, "_step_all", None) if vector_env._resets_in_step
                          and vector_env._takes_action_batch else None)

    # ------------------------------------------------------------------ BaseEnv
    def poll(
        self,
    ) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict]:
        if self._step_all is not None and not self._awaiting and self._started and (
                self._actions or self._action_batch is not None or self._ended):
            return self._poll_step_all()
        tr = self._poll()
        if tr.batched:
            obs = tr.obs if self._simple_obs else self._obs_list(tr)  # rows of a batch
            rewards = tr.rewards.tolist()
            if tr.done == []:  # no episode ended: all flags False
                terms = truncs = repeat(False)
            else:
                terms, truncs = tr.terminateds.tolist(), tr.truncateds.tolist()
        else:
            obs, rewards, terms, truncs = tr.obs, list(tr.rewards), tr.terminateds, tr.truncateds
        for pos in tr.first:
            rewards[pos] = None
        return single_agent_poll_dicts(tr.env_ids, obs, rewards, terms, truncs, tr.infos)

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        awaiting = self._awaiting
        if awaiting == action_dict.keys():  # the common case: every waiting sub-env
            remaining = set()
        elif awaiting.issuperset(action_dict):
            remaining = awaiting.difference(action_dict)
        else:
            self._raise_not_awaiting(action_dict)
        agent = _DUMMY_AGENT_ID
        try:
            new = {env_id: agent_actions[agent] for env_id, agent_actions in action_dict.items()}
            if sum(map(len, action_dict.values())) != len(new):
                raise KeyError(agent)
        except (KeyError, TypeError):
            for env_id, agent_actions in action_dict.items():
                if not isinstance(agent_actions, dict) or list(agent_actions) != [agent]:
                    raise ValueError(
                        f"send_actions: the actions of env {env_id!r} must be a dict "
                        f"{{{agent!r}: action}} (single-agent env); received {agent_actions!r}."
                    ) from None
            raise
        if self._actions:
            self._actions.update(new)
        else:
            self._actions = new
        self._awaiting = remaining

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
    def poll_arrays(self, materialize_infos: bool = True) -> VectorPoll:
        """Like `poll()`, but returns stacked arrays (see `VectorPoll`), no dicts.

        With `materialize_infos=False`, `infos` is None (instead of a list of new empty
        dicts) when the env returned no infos (samplers create the dicts only for the
        rows they keep), and a poll in which no sub-env was reset or ended sets
        `last_poll_quiet` (else False) and shares one read-only `is_first`."""
        self.last_poll_quiet = False
        if self._step_all is not None and not self._awaiting and self._started and (
                self._actions or self._action_batch is not None or self._ended):
            obs, rewards, terms, truncs, infos, first, done = self._advance_all()
            if first:
                is_first = np.zeros(self.num_envs, dtype=bool)
                is_first[first] = True
                rewards = np.where(is_first, 0.0, rewards).astype(rewards.dtype)
            elif materialize_infos:
                is_first = np.zeros(self.num_envs, dtype=bool)
            else:
                is_first = self._no_firsts
                self.last_poll_quiet = not done
            self._last_ids = self._all_ids
            if infos is None and materialize_infos:
                infos = [{} for _ in self._all_ids]
            return VectorPoll(self._arange, obs, rewards, terms, truncs, is_first, infos)
        tr = self._poll()
        n = len(tr.env_ids)
        if tr.batched:
            env_ids, obs = self._arange, tr.obs
            rewards, terms, truncs = tr.rewards, tr.terminateds, tr.truncateds
        else:
            env_ids = np.asarray(tr.env_ids, dtype=np.int64)
            obs = self._stack_obs(tr.obs, tr.env_ids)
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
        infos = tr.infos
        if infos is None and materialize_infos:
            infos = [{} for _ in range(n)]
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
        if self._simple_actions:
            actions = np.asarray(actions)
            size = len(actions)
        else:
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
        if (ids is self._all_ids and self.vector_env._takes_action_batch
                and self._action_batch is None and not self._actions):
            # Every sub-env that awaits an action gets its row of this batch.
            self._action_batch = actions
            self._batch_ids, self._awaiting = self._awaiting, set()
            return
        acting = self._awaiting.intersection(ids)
        rows = list(actions) if self._simple_actions else self._unbatch_actions(actions, size)
        for env_id, row in zip(ids, rows):
            if env_id in acting:
                self._actions[env_id] = row
        self._awaiting.difference_update(acting)

    # ----------------------------------------------------------------- internals
    def _advance_all(self) -> tuple:
        """Steps all sub-envs of a NEXT_STEP gymnasium vector env (the fast path of
        poll() and poll_arrays()): every sub-env got an action or is reset."""
        result = self._step_all(self._actions, self._action_batch)
        self._actions, self._action_batch = {}, None
        if self._batch_ids:
            self._batch_ids = set()
        self._awaiting = self._all_set.copy()
        done = result[6]
        if done:
            self._ended = set(done)
            self._awaiting.difference_update(done)
        elif self._ended:
            self._ended = set()
        return result

    def _poll_step_all(self) -> tuple:
        obs, rewards, terms, truncs, infos, first, done = self._advance_all()
        rewards = rewards.tolist()
        for pos in first:
            rewards[pos] = None
        if not self._simple_obs:
            obs = list(gym.vector.utils.iterate(self._batched_obs_space, obs))
        if done or infos is not None:
            return single_agent_poll_dicts(self._all_ids, obs, rewards, terms.tolist(), truncs.tolist(), infos)
        # No episode ended and no infos: the flags are all False, the infos empty.
        agent = _DUMMY_AGENT_ID
        obs_d, rewards_d, terms_d, truncs_d, infos_d = {}, {}, {}, {}, {}
        for i, o, r in zip(self._all_ids, obs, rewards):
            obs_d[i] = {agent: o}
            rewards_d[i] = {agent: r}
            terms_d[i] = {agent: False, "__all__": False}
            truncs_d[i] = {agent: False, "__all__": False}
            infos_d[i] = {agent: {}}
        return obs_d, rewards_d, terms_d, truncs_d, infos_d, {}

    def _poll(self) -> _Transitions:
        env = self.vector_env
        if not self._started:
            self._started = True
            return self._record(env._full_reset(None, None), (), consumed=True)
        ended = sorted(self._ended) if self._ended else ()
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
        if consumed:
            self._actions = {}
            self._action_batch = None
            self._batch_ids = set()
        ids = tr.env_ids
        done = tr.done
        if done is None:
            if tr.batched:
                done = (tr.terminateds | tr.truncateds).nonzero()[0].tolist()
            else:
                done = [p for p, (t, u) in enumerate(zip(tr.terminateds, tr.truncateds)) if t or u]
        if tr.batched:  # all sub-envs stepped (and the ended ones reset) at once
            self._awaiting = self._all_set.copy()
            if done:
                self._ended = set(done)
                self._awaiting.difference_update(done)
            elif self._ended:
                self._ended = set()
            return tr
        self._ended.difference_update(reset_ids)
        self._awaiting.update(ids)
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

    def _stack_obs(self, items: List[Any], env_ids: Sequence[int] = ()) -> Any:
        space = self.observation_space
        if self._simple_obs:
            if not items:
                return np.empty((0,) + tuple(space.shape), dtype=space.dtype)
            return stack_values(items, space, lambda row: (
                f"the observation of sub-env {env_ids[row] if env_ids else row}"))
        return concatenate(space, items, create_empty_array(space, len(items)))
