"""Tests of ReplayBuffer, PrioritizedReplayBuffer and LocalReplayBuffer."""

import random

import numpy as np
import pytest

from tfrl.algorithms.checkpoints import read_checkpoint, write_checkpoint
from tfrl.execution.replay_buffer import (LocalReplayBuffer, PrioritizedReplayBuffer,
                                          ReplayBuffer)
from tfrl.execution.concurrency_ops import Concurrently
from tfrl.execution.iter import from_items
from tfrl.execution.replay_ops import MixInReplay, Replay, StoreToReplayBuffer
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.schedules import LinearSchedule


def _rows(start, n, **extra):
    return SampleBatch({"obs": np.arange(start, start + n, dtype=np.float32),
                        "actions": np.arange(start, start + n) % 2, **extra})


# ------------------------------------------------------------------ uniform


def test_ring_wraps_around_fifo_and_reports_slots():
    buffer = ReplayBuffer(capacity=5, seed=0)
    assert buffer.add(_rows(0, 3)).tolist() == [0, 1, 2]
    assert buffer.add(_rows(3, 4)).tolist() == [3, 4, 0, 1]  # rows 0 and 1 overwritten
    assert len(buffer) == 5 and buffer.num_added == 7
    values = buffer.sample(5000, allow_fewer=True)["obs"]
    assert set(values.tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}
    counts = np.bincount(values.astype(int))[2:]
    assert counts.min() > 850 and counts.max() < 1150  # 1000 expected each
    # One batch larger than the ring: only its newest rows stay.
    big = ReplayBuffer(capacity=3, seed=0)
    assert big.add(_rows(10, 7)).tolist() == [0, 1, 2]
    assert set(big.sample(50, allow_fewer=True)["obs"].tolist()) == {14.0, 15.0, 16.0}
    assert big.stats()["num_entries"] == 3 and big.stats()["sampled_count"] == 50


def test_sampling_fewer_rows_than_a_batch_is_an_error_unless_allowed():
    # RLlib samples with replacement from fewer items than asked for: so does the
    # default (allow_fewer=True); allow_fewer=False keeps the error.
    buffer = ReplayBuffer(capacity=10, seed=0)
    with pytest.raises(ValueError, match=r"ReplayBuffer.sample\(4\): the buffer holds 0 "
                                         "timesteps, fewer than the 4 requested"):
        buffer.sample(4)
    buffer.add(_rows(0, 3))
    with pytest.raises(ValueError, match=r"holds 3 timesteps, fewer than the 4 requested. Add "
                                         r"more before sampling \(e.g. learning_starts"):
        buffer.sample(4, allow_fewer=False)
    assert buffer.sample(4, allow_fewer=True).count == 4
    assert buffer.sample(4).count == 4
    with pytest.raises(ValueError, match=r"sample\(num_items=...\) must be an int >= 1; "
                                         "received 0"):
        buffer.sample(0)


@pytest.mark.parametrize("cls", [ReplayBuffer, PrioritizedReplayBuffer, LocalReplayBuffer])
@pytest.mark.parametrize("capacity", [0, -3, 2.5, True])
def test_capacity_must_be_a_positive_int(cls, capacity):
    args = (capacity, 1) if cls is LocalReplayBuffer else (capacity,)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\(capacity=...\) must be an int >= 1;"
                                         rf" received {capacity!r}"):
        cls(*args)


def test_constructor_argument_errors():
    with pytest.raises(ValueError, match=r"storage_unit=...\) must be one of \['timesteps', "
                                         r"'sequences', 'fragments'\]; received 'episodes'"):
        ReplayBuffer(10, "episodes")
    with pytest.raises(ValueError, match="capacity=4 timesteps holds no sequence of "
                                         "replay_sequence_length=5"):
        ReplayBuffer(4, "sequences", replay_sequence_length=5)
    with pytest.raises(ValueError, match=r"alpha=...\) must be a finite number >= 0.0; "
                                         "received -1"):
        PrioritizedReplayBuffer(4, alpha=-1)
    with pytest.raises(ValueError, match=r"prioritized_replay_beta=...\) must be a finite "
                                         "number >= 0.0; received nan"):
        LocalReplayBuffer(4, 1, prioritized_replay_beta=float("nan"))
    with pytest.raises(ValueError, match=r"n_step=...\) must be an int >= 1; received 0"):
        LocalReplayBuffer(4, 1, n_step=0)
    with pytest.raises(ValueError, match="holds no sequence"):  # checked at construction
        LocalReplayBuffer(4, 1, replay_sequence_length=8)
    with pytest.raises(TypeError, match="ReplayBuffer.add\\(\\) takes a SampleBatch; received "
                                        "dict"):
        ReplayBuffer(4).add({"obs": [1.0]})
    buffer = ReplayBuffer(4)
    buffer.add(SampleBatch({"obs": np.zeros((2, 3))}))
    with pytest.raises(ValueError, match=r"column 'obs' has items of shape \(4,\); the stored "
                                         r"ones have shape \(3,\)"):
        buffer.add(SampleBatch({"obs": np.zeros((2, 4))}))


def test_fragments_store_each_added_batch_as_one_item_as_rllib_1x():
    # RLlib 1.x's `size=` keyword: an item is an added batch; capacity counts timesteps
    # (the ring wraps once `size` timesteps were added since the last wrap).
    buffer = ReplayBuffer(size=6, seed=0)
    assert buffer.storage_unit == "fragments" and buffer.capacity == 6
    assert buffer.add(_rows(0, 2)).tolist() == [0] and buffer._next_idx == 1
    assert buffer.add(_rows(2, 4)).tolist() == [1] and buffer._next_idx == 0  # 6 >= 6
    assert buffer.add(_rows(6, 1)).tolist() == [0]  # overwrites the first batch
    assert len(buffer) == 2 and len(buffer._storage) == 2 and buffer.num_added == 7
    obs = buffer.sample(400)["obs"]
    assert set(obs.tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}
    assert 150 < int(np.sum(obs == 6.0)) < 250  # half of the 400 items (one row each)
    prio = PrioritizedReplayBuffer(size=4, alpha=1.0, seed=0)
    prio.add(_rows(0, 3))
    prio.add(_rows(3, 1), weight=3.0)
    batch = prio.sample(2, beta=1.0)
    assert batch.count == len(batch["weights"]) == len(batch["batch_indexes"])
    np.testing.assert_array_equal(batch["batch_indexes"], np.where(batch["obs"] < 3, 0, 1))
    with pytest.raises(ValueError, match=r"received capacity=4 and size=4; size is RLlib "
                                         r"1.x's name of capacity, pass one of both"):
        ReplayBuffer(4, size=4)
    with pytest.raises(ValueError, match="storage_unit='fragments' stores batches as they "
                                         "come"):
        ReplayBuffer(size=4, compress_observations=True)


# --------------------------------------------------------------- prioritized


def _prioritized(priorities, alpha, capacity=None, seed=0):
    buffer = PrioritizedReplayBuffer(capacity or len(priorities), alpha=alpha, seed=seed)
    buffer.add(_rows(0, len(priorities)))
    buffer.update_priorities(np.arange(len(priorities)), np.asarray(priorities))
    return buffer


def test_importance_weights_exact_on_a_hand_built_case():
    # p ** 0.5 = [1, 2, 3, 4]: P = [.1, .2, .3, .4], N = 4, min P = .1.
    buffer = _prioritized([1.0, 4.0, 9.0, 16.0], alpha=0.5)
    batch = buffer.sample(200, beta=0.5, allow_fewer=True)
    idx, weights = batch["batch_indexes"], batch["weights"]
    # w_i = (N P_i)^-beta / (N P_min)^-beta
    by_hand = {0: 1.0, 1: 0.5 ** 0.5, 2: (1 / 3) ** 0.5, 3: 0.5}
    assert set(idx.tolist()) == {0, 1, 2, 3}
    np.testing.assert_allclose(weights, [by_hand[i] for i in idx.tolist()], rtol=1e-6)
    assert weights.dtype == np.float32 and idx.dtype == np.int64
    np.testing.assert_array_equal(batch["obs"], idx.astype(np.float32))  # rows match indexes
    beta1 = buffer.sample(50, beta=1.0, allow_fewer=True)
    np.testing.assert_allclose(beta1["weights"], 1.0 / (beta1["batch_indexes"] + 1.0), rtol=1e-6)
    assert np.all(buffer.sample(20, allow_fewer=True)["weights"] == 1.0)  # beta None: 0


def test_new_items_get_the_max_priority_and_duplicates_take_the_largest():
    buffer = _prioritized([1.0, 4.0, 9.0, 16.0], alpha=0.5, capacity=8)
    assert buffer.stats()["max_priority"] == 16.0
    buffer.add(_rows(4, 1))  # stored as 16 ** 0.5 = 4, like item 3
    batch = buffer.sample(2000, beta=1.0, allow_fewer=True)
    counts = np.bincount(batch["batch_indexes"], minlength=5)
    assert abs(counts[4] - counts[3]) < 150  # ~571 each (4 / 14 of 2000)
    np.testing.assert_allclose(batch["weights"][batch["batch_indexes"] == 4], 0.25)
    buffer.update_priorities(np.array([0, 0, 2]), np.array([25.0, 36.0, 1.0]))
    weights = buffer.sample(500, beta=1.0, allow_fewer=True)
    # p ** 0.5 is now [6, 2, 1, 4, 4]: item 2 is the min, item 0 weight 1/6.
    w0 = weights["weights"][weights["batch_indexes"] == 0]
    np.testing.assert_allclose(w0, 1 / 6, rtol=1e-6)
    assert buffer.stats()["max_priority"] == 36.0


def test_prioritized_ring_overwrites_priorities_of_evicted_items():
    buffer = _prioritized([1e-4, 1.0, 1.0], alpha=1.0, seed=3)
    assert np.mean(buffer.sample(3000, allow_fewer=True)["batch_indexes"] == 0) < 0.01
    assert buffer.add(_rows(100, 1)).tolist() == [0]  # the new row takes slot 0, priority 1
    batch = buffer.sample(3000, allow_fewer=True)
    share = np.mean(batch["batch_indexes"] == 0)
    assert 0.29 < share < 0.38
    assert set(batch["obs"][batch["batch_indexes"] == 0].tolist()) == {100.0}


@pytest.mark.parametrize("priorities, shown", [
    ([1.0, -0.5], r"\[-0.5\] at positions \[1\]"),
    ([float("nan"), 1.0], r"\[nan\] at positions \[0\]"),
    ([1.0, float("inf")], r"\[inf\] at positions \[1\]"),
    ([0.0, 1.0], r"\[0.0\] at positions \[0\]"),
])
def test_bad_priorities_are_clear_errors(priorities, shown):
    buffer = _prioritized([1.0, 1.0], alpha=0.6)
    with pytest.raises(ValueError, match=r"PrioritizedReplayBuffer.update_priorities\(\): "
                                         r"priorities must be positive and finite; received "
                                         + shown + r". Use \|TD error\| \+ a small epsilon"):
        buffer.update_priorities(np.array([0, 1]), np.array(priorities))
    with pytest.raises(ValueError, match=r"add\(weight=...\): priorities must be positive"):
        buffer.add(_rows(5, 1), weight=-1.0)


def test_update_priorities_length_and_index_errors():
    buffer = _prioritized([1.0, 1.0, 1.0], alpha=0.6, capacity=10)
    with pytest.raises(ValueError, match=r"received 3 indices and 2 priorities; pass one "
                                         "priority per index"):
        buffer.update_priorities(np.array([0, 1, 2]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"indices must be in \[0, 3\) \(the items stored\); "
                                         "received 0..3"):
        buffer.update_priorities(np.array([0, 3]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="indices must be integers; received dtype float64"):
        buffer.update_priorities(np.array([0.0]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"beta=...\) must be a finite number >= 0.0; "
                                         "received -0.1"):
        buffer.sample(2, beta=-0.1)


# ---------------------------------------------------------- local (per policy)


def test_local_prioritized_updates_from_td_errors_with_a_beta_schedule():
    beta = LinearSchedule(schedule_timesteps=100, initial_p=0.4, final_p=1.0)
    buffer = LocalReplayBuffer(capacity=100, replay_batch_size=64, seed=0,
                               prioritized_replay=True, prioritized_replay_alpha=1.0,
                               prioritized_replay_beta=beta, prioritized_replay_eps=0.5)
    buffer.add_batch(_rows(0, 50))
    assert buffer.beta() == pytest.approx(0.7)  # 50 of 100 timesteps
    batch = buffer.replay()
    assert set(batch.keys()) >= {"obs", "actions", "weights", "batch_indexes"}
    td = np.where(batch["batch_indexes"] == 7, 9.5, 0.0)  # priorities |td| + 0.5
    buffer.update_priorities({"default_policy": (batch["batch_indexes"], -td)})
    # stored: 0.5 for every replayed index but 7 (10.0); 1.0 for the rest.
    out = buffer.replay()
    stored = {int(i): (10.0 if i == 7 else 0.5 if i in set(batch["batch_indexes"].tolist())
                       else 1.0) for i in range(50)}
    expected = (np.array([stored[int(i)] for i in out["batch_indexes"]]) / 0.5) ** -0.7
    np.testing.assert_allclose(out["weights"], expected, rtol=1e-5)
    assert np.mean(out["batch_indexes"] == 7) > 0.1  # 10 of ~45 mass
    with pytest.raises(KeyError, match="no rows of policy 'other' were stored"):
        buffer.update_priorities({"other": (np.array([0]), np.array([1.0]))})
    with pytest.raises(ValueError, match=r"priorities must be positive and finite; received "
                                         r"\[nan\]"):
        buffer.update_priorities({"default_policy": (np.array([0]), np.array([np.nan]))})
    uniform = LocalReplayBuffer(capacity=10, replay_batch_size=2, seed=0)
    uniform.add_batch(_rows(0, 3))
    uniform.update_priorities({"default_policy": (np.array([0]), np.array([np.nan]))})
    assert "weights" not in uniform.replay()  # uniform: priorities ignored


def test_multi_agent_buffers_are_per_policy():
    buffer = LocalReplayBuffer(capacity=4, replay_batch_size=6, seed=1,
                               prioritized_replay=True)
    image = SampleBatch({"obs": np.ones((3, 2, 2), np.uint8), "actions": np.zeros(3)})
    buffer.add_batch(MultiAgentBatch({"p0": _rows(0, 5), "p1": image}, env_steps=5))
    assert {pid: len(b) for pid, b in buffer.replay_buffers.items()} == {"p0": 4, "p1": 3}
    out = buffer.replay()
    assert isinstance(out, MultiAgentBatch) and out.count == 6
    assert set(out.policy_batches["p0"]["obs"].tolist()) <= {1.0, 2.0, 3.0, 4.0}
    assert out.policy_batches["p1"]["obs"].shape == (6, 2, 2)
    buffer.update_priorities({"p1": (np.array([0]), np.array([100.0]))})
    assert buffer.replay_buffers["p1"].stats()["max_priority"] > 100.0
    assert buffer.replay_buffers["p0"].stats()["max_priority"] == 1.0
    assert set(buffer.stats()) == {"policy_p0", "policy_p1"}


def test_local_buffer_n_step_at_insertion():
    buffer = LocalReplayBuffer(capacity=10, replay_batch_size=200, seed=0, n_step=2, gamma=0.5)
    batch = SampleBatch({"obs": np.arange(3.0), "new_obs": np.arange(1.0, 4.0),
                         "rewards": np.array([1.0, 2.0, 4.0]), "terminateds": [False, False, True],
                         "truncateds": [False] * 3})
    buffer.add_batch(batch)
    out = buffer.replay()
    by_obs = {o: (r, n, k) for o, r, n, k in zip(out["obs"].tolist(), out["rewards"].tolist(),
                                                 out["new_obs"].tolist(), out["n_step"].tolist())}
    assert by_obs == {0.0: (2.0, 2.0, 2), 1.0: (4.0, 3.0, 2), 2.0: (4.0, 3.0, 1)}
    assert batch["rewards"].tolist() == [1.0, 2.0, 4.0]  # the caller's batch is untouched
    for compress in (False, True):  # rows a worker compressed, stored plain or packed
        packed = LocalReplayBuffer(capacity=10, replay_batch_size=200, seed=0, n_step=2,
                                   gamma=0.5, compress_observations=compress)
        packed.add_batch(batch.copy().compress())
        again = packed.replay()
        assert again["new_obs"].dtype == np.float64
        np.testing.assert_array_equal(again["new_obs"], out["new_obs"])
        np.testing.assert_array_equal(again["rewards"], out["rewards"])


def test_sequence_storage_cuts_episodes_and_pads():
    buffer = ReplayBuffer(capacity=9, storage_unit="sequences", replay_sequence_length=3,
                          replay_zero_init_states=False, seed=0)
    assert buffer.slots == 3
    batch = SampleBatch({"obs": np.arange(7.0), "eps_id": [1, 1, 1, 1, 1, 2, 2],
                         "state_in_0": np.arange(7.0)[:, None] * np.ones((1, 2))})
    assert buffer.add(batch).tolist() == [0, 1, 2]  # [0 1 2] [3 4] [5 6]
    out = buffer.sample(3)
    assert out.zero_padded and out.max_seq_len == 3 and out["obs"].shape == (9,)
    seqs = {tuple(out["obs"][3 * i:3 * i + 3].tolist()): (int(n), out["state_in_0"][i, 0])
            for i, n in enumerate(out["seq_lens"])}
    assert set(seqs) <= {(0.0, 1.0, 2.0), (3.0, 4.0, 0.0), (5.0, 6.0, 0.0)}
    for seq, (n, state) in seqs.items():
        assert n == (3 if seq[0] == 0.0 else 2) and state == seq[0]
    assert out.count == int(np.sum(out["seq_lens"]))
    prio = LocalReplayBuffer(capacity=6, replay_batch_size=2, seed=0, prioritized_replay=True,
                             replay_sequence_length=3)
    prio.add_batch(batch)  # 3 sequences into 2 slots: [5 6] overwrote [0 1 2]
    out = prio.replay()
    assert out["weights"].shape == (6,) and out["batch_indexes"].shape == (6,)
    assert np.all(out["state_in_0"] == 0.0)  # replay_zero_init_states
    prio.update_priorities({"default_policy": (out["batch_indexes"], np.zeros(6))})
    with pytest.raises(ValueError, match="sequence batch"):
        ReplayBuffer(5).add(SampleBatch({"obs": np.zeros(2), "seq_lens": [2]}))
    with pytest.raises(ValueError, match="received a sequence of 4 rows; the buffer stores "
                                         "sequences of at most 3"):
        buffer.add(SampleBatch({"obs": np.zeros(4), "seq_lens": [4],
                                "state_in_0": np.zeros((1, 2))}))


def test_compressed_observations_round_trip_and_save_memory():
    frames = np.zeros((20, 16, 16), np.uint8)
    frames[:, 0, 0] = np.arange(20)
    plain = ReplayBuffer(capacity=20, seed=4)
    packed = ReplayBuffer(capacity=20, compress_observations=True, seed=4)
    plain.add(SampleBatch({"obs": frames, "new_obs": frames + 1}))
    already = SampleBatch({"obs": frames, "new_obs": frames + 1}).compress()  # a worker's
    packed.add(already)
    packed.add(SampleBatch({"obs": frames, "new_obs": frames + 1}).compress(bulk=True))
    a, b = plain.sample(8), packed.sample(8)
    assert len(packed) == 20 and packed.num_added == 40  # the bulk blob came in as 20 rows
    for key in ("obs", "new_obs"):
        assert b[key].dtype == np.uint8
        np.testing.assert_array_equal(a[key], b[key])
    assert packed.stats()["est_size_bytes"] < plain.stats()["est_size_bytes"] / 2
    # Sequence items are packed one blob per sequence.
    seq_plain, seq_packed = (
        ReplayBuffer(capacity=20, storage_unit="sequences", replay_sequence_length=4,
                     compress_observations=c, seed=5) for c in (False, True))
    for buffer in (seq_plain, seq_packed):
        buffer.add(SampleBatch({"obs": frames, "eps_id": np.arange(20) // 6}))
    a, b = seq_plain.sample(5), seq_packed.sample(5)
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["seq_lens"], b["seq_lens"])
    assert b["obs"].shape == (20, 16, 16) and sorted(set(b["seq_lens"].tolist())) <= [2, 4]


def test_save_and_restore_through_a_checkpoint_is_exact(tmp_path):
    def build():
        return LocalReplayBuffer(capacity=8, replay_batch_size=5, seed=7, prioritized_replay=True,
                                 compress_observations=True, n_step=2, gamma=0.9)

    buffer = build()
    obs = np.arange(24, dtype=np.float32).reshape(12, 2)
    batch = SampleBatch({"obs": obs, "new_obs": obs + 1, "rewards": np.ones(12, np.float32),
                         "terminateds": np.arange(12) % 5 == 4, "eps_id": np.arange(12) // 5,
                         "infos": np.array([{"i": i} for i in range(12)], dtype=object)})
    buffer.add_batch(MultiAgentBatch({"a": batch, "b": batch.slice(0, 3)}, env_steps=12))
    replayed = buffer.replay()
    buffer.update_priorities({"a": (replayed.policy_batches["a"]["batch_indexes"],
                                    np.arange(5.0))})
    path = write_checkpoint(str(tmp_path / "ckpt"), {"replay": buffer.get_state()})
    restored = build()
    restored.set_state(read_checkpoint(path)["replay"])
    assert restored.num_added == buffer.num_added and len(restored) == len(buffer)
    for _ in range(3):
        x, y = buffer.replay(), restored.replay()
        for pid in ("a", "b"):
            for key in ("obs", "new_obs", "rewards", "n_step", "weights", "batch_indexes"):
                np.testing.assert_array_equal(x.policy_batches[pid][key],
                                              y.policy_batches[pid][key])
            # Info dicts are not checkpointed: restored as None.
            assert set(y.policy_batches[pid]["infos"].tolist()) == {None}
    more = SampleBatch({k: v[:4] for k, v in batch.items()})
    buffer.add_batch(MultiAgentBatch({"b": more}, 4))
    restored.add_batch(MultiAgentBatch({"b": more}, 4))
    np.testing.assert_array_equal(buffer.replay().policy_batches["b"]["obs"],
                                  restored.replay().policy_batches["b"]["obs"])
    with pytest.raises(ValueError, match="the saved buffer holds 8 items; this one 4"):
        LocalReplayBuffer(capacity=4, replay_batch_size=1, prioritized_replay=True,
                          compress_observations=True).set_state(buffer.get_state())


@pytest.mark.parametrize("compress, n_step", [(False, 1), (True, 1), (False, 3)])
def test_uint8_frames_stay_uint8_through_replay_and_checkpoints(tmp_path, compress, n_step):
    # Issue 19: image observations keep one byte per pixel in the buffer, in what it
    # replays and in its checkpointed contents.
    frames = np.random.default_rng(0).integers(0, 256, (13, 84, 84, 4), dtype=np.uint8)

    def build():
        return LocalReplayBuffer(capacity=16, replay_batch_size=6, seed=3,
                                 prioritized_replay=True, compress_observations=compress,
                                 n_step=n_step, gamma=0.9)

    buffer = build()
    batch = SampleBatch({"obs": frames[:-1], "new_obs": frames[1:],
                         "actions": np.arange(12) % 4, "rewards": np.ones(12, np.float32),
                         "terminateds": np.arange(12) == 5, "eps_id": np.arange(12) // 6})
    buffer.add_batch(batch)
    if not compress:  # stored as uint8 arrays: 84 * 84 * 4 bytes a frame, twice a row
        storage = buffer.replay_buffers["default_policy"]._storage
        assert storage.columns["obs"].dtype == np.uint8
        assert storage.columns["new_obs"].nbytes == 16 * 84 * 84 * 4
    out = buffer.replay()
    for key in ("obs", "new_obs"):
        assert out[key].dtype == np.uint8 and out[key].shape == (6, 84, 84, 4)
    # The replayed frames are the stored ones (row i of the batch had obs frames[i]).
    rows = out["batch_indexes"]
    np.testing.assert_array_equal(out["obs"], frames[rows])
    if n_step == 1:
        np.testing.assert_array_equal(out["new_obs"], frames[rows + 1])
    path = write_checkpoint(str(tmp_path / "ckpt"), {"replay": buffer.get_state()})
    restored = build()
    restored.set_state(read_checkpoint(path)["replay"])
    x, y = buffer.replay(), restored.replay()
    for key in ("obs", "new_obs"):
        assert y[key].dtype == np.uint8
        np.testing.assert_array_equal(x[key], y[key])


def test_uniform_sequence_state_round_trip():
    buffer = ReplayBuffer(capacity=6, storage_unit="sequences", replay_sequence_length=2,
                          seed=2)
    buffer.add(SampleBatch({"obs": np.arange(5.0), "state_in_0": np.ones((5, 3))}))
    copy = ReplayBuffer(capacity=6, storage_unit="sequences", replay_sequence_length=2)
    copy.set_state(buffer.get_state())
    np.testing.assert_array_equal(buffer.sample(3)["obs"], copy.sample(3)["obs"])
    empty = ReplayBuffer(3)
    ReplayBuffer(3).set_state(empty.get_state())  # an empty buffer restores too


def test_sequence_state_with_infos_restores_and_takes_more_sequences(tmp_path):
    # infos (Python objects) are not saved; restored as Nones of the sequence items'
    # shape, so that the restored buffer stores the next sequences as the original does.
    def rows(start):
        return SampleBatch({"obs": np.arange(start, start + 5.0),
                            "infos": np.array([{"k": i} for i in range(5)], dtype=object)})

    buffer = ReplayBuffer(capacity=6, storage_unit="sequences", replay_sequence_length=2,
                          seed=2)
    buffer.add(rows(0))
    path = write_checkpoint(str(tmp_path / "ckpt"), {"replay": buffer.get_state()})
    copy = ReplayBuffer(capacity=6, storage_unit="sequences", replay_sequence_length=2)
    copy.set_state(read_checkpoint(path)["replay"])
    for b in (buffer, copy):
        b.add(rows(10))
    np.testing.assert_array_equal(buffer.sample(3)["obs"], copy.sample(3)["obs"])
    assert copy.sample(1)["infos"].shape == (2,)


def test_prioritized_local_buffer_through_the_store_and_replay_operators():
    buffer = LocalReplayBuffer(capacity=100, replay_batch_size=4, learning_starts=6, seed=0,
                               prioritized_replay=True, prioritized_replay_eps=0.0)
    store_op = from_items([_rows(3 * i, 3) for i in range(10)]).for_each(
        StoreToReplayBuffer(local_buffer=buffer))
    replay_op = Replay(local_buffer=buffer)
    out = Concurrently([store_op, replay_op], mode="round_robin", output_indexes=[1])
    largest = 1.0
    for batch in out.take(3):
        assert batch.count == 4 and batch["weights"].dtype == np.float32
        # Learn-step TD errors back into the buffer: |td| becomes the priority.
        td_errors = -(batch["obs"] + 1.0)
        buffer.update_priorities({"default_policy": (batch["batch_indexes"], td_errors)})
        largest = max(largest, float(np.max(np.abs(td_errors))))
    assert buffer.num_added == 12  # ready after 2 stores, then one store per replay
    assert buffer.stats()["policy_default_policy"]["max_priority"] == largest > 1.0


# ------------------------------------------------------------------- mixing


def test_mix_in_replay_proportions():
    random.seed(1)
    mix = MixInReplay(num_slots=4, replay_proportion=1.5)
    outputs = [mix(i) for i in range(4000)]
    lengths = np.array([len(o) for o in outputs])
    assert set(lengths.tolist()) == {2, 3}  # 1 or 2 replayed per input
    assert (lengths - 1).mean() == pytest.approx(1.5, abs=0.03)
    ages = [i - r for i, o in enumerate(outputs) for r in o[1:]]
    assert min(ages) == 0 and max(ages) == 3  # at most num_slots inputs old
