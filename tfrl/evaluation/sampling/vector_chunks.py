"""`ChunkBuffer`: the time-major buffers of the array-based sampling loop and the open
trajectory chunk of each sub-env.

`VectorSamplingLoop` writes each poll into buffers `[T, N, ...]` (slot `s` holds the poll's
observations, rewards and infos, and the actions computed on those observations; a
transition completed at slot `s` is `(obs[s-1], actions[s-1], rewards[s], obs[s], ...)`)
and asks the buffer for one sub-env's chunk as a SampleBatch when an episode ends or a
fragment is cut, or to bring an `Episode` up to date with the arrays.

Empty infos are kept as None in the buffers; the batches and episodes get new empty
dicts.
"""

from typing import Any, Dict, List, Optional

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import next_unroll_id
from tfrl.evaluation.sampling.collectors import sample_batch_from_columns, shifted
from tfrl.evaluation.sampling.ops import clip_rewards_array
from tfrl.data.sample_batch import SampleBatch


class ChunkBuffer:
    """The buffers of `num_envs` sub-envs and where each sub-env's open chunk starts.

    Args:
        num_envs: Number of sub-envs (N).
        rollout_fragment_length: Steps per fragment (sizes the buffers; `inf`: grow).
        clip_rewards: True (sign), a number (clip) or False/None; applied to the
            `rewards` column of the chunks.

    Attributes:
        t: The slot of the current poll (-1 before the first).
        lengths: `[N]` int64, steps of each sub-env's episode; the loop adds 1 per poll.
        returns: `[N]` float64, summed rewards of each sub-env's episode; the loop adds
            the rewards of each poll.
    """

    def __init__(self, num_envs: int, rollout_fragment_length: float, clip_rewards: Any):
        n = num_envs
        self._n = n
        self._capacity = 16 if not np.isfinite(rollout_fragment_length) else max(
            4, int(rollout_fragment_length) // n + 4)
        self._clip_rewards = clip_rewards
        self.t = -1
        self.lengths = np.zeros(n, np.int64)
        self.returns = np.zeros(n, np.float64)
        self._seg_start = np.zeros(n, np.int64)  # first transition slot of each chunk
        self._chunk_t = np.zeros(n, np.int64)  # `t` of each chunk's first row
        self._last_action: List[Any] = [None] * n  # action before each chunk's first row
        self._last_reward = np.zeros(n, np.float32)
        self._buf: Optional[Dict[str, np.ndarray]] = None
        self._infos_seen = False  # an env info was written to the buffers
        self._steps = np.arange(64, dtype=np.int64)  # 0, 1, ... (the `t` column)
        self._extra_keys: List[str] = []

    @property
    def capacity(self) -> int:
        """Slots the buffers hold now (they grow when a chunk needs more)."""
        return self._capacity if self._buf is None else len(self._buf[Columns.OBS])

    # ------------------------------------------------------------- writing
    def write_slot(self, obs: np.ndarray, vp: Any) -> int:
        """Writes a poll's (preprocessed) observations, rewards and infos into a new
        slot; returns the slot."""
        self.t += 1
        t = self.t
        buf = self._buf
        if buf is None:
            cap = self._capacity
            buf = self._buf = {
                Columns.OBS: np.empty((cap,) + obs.shape, obs.dtype),
                Columns.REWARDS: np.empty((cap, self._n), vp.rewards.dtype),
                Columns.INFOS: np.empty((cap, self._n), object),  # None: an empty info
            }
        elif t >= len(buf[Columns.OBS]):
            t = self._make_room()
            buf = self._buf
        buf[Columns.OBS][t] = obs
        buf[Columns.REWARDS][t] = vp.rewards
        infos = vp.infos
        if infos is not None and any(infos):  # (all empty: like None)
            buf[Columns.INFOS][t] = infos
            self._infos_seen = True
        elif self._infos_seen:  # (rows never written hold None already)
            buf[Columns.INFOS][t] = None
        return t

    def _make_room(self) -> int:
        """Drops the slots no chunk needs any more (all before the earliest chunk start's
        previous slot, keeping the last slot), or grows the buffers by a quarter; returns
        the new index of the slot to write.

        A fragment of `T * N` steps takes a few more than `T` polls when sub-envs reset
        (a reset poll is no step), so the buffers sized for `T` grow once, by a quarter
        rather than doubling: pixel observations make each slot megabytes."""
        t = self.t
        low = min(int(self._seg_start.min()) - 1, t - 1)
        capacity = len(self._buf[Columns.OBS])
        if low >= capacity // 4:
            for value in self._buf.values():
                value[:t - low] = value[low:t]
            self._seg_start -= low
            self.t = t - low
        else:
            extra = max(4, capacity // 4)
            self._buf = {key: np.concatenate([value, np.empty((extra,) + value.shape[1:],
                                                              value.dtype)])
                         for key, value in self._buf.items()}
        return self.t

    def write_actions(self, t: int, actions: np.ndarray, extras: dict) -> None:
        """Writes the actions (and extra action outputs) computed on slot `t`."""
        buf = self._buf
        if Columns.ACTIONS not in buf:
            cap = len(buf[Columns.OBS])
            buf[Columns.ACTIONS] = np.empty((cap,) + actions.shape, actions.dtype)
            self._extra_keys = list(extras)
            for key, value in extras.items():
                buf["x_" + key] = np.empty((cap,) + np.shape(value), np.asarray(value).dtype)
        buf[Columns.ACTIONS][t] = actions
        for key in self._extra_keys:
            buf["x_" + key][t] = extras[key]

    def prev_actions(self, t: int, reset: np.ndarray, zero: Any) -> np.ndarray:
        """`[N, ...]` actions of slot `t - 1`; `zero` where `reset` (or at the start)."""
        zero = np.asarray(zero)
        if t == 0 or Columns.ACTIONS not in self._buf:
            return np.broadcast_to(zero, (self._n,) + zero.shape).copy()
        prev = self._buf[Columns.ACTIONS][t - 1]
        mask = reset.reshape((self._n,) + (1,) * (prev.ndim - 1))
        return np.where(mask, zero.astype(prev.dtype), prev)

    # ------------------------------------------------------------- chunks
    def restart(self, i: int) -> None:
        """Sub-env `i` starts a new (or soft-reset) episode: counters back to 0."""
        self.lengths[i] = 0
        self.returns[i] = 0.0
        self._chunk_t[i] = 0
        self._last_action[i] = None
        self._last_reward[i] = 0.0

    def start_chunk_after_current(self, i: int) -> None:
        """Sub-env `i`'s next chunk starts with the transition of the next slot."""
        self._seg_start[i] = self.t + 1

    def chunk(self, i: int, end: int, episode_id: int, *, terminated: bool = False,
              truncated: bool = False, prev_columns: tuple = (False, False),
              zero_action: Any = None) -> Optional[SampleBatch]:
        """Sub-env `i`'s transitions from its chunk start to slot `end`, as a batch
        (None if there are none); the next chunk starts after `end`.

        Args:
            i: The sub-env.
            end: The slot of the chunk's last transition.
            episode_id: The `eps_id` column.
            terminated: Set `terminateds` (and `dones`) on the last row.
            truncated: Set `truncateds` (and `dones`) on the last row.
            prev_columns: `(add prev_actions, add prev_rewards)`.
            zero_action: The `prev_actions` of an episode's first row.
        """
        a = int(self._seg_start[i])
        if a > end:
            return None
        buf = self._buf
        n = end + 1 - a
        obs = buf[Columns.OBS]
        actions = buf[Columns.ACTIONS][a - 1:end, i].copy()
        rewards = buf[Columns.REWARDS][a:end + 1, i]
        clip = self._clip_rewards
        rewards = (clip_rewards_array(rewards, clip) if clip
                   else rewards.astype(np.float32))  # a copy, also for float32 rewards
        # Only an episode's last row can have a flag set (a fragment cut never holds
        # the slot where a sub-env's episode ended).
        flags = np.zeros((3, n), bool)  # terminateds, truncateds, dones
        if terminated:
            flags[0, -1] = flags[2, -1] = True
        if truncated:
            flags[1, -1] = flags[2, -1] = True
        t0 = int(self._chunk_t[i])
        if len(self._steps) < n:
            self._steps = np.arange(2 * n, dtype=np.int64)
        # eps_id, unroll_id, env_id, agent_index, t: one int64 block.
        ids = np.empty((5, n), np.int64)
        ids.T[:] = episode_id, next_unroll_id(), i, 0, t0
        ids[4] += self._steps[:n]
        # `obs` and `new_obs` are two views of one copy of the n + 1 observations.
        observations = obs[a - 1:end + 1, i].copy()
        data = {
            Columns.OBS: observations[:-1],
            Columns.NEXT_OBS: observations[1:],
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
        prev_a, prev_r = prev_columns
        if prev_a:
            first = zero_action if self._last_action[i] is None else self._last_action[i]
            data[Columns.PREV_ACTIONS] = shifted(actions, first)
        if prev_r:
            data[Columns.PREV_REWARDS] = shifted(rewards, self._last_reward[i])
        self._last_action[i] = actions[-1]
        self._last_reward[i] = rewards[-1]
        for key in self._extra_keys:
            data[key] = buf["x_" + key][a - 1:end, i].copy()
        self._chunk_t[i] = t0 + n
        self._seg_start[i] = end + 1
        return sample_batch_from_columns(data, n)

    def keep_last_two_slots(self) -> None:
        """After a fragment cut (chunks hold copies): keeps only the current and the
        previous slot (the current slot's transitions need the previous slot's
        observations and actions)."""
        t = self.t
        shift = t - 1
        for value in self._buf.values():
            value[:2] = value[shift:t + 1]
        self._seg_start -= shift
        self.t = 1

    # ------------------------------------------------------------- episodes
    def sync_episode(self, episode: Any, agent_id: Any, i: int, raw_obs: Any,
                     terminated: bool, truncated: bool, first: bool = False,
                     before_start: bool = False) -> None:
        """Brings sub-env `i`'s Episode up to date with the current slot.

        Args:
            episode: The sub-env's Episode.
            agent_id: Its only agent.
            i: The sub-env.
            raw_obs: The sub-env's observation of the current poll, as the env gave it.
            terminated: The agent's last `terminated` flag.
            truncated: The agent's last `truncated` flag.
            first: The current slot holds the episode's reset observation (no action
                led to it).
            before_start: Only what RLlib's `on_episode_start` sees (with `first`): the
                raw reset observation and the infos; the observation and done flags
                come with the next (full) sync.
        """
        t = self.t
        buf = self._buf
        if before_start:
            info = buf[Columns.INFOS][t, i]
            if info is None:
                info = buf[Columns.INFOS][t, i] = {}
            episode.set_last_raw_obs(agent_id, raw_obs)
            episode.set_last_info(agent_id, info)
            episode.set_last_info("__common__", {})
            return
        length = int(self.lengths[i])
        if length:
            rewards = buf[Columns.REWARDS]
            recent = ([float(rewards[t - 1, i])] if length >= 2 and t >= 1 else []) + [
                float(rewards[t, i])]
        else:
            recent = []
        info = buf[Columns.INFOS][t, i]
        if info is None:  # an empty info: the dict the batch will hold
            info = buf[Columns.INFOS][t, i] = {}
        action = None
        if not first and Columns.ACTIONS in buf and t >= 1:
            action = np.array(buf[Columns.ACTIONS][t - 1, i])
        episode.set_single_agent_state(
            agent_id, length=length, total_reward=float(self.returns[i]), recent_rewards=recent,
            obs=buf[Columns.OBS][t, i].copy(), raw_obs=raw_obs, info=info,
            terminated=terminated, truncated=truncated, action=action)


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


def row(obs: Any, i: Any) -> Any:
    """Row `i` of a batched observation (dicts and tuples of arrays included); rows
    `i` for an index array."""
    if isinstance(obs, dict):
        return {k: row(v, i) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(row(v, i) for v in obs)
    return obs[i]
