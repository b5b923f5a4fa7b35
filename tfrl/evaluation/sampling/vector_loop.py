"""The array-based sampling loop: a single-agent vectorized env and one feed-forward policy.

Per step, a constant number of numpy calls regardless of the number of sub-envs:
`poll_arrays()` -> check, preprocess and filter the `[N, ...]` observations -> one
`compute_actions` -> `send_action_array()`, writing each poll into time-major buffers
`[T, N, ...]` (slot `s` holds the poll's observations, rewards and infos, and the
actions computed on those observations; the done flags come from the current poll, as
only an episode's last row carries one). A sub-env whose episode ended in this poll gets
no action (the env resets it in its next step and ignores the row): `compute_actions`
sees the other rows only, as in the generic loop, so the policy's `global_timestep`
counts the env steps taken. A sub-env's transition completed at slot `s`
is `(obs[s-1], actions[s-1], rewards[s], obs[s], ...)`; the buffers, and the chunks
built from them, are the loop's `vector_chunks.ChunkBuffer`. Python work per sub-env
happens only when an episode starts or ends, at a fragment cut, or when the callbacks
override `on_episode_step`; then `Episode` objects are brought up to date from the
arrays.

The batches equal those of the generic `SamplingLoop` for the same env, seeds and a policy
whose actions do not depend on the batch composition: same columns, values and row order.
"""

import bisect
from typing import Any, Iterator, List, Optional

import gymnasium as gym
import numpy as np

from tfrl.evaluation.sampling.collectors import postprocess_single_chunk
from tfrl.evaluation.sampling.loop_core import LoopCore
from tfrl.evaluation.sampling.ops import (check_rewards_array, clip_rewards_array, now,
                                         read_only, rewards_may_be_bad)
from tfrl.evaluation.sampling.vector_chunks import ChunkBuffer, row
from tfrl.models.preprocessors import NoPreprocessor
from tfrl.utils.filter import NoFilter

_SIMPLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
_AGENT = "agent0"


def vector_path_problem(worker: Any, base_env: Any, observation_fn: Any, horizon: Any,
                        soft_horizon: bool) -> Optional[str]:
    """Why the array-based loop cannot serve this setup (None if it can)."""
    vector_env = getattr(base_env, "vector_env", None)
    if not (callable(getattr(base_env, "poll_arrays", None))
            and callable(getattr(base_env, "send_action_array", None))
            and getattr(vector_env, "resets_in_step", False)):
        return "the env has no array interface that reports every sub-env on every poll"
    policy_map = worker.policy_map
    if len(policy_map) != 1:
        return "more than one policy"
    policy = next(iter(policy_map.values()))
    if policy.is_recurrent():
        return "recurrent policy"
    if observation_fn is not None:
        return "observation_fn"
    if horizon and horizon != float("inf") and not soft_horizon:
        return "a hard horizon (resets single sub-envs)"
    if not isinstance(policy.action_space, _SIMPLE):
        return "composite action space"
    return None


class VectorSamplingLoop(LoopCore):
    """The array-based loop (see the module docstring); arguments as `LoopCore`.

    Attributes:
        chunks: The `ChunkBuffer` of the running loop (None before `run()`).
    """

    chunks: Optional[ChunkBuffer] = None

    def run(self) -> Iterator[Any]:
        """Yields fragments (SampleBatch) and RolloutMetrics, forever."""
        env = self.base_env
        n = env.num_envs
        self._n = n
        self._pid = pid = next(iter(self.policy_map))
        self._episodes: List[Any] = [None] * n
        chunks = self.chunks = ChunkBuffer(n, self.rollout_fragment_length, self.clip_rewards)
        self._vp = None  # the current poll
        # The actions and extras written for the previous poll (rows of ended episodes
        # take theirs: no action is computed for them).
        self._last_acted: Any = None
        self._raw_obs = None  # its observations as the env gave them
        self._prev_flags = self.prev_columns(pid)
        perf = self.perf_stats
        worker = self.worker
        output = self.output
        no_hits = np.zeros(n, bool)
        truncate_mode = self.multiple_episodes_in_batch
        fragment = self.rollout_fragment_length
        by_agent_steps = self.count_by_agent_steps
        tools_of = None  # the policy the per-policy tools below belong to
        # Envs of tfrl's vector bridge can leave empty infos to us (None in the buffers,
        # new dicts only for the rows of the batches and episodes).
        lazy_infos = bool(getattr(env, "lazy_infos", False))
        poll_arrays = env.poll_arrays
        while True:
            policy_map = self.policy_map
            if len(policy_map) != 1:  # policies were added: hand over (see _hand_over)
                self._hand_over()
                yield from self.take_ready()
                return
            policy = policy_map[pid]
            if policy is not tools_of:  # looked up once per policy object
                tools_of = policy
                checker = self.policy_tools(pid)[0]
                prev_a, prev_r = self._prev_flags = self.prev_columns(pid)
                process_actions = self.action_processor(pid)
                process_actions = process_actions if process_actions.active else None
            t0 = now()
            vp = self._vp = poll_arrays(materialize_infos=False) if lazy_infos else poll_arrays()
            t1 = now()
            perf.env_wait_time += t1 - t0
            if len(vp.env_ids) != n:
                raise RuntimeError(
                    f"poll_arrays() reported {len(vp.env_ids)} of {n} sub-envs; the array-based "
                    "sampler needs every sub-env on every poll.")
            raw = self._raw_obs = vp.obs
            checker.check(raw, self._describe_row)
            preps = getattr(worker, "preprocessors", None)
            prep = preps.get(pid) if preps else None
            obs = raw
            if prep is not None and not (  # NoPreprocessor: the checked batch as it is
                    type(prep) is NoPreprocessor and type(raw) is np.ndarray
                    and raw.dtype == prep.observation_space.dtype and raw.shape[1:] == prep.shape):
                obs = prep.transform_batch(raw)
            filters = getattr(worker, "filters", None)
            obs_filter = filters.get(pid) if filters else None
            if obs_filter is not None and type(obs_filter) is not NoFilter:
                obs = obs_filter.apply_batch(obs)
            rewards = vp.rewards  # 0.0 where is_first
            if rewards_may_be_bad(rewards):  # NaN, inf, beyond float32
                check_rewards_array(rewards, np.arange(n), chunks.lengths + 1)
            first = vp.is_first
            chunks.write_slot(obs, vp)
            chunks.lengths += 1  # restarted at 0 for new episodes (is_first) in restart()
            chunks.returns += rewards
            hit = no_hits
            if lazy_infos and env.last_poll_quiet and not self.horizon:
                events = None  # no sub-env was reset or ended
            else:
                events = first | vp.terminateds  # flags are False where is_first
                events |= vp.truncateds
                if self.horizon:
                    hit = ~events & (chunks.lengths >= self.horizon)
                    events |= hit
            if self.callbacks_step:
                events = np.ones(n, bool)
            if events is not None and np.count_nonzero(events):
                self._process_events(first, hit, events)
            else:
                output.env_steps += n
                output.agent_steps += n
                if truncate_mode and (output.agent_steps if by_agent_steps
                                      else output.env_steps) >= fragment:
                    self._process_events(first, hit, np.zeros(n, bool), counted=True)
            t = chunks.t
            t2 = now()
            perf.raw_obs_processing_time += t2 - t1
            kwargs = {}
            if prev_a or prev_r:
                reset = first | hit
                if prev_a:
                    kwargs["prev_action_batch"] = chunks.prev_actions(
                        t, reset, self.zero_action(pid))
                if prev_r:
                    kwargs["prev_reward_batch"] = np.where(
                        reset, np.float32(0.0), clip_rewards_array(rewards, self.clip_rewards))
            ended = (vp.terminateds | vp.truncateds) if events is not None else None
            if ended is None or not ended.any() or self._last_acted is None:
                actions, _, extras = policy.compute_actions(
                    obs, None, episodes=self._episodes, explore=self.explore,
                    timestep=policy.global_timestep, **kwargs)
            else:  # no action for an ended episode's last observation (the env resets it)
                actions, extras = self._act_on(policy, ~ended, obs, kwargs)
            self._last_acted = actions, extras
            t3 = now()
            perf.inference_time += t3 - t2
            chunks.write_actions(t, actions, extras)
            # The env gets a read-only view (as RLlib's envs do): an env that changes
            # its action cannot change the recorded one.
            env.send_action_array(read_only(actions if process_actions is None
                                            else process_actions(actions)))
            if self.render:
                env.try_render()
            perf.action_processing_time += now() - t3
            perf.iters += 1
            if self.ready:
                yield from self.take_ready()

    def _act_on(self, policy: Any, acting: np.ndarray, obs: Any, kwargs: dict) -> tuple:
        """Actions and extras `[N, ...]` from one `compute_actions` call on the `acting`
        rows only (none if no row acts); the other rows repeat the previous poll's (the
        env ignores them: their sub-envs reset in the next step)."""
        last_actions, last_extras = self._last_acted
        actions = last_actions.copy()
        extras = {key: np.array(value) for key, value in last_extras.items()}
        idx = np.flatnonzero(acting)
        if len(idx):
            acted, _, acted_extras = policy.compute_actions(
                row(obs, idx), None, episodes=[self._episodes[i] for i in idx.tolist()],
                explore=self.explore, timestep=policy.global_timestep,
                **{key: value[idx] for key, value in kwargs.items()})
            actions[idx] = acted
            for key, value in acted_extras.items():
                extras[key][idx] = value
        return actions, extras

    def _describe_row(self, i: int) -> tuple:
        return f"env {i}, agent 'agent0'", row(self._raw_obs, i)

    # -------------------------------------------------------------- chunks
    def _chunk(self, i: int, end: int, terminated: bool = False,
               truncated: bool = False) -> Optional[Any]:
        prev_columns = self._prev_flags
        return self.chunks.chunk(
            i, end, self._episodes[i].episode_id, terminated=terminated, truncated=truncated,
            prev_columns=prev_columns,
            zero_action=self.zero_action(self._pid) if prev_columns[0] else None)

    def _postprocess(self, chunk: Any, episode: Any) -> None:
        postprocess_single_chunk(_AGENT, self._pid, chunk, episode, self.policy_map,
                                 self.callbacks, self.worker, self.output,
                                 self.callbacks_postprocess)

    def _sync(self, i: int, first: bool = False, horizon: bool = False,
              before_start: bool = False) -> None:
        """Brings sub-env `i`'s Episode up to date with the arrays."""
        vp = self._vp  # the current poll
        self.chunks.sync_episode(
            self._episodes[i], _AGENT, i, row(self._raw_obs, i),
            terminated=(not first) and bool(vp.terminateds[i]),
            truncated=(not first) and (horizon or bool(vp.truncateds[i])), first=first,
            before_start=before_start)

    # -------------------------------------------------------------- events
    def _process_events(self, first: np.ndarray, hit: np.ndarray, events: np.ndarray,
                        counted: bool = False) -> None:
        """Per-sub-env work of one poll, in sub-env order, with fragment cuts.

        The steps of the poll are counted sub-env by sub-env as the generic loop does, so
        a fragment is cut right after the sub-env whose step fills it.
        """
        first_ids = first.nonzero()[0].tolist()
        total = self._n - len(first_ids)  # steps of this poll (is_first rows are no steps)
        if counted:  # counted already by the caller: count them again sub-env by sub-env
            self.count_steps(-total, -total)
        for i in first_ids:
            episode = self._episodes[i] = self.new_episode(i)
            pid = episode.policy_for(_AGENT)
            if pid != self._pid or len(self.policy_map) != 1:
                raise RuntimeError(
                    f"The array-based sampler serves exactly one policy ({self._pid!r}), but "
                    f"the worker now has policies {sorted(map(str, self.policy_map))} and "
                    f"policy_mapping_fn maps sub-env {i} to {pid!r}. Create the sampler after "
                    "adding policies (a sampler built with several policies uses the generic "
                    "loop)."
                )
            episode.agent_index(_AGENT)
            self.chunks.restart(i)
        cuts = set()
        if self.multiple_episodes_in_batch:
            room = self.rollout_fragment_length - self.output.env_steps
            if room <= total:
                cum = np.add.accumulate(~first, dtype=np.int64)  # steps of sub-envs 0..i
                fragment = self.rollout_fragment_length
                target = room
                while target <= total:  # the sub-env whose step is the fragment's last one
                    cuts.add(int(np.searchsorted(cum, target)))
                    target += fragment
        counted_upto = 0
        for i in sorted(cuts.union(events.nonzero()[0].tolist())):
            upto = i + 1 - bisect.bisect_right(first_ids, i)  # steps of sub-envs 0..i
            self.count_steps(upto - counted_upto, upto - counted_upto)
            counted_upto = upto
            if events[i]:
                self._env_events(i, bool(first[i]), bool(hit[i]))
            if i in cuts:
                self._cut(i)
        self.count_steps(total - counted_upto, total - counted_upto)

    def _env_events(self, i: int, first: bool, hit: bool) -> None:
        episode = self._episodes[i]
        if first:
            self.chunks.start_chunk_after_current(i)
            if self.callbacks_start:  # (RLlib's hook sees the raw obs and infos only)
                self._sync(i, first=True, before_start=True)
            self.episode_started(episode, i)
            if self.callbacks_start:
                self._sync(i, first=True)
            return
        if self.callbacks_step:
            self._sync(i)
            self.episode_step(episode, i)
        vp = self._vp
        if vp.terminateds[i] or vp.truncateds[i] or hit:
            self._end_episode(i, hit)

    def _end_episode(self, i: int, soft: bool) -> None:
        t = self.chunks.t
        episode = self._episodes[i]
        if self.no_done_at_end:
            terminated = truncated = False
        else:
            # At a soft horizon the env goes on: RLlib records done=False there.
            terminated = bool(self._vp.terminateds[i])
            truncated = bool(self._vp.truncateds[i])
        chunk = self._chunk(i, t, terminated, truncated)  # (the next one starts after t)
        if chunk is not None:
            self._postprocess(chunk, episode)
        self._sync(i, horizon=soft)
        self.episode_finished(episode, i)
        if soft:
            episode.soft_reset()
            episode.set_last_done(_AGENT, False, False)
            self.chunks.restart(i)  # (no on_episode_start: the same Episode goes on, as in RLlib)

    def _cut(self, k: int) -> None:
        """Ends the fragment after sub-env `k`'s transition of the current slot."""
        t = self.chunks.t
        for i in range(self._n):
            if self._episodes[i] is not None:
                chunk = self._chunk(i, t if i <= k else t - 1)
                if chunk is not None:
                    self._postprocess(chunk, self._episodes[i])
        self.emit_fragment()
        self.chunks.keep_last_two_slots()

    def _hand_over(self) -> None:
        """Moves every recorded step into the output, for the generic loop to continue
        the fragment (its episodes start anew at its first poll)."""
        t = self.chunks.t
        for i in range(self._n):
            if self._episodes[i] is not None:
                chunk = self._chunk(i, t)
                if chunk is not None:
                    self._postprocess(chunk, self._episodes[i])

