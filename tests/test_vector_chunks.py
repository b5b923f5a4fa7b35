"""ChunkBuffer: the array-based loop's time-major buffers and per-sub-env chunks.

The batches it builds inside the sampler are checked against the generic loop in
test_sampler.py; here the buffer is driven by hand with two sub-envs.
"""

import numpy as np

from tfrl.env.vector_transitions import VectorPoll
from tfrl.evaluation.episode import Episode
from tfrl.evaluation.sampling.vector_chunks import ChunkBuffer, row


def _poll(obs, rewards, terminated=(False, False), infos=None):
    n = len(rewards)
    return VectorPoll(np.arange(n), np.asarray(obs, np.float32), np.asarray(rewards, np.float64),
                      np.asarray(terminated), np.zeros(n, bool), np.zeros(n, bool), infos)


def _fill(buffer, steps, first=0):
    """Writes polls `first, ..., first + steps - 1`: at poll k, sub-env i observes
    [10 k + i] after reward k + i, and both act k. Poll 0 is the reset poll of both."""
    for k in range(first, first + steps):
        buffer.write_slot(np.array([[10.0 * k], [10.0 * k + 1]], np.float32),
                          _poll([[0], [0]], [float(k), k + 1.0]))
        if k == 0:
            buffer.start_chunk_after_current(0)
            buffer.start_chunk_after_current(1)
        buffer.write_actions(buffer.t, np.array([k, k]), {"vf_preds": np.array([0.5, 1.5])})


def test_chunk_holds_the_transitions_since_the_chunk_start():
    buffer = ChunkBuffer(2, rollout_fragment_length=8, clip_rewards=None)
    assert buffer.t == -1 and buffer.capacity == 8  # 8 // 2 + 4 slots
    _fill(buffer, 4)
    chunk = buffer.chunk(1, 3, episode_id=9, terminated=True, prev_columns=(True, True),
                         zero_action=-1)
    assert chunk.count == 3
    assert chunk["obs"][:, 0].tolist() == [1.0, 11.0, 21.0]
    assert chunk["new_obs"][:, 0].tolist() == [11.0, 21.0, 31.0]
    assert chunk["actions"].tolist() == [0, 1, 2] and chunk["prev_actions"].tolist() == [-1, 0, 1]
    assert chunk["rewards"].tolist() == [2.0, 3.0, 4.0]
    assert chunk["prev_rewards"].tolist() == [0.0, 2.0, 3.0]
    assert chunk["terminateds"].tolist() == [False, False, True]
    assert chunk["dones"].tolist() == [False, False, True]
    assert chunk["t"].tolist() == [0, 1, 2] and set(chunk["eps_id"].tolist()) == {9}
    assert set(chunk["env_id"].tolist()) == {1} and chunk["vf_preds"].tolist() == [1.5] * 3
    assert chunk["infos"].tolist() == [{}, {}, {}]
    # The next chunk starts after slot 3 and continues `t` and the previous action.
    assert buffer.chunk(1, 3, episode_id=9) is None
    _fill(buffer, 1, first=4)
    chunk = buffer.chunk(1, 4, episode_id=9, prev_columns=(True, False))
    assert chunk["t"].tolist() == [3] and chunk["prev_actions"].tolist() == [2]
    assert not chunk["dones"].any()


def test_restart_and_sync_episode_bring_an_episode_up_to_date():
    buffer = ChunkBuffer(2, rollout_fragment_length=float("inf"), clip_rewards=True)
    _fill(buffer, 3)
    buffer.lengths[:] = 3
    buffer.returns[:] = [3.0, 6.0]
    episode = Episode({"p": object()}, lambda agent_id, episode, **kw: "p", list, print, 0)
    buffer.sync_episode(episode, "agent0", 1, raw_obs=[7.0], terminated=False, truncated=True)
    assert episode.length == 3 and episode.total_reward == 6.0
    assert dict(episode.agent_rewards) == {("agent0", "p"): 6.0}
    assert episode.last_reward_for("agent0") == 3.0 and episode.prev_reward_for("agent0") == 2.0
    assert episode.last_observation_for("agent0").tolist() == [21.0]
    assert episode.last_raw_obs_for("agent0") == [7.0] and episode.last_info_for("agent0") == {}
    assert episode.last_truncated_for("agent0") and not episode.last_terminated_for("agent0")
    assert episode.last_action_for("agent0") == 1  # the action that led to slot 2
    buffer.restart(1)
    assert buffer.lengths.tolist() == [3, 0] and buffer.returns.tolist() == [3.0, 0.0]
    buffer.start_chunk_after_current(1)
    assert buffer.chunk(1, buffer.t, episode_id=1) is None
    chunk = buffer.chunk(0, buffer.t, episode_id=1)
    assert chunk["rewards"].tolist() == [1.0, 1.0]  # clip_rewards=True: the sign


def test_buffers_make_room_and_keep_the_last_two_slots_after_a_cut():
    buffer = ChunkBuffer(2, rollout_fragment_length=4, clip_rewards=None)  # 6 slots
    _fill(buffer, 6)
    assert buffer.chunk(0, 5, episode_id=1).count == 5
    assert buffer.chunk(1, 5, episode_id=1).count == 5
    _fill(buffer, 1, first=6)  # no chunk needs slots 0-4: dropped, not doubled
    assert buffer.capacity == 6 and buffer.t == 1
    _fill(buffer, 5, first=7)  # both chunks open since poll 6: the buffers grow by a
    assert buffer.capacity == 10 and buffer.t == 6  # quarter, at least 4 slots
    # A fragment cut after sub-env 0's step of the current poll:
    assert buffer.chunk(0, 6, episode_id=1)["new_obs"][:, 0].tolist() == [
        60.0, 70.0, 80.0, 90.0, 100.0, 110.0]
    assert buffer.chunk(1, 5, episode_id=1).count == 5
    buffer.keep_last_two_slots()
    assert buffer.t == 1 and buffer.chunk(0, 1, episode_id=1) is None
    chunk = buffer.chunk(1, 1, episode_id=1)
    assert chunk["obs"][:, 0].tolist() == [101.0] and chunk["new_obs"][:, 0].tolist() == [111.0]
    assert chunk["actions"].tolist() == [10] and chunk["t"].tolist() == [10]


def test_row_of_composite_observations():
    obs = {"a": np.arange(4).reshape(2, 2), "b": (np.array([5, 6]),)}
    assert row(obs, 1)["a"].tolist() == [2, 3] and row(obs, 1)["b"] == (6,)
