"""Rows of the array-based sampling loop as batches and episodes: the `VectorChunks`
mixin of `VectorEnvRunner` builds one sub-env's trajectory chunk from the time-major
buffers (`[T, N, ...]`; a transition completed at slot `s` is `(obs[s-1],
actions[s-1], rewards[s], obs[s], ...)`), postprocesses it, and brings an `Episode` up
to date with the arrays.

Empty infos are kept as None in the buffers; the batches and episodes get new empty
dicts.
"""

from typing import Any, Optional

import numpy as np

from tfrl.core.columns import Columns
from tfrl.evaluation.collectors import (next_unroll_id, postprocess_single_chunk,
                                       sample_batch_from_columns, shifted)
from tfrl.evaluation.sampling_ops import clip_rewards_array
from tfrl.data.sample_batch import SampleBatch

_AGENT = "agent0"


class VectorChunks:
    """Chunk building and episode syncing of `VectorEnvRunner` (state set by its run())."""

    def _postprocess(self, chunk: SampleBatch, episode: Any) -> None:
        postprocess_single_chunk(_AGENT, self._pid, chunk, episode, self.policy_map,
                                 self.callbacks, self.worker, self.output,
                                 self.callbacks_postprocess)

    def _chunk(self, i: int, end: int, end_of_episode: bool = False,
               soft: bool = False) -> Optional[SampleBatch]:
        """Sub-env `i`'s transitions from its chunk start to slot `end`, as a batch."""
        a = int(self._seg_start[i])
        if a > end:
            return None
        buf = self._buf
        n = end + 1 - a
        obs = buf[Columns.OBS]
        actions = buf[Columns.ACTIONS][a - 1:end, i].copy()
        rewards = buf[Columns.REWARDS][a:end + 1, i]
        clip = self.clip_rewards
        rewards = (clip_rewards_array(rewards, clip) if clip
                   else rewards.astype(np.float32))  # a copy, also for float32 rewards
        # Only an episode's last row can have a flag set (a fragment cut never holds
        # the slot where a sub-env's episode ended; see _process_events).
        flags = np.zeros((3, n), bool)  # terminateds, truncateds, dones
        if end_of_episode:
            if not self.no_done_at_end:
                term = bool(self._vp.terminateds[i])
                trunc = soft or bool(self._vp.truncateds[i])
                if term:
                    flags[0, -1] = True
                if trunc:
                    flags[1, -1] = True
                if term or trunc:
                    flags[2, -1] = True
        elif soft:
            flags[1, -1] = flags[2, -1] = True
        t0 = int(self._chunk_t[i])
        if len(self._steps) < n:
            self._steps = np.arange(2 * n, dtype=np.int64)
        # eps_id, unroll_id, env_id, agent_index, t: one int64 block.
        ids = np.empty((5, n), np.int64)
        ids.T[:] = self._episodes[i].episode_id, next_unroll_id(), i, 0, t0
        ids[4] += self._steps[:n]
        data = {
            Columns.OBS: obs[a - 1:end, i].copy(),
            Columns.NEXT_OBS: obs[a:end + 1, i].copy(),
            Columns.ACTIONS: actions,
            Columns.REWARDS: rewards,
            Columns.TERMINATEDS: flags[0],
            Columns.TRUNCATEDS: flags[1],
            Columns.DONES: flags[2],
            Columns.INFOS: (_infos(buf[Columns.INFOS][a:end + 1, i]) if self._infos_seen
                            else _empty_infos(n)),
            Columns.EPS_ID: ids[0],
            Columns.UNROLL_ID: ids[1],
            Columns.AGENT_INDEX: ids[3],
            Columns.T: ids[4],
            Columns.ENV_ID: ids[2],
        }
        prev_a, prev_r = self._prev_flags
        if prev_a:
            first = self.zero_action(self._pid) if self._last_action[i] is None \
                else self._last_action[i]
            data[Columns.PREV_ACTIONS] = shifted(actions, first)
        if prev_r:
            data[Columns.PREV_REWARDS] = shifted(rewards, self._last_reward[i])
        self._last_action[i] = actions[-1]
        self._last_reward[i] = rewards[-1]
        for key in self._extra_keys:
            data[key] = buf["x_" + key][a - 1:end, i].copy()
        self._chunk_t[i] = t0 + n
        return sample_batch_from_columns(data, n)

    def _sync(self, i: int, t: int, first: bool = False, horizon: bool = False) -> None:
        """Brings sub-env `i`'s Episode up to date with the arrays."""
        episode = self._episodes[i]
        buf = self._buf
        length = episode.length = int(self._lengths[i])
        total = episode.total_reward = float(self._returns[i])
        episode.agent_rewards.clear()
        history = episode._agent_reward_history
        if length:
            episode.agent_rewards[_AGENT, self._pid] = total
            rewards = buf[Columns.REWARDS]
            history[_AGENT] = ([float(rewards[t - 1, i])] if length >= 2 and t >= 1 else []) + [
                float(rewards[t, i])]
        else:
            history[_AGENT] = []
        episode._agent_to_last_obs[_AGENT] = buf[Columns.OBS][t, i].copy()
        episode._agent_to_last_raw_obs[_AGENT] = _row(self._raw_obs, i)
        info = buf[Columns.INFOS][t, i]
        if info is None:  # an empty info (see run()): the dict the batch will hold
            info = buf[Columns.INFOS][t, i] = {}
        episode._agent_to_last_info[_AGENT] = info
        vp = self._vp  # the poll of slot t (the current one)
        episode._agent_to_last_terminated[_AGENT] = (not first) and bool(vp.terminateds[i])
        episode._agent_to_last_truncated[_AGENT] = (not first) and (
            horizon or bool(vp.truncateds[i]))
        if not first and Columns.ACTIONS in buf and t >= 1:
            episode._agent_to_last_action[_AGENT] = np.array(buf[Columns.ACTIONS][t - 1, i])


def _infos(column: np.ndarray) -> np.ndarray:
    """A copy of an infos column, with a new empty dict for each None (an empty info)."""
    infos = column.copy()
    for k in np.flatnonzero(np.equal(infos, None)).tolist():
        infos[k] = {}
    return infos


def _empty_infos(n: int) -> np.ndarray:
    infos = np.empty(n, object)
    for k in range(n):
        infos[k] = {}
    return infos


def _row(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {k: _row(v, i) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_row(v, i) for v in obs)
    return obs[i]
