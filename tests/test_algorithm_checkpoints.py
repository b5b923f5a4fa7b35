"""Checkpoint directories: round trip, atomic replacement, clear errors."""

import json
import os
import random

import numpy as np
import pytest

from tfrl.algorithms import checkpoints
from tfrl.algorithms.checkpoints import CheckpointError, read_checkpoint, write_checkpoint


def sample_state():
    return {"weights": [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros(3)],
            "iteration": 7, "lr": 1e-3, "name": "ppo", "none": None,
            "np_rng": np.random.RandomState(3).get_state(), "py_rng": random.Random(1).getstate(),
            "bitgen": np.random.default_rng(5).bit_generator.state,
            "int_keys": {0: "a", (1, 2): np.ones(1)}, "scalar": np.float32(2.5)}


def test_round_trip(tmp_path):
    state = sample_state()
    path = write_checkpoint(str(tmp_path / "ckpt"), state, {"algo": "PPO"})
    out, meta = read_checkpoint(path, with_metadata=True)
    assert meta == {"algo": "PPO"}
    np.testing.assert_array_equal(out["weights"][0], state["weights"][0])
    assert out["weights"][0].dtype == np.float32
    assert out["iteration"] == 7 and out["none"] is None and out["scalar"] == 2.5
    np.testing.assert_array_equal(out["np_rng"][1], state["np_rng"][1])
    assert out["py_rng"] == state["py_rng"]
    assert out["bitgen"] == state["bitgen"]
    assert out["int_keys"][0] == "a" and out["int_keys"][(1, 2)].tolist() == [1.0]
    rng = np.random.default_rng()
    rng.bit_generator.state = out["bitgen"]
    assert rng.integers(10**9) == np.random.default_rng(5).integers(10**9)


def test_unsupported_type_names_its_path(tmp_path):
    with pytest.raises(TypeError, match=r"state.bad has type object"):
        write_checkpoint(str(tmp_path / "c"), {"bad": object()})
    assert not os.path.exists(tmp_path / "c")


def test_failure_mid_write_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"v": np.ones(3), "it": 1})

    def crash(*args, **kwargs):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(checkpoints.json, "dump", crash)
    with pytest.raises(OSError, match="injected"):
        write_checkpoint(path, {"v": np.zeros(3), "it": 2})
    monkeypatch.undo()
    state = read_checkpoint(path)
    assert state["it"] == 1 and state["v"].tolist() == [1.0, 1.0, 1.0]
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]  # no temporary left behind


def test_replacing_a_checkpoint(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"it": 1})
    write_checkpoint(path, {"it": 2})
    assert read_checkpoint(path)["it"] == 2
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="No checkpoint directory"):
        read_checkpoint(str(tmp_path / "nope"))


def test_missing_file(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"it": 1})
    os.remove(os.path.join(path, "arrays.npz"))
    with pytest.raises(CheckpointError, match="arrays.npz is missing"):
        read_checkpoint(path)


def test_corrupt_json(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"it": 1})
    with open(os.path.join(path, "state.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(CheckpointError, match="corrupt"):
        read_checkpoint(path)


def test_corrupt_arrays(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"w": np.ones(3)})
    with open(os.path.join(path, "arrays.npz"), "wb") as f:
        f.write(b"garbage")
    with pytest.raises(CheckpointError, match="arrays.npz' is corrupt"):
        read_checkpoint(path)


def test_wrong_format_version(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"it": 1})
    with open(os.path.join(path, "state.json"), "w") as f:
        json.dump({"format_version": 99, "state": {}}, f)
    with pytest.raises(CheckpointError, match="format version 99"):
        read_checkpoint(path)


def test_missing_array_reference(tmp_path):
    path = write_checkpoint(str(tmp_path / "ckpt"), {"w": np.ones(3)})
    np.savez(os.path.join(path, "arrays.npz"))
    with pytest.raises(CheckpointError, match="refers to array 'a0'"):
        read_checkpoint(path)


@pytest.mark.parametrize("entry,value,named", [
    ("weights", np.nan, r"weight 2 \(default_model/pi/logits/kernel\) holds nan at index "
                            r"\(0, 0\)"),
    ("_optimizer_variables", np.inf, r"optimizer variable 1 \([\w/]+\) holds inf at index"),
])
def test_restore_refuses_nonfinite_weights_naming_file_and_variable(tmp_path, entry, value,
                                                                    named):
    # Issue 29: a NaN in a checkpoint's weight array used to restore silently.
    from tfrl.algorithms.pg import PG

    config = {"env": "CartPole-v1", "num_workers": 0, "rollout_fragment_length": 16,
              "train_batch_size": 32, "model": {"fcnet_hiddens": [8]}, "seed": 0}
    algo = PG(config=config)
    algo.train()
    path = algo.save(str(tmp_path / "good"))
    state, meta = read_checkpoint(path, with_metadata=True)
    array = state["worker"]["policies"]["default_policy"][entry][
        2 if entry == "weights" else 1]
    array.reshape(-1)[0] = value
    bad = write_checkpoint(str(tmp_path / "bad" / "checkpoint_000001"), state, meta)
    other = PG(config=config)
    before = other.get_weights()["default_policy"]
    try:
        with pytest.raises(CheckpointError, match=(
                rf"restore\(\): '{os.path.join(bad, 'arrays.npz')}': policy 'default_policy': "
                rf"set_state\(\): {named}")):
            other.restore(bad)
        for a, b in zip(other.get_weights()["default_policy"], before):
            np.testing.assert_array_equal(a, b)  # nothing restored
        assert other.iteration == 0
        other.restore(path)  # the good one still restores
        assert other.iteration == 1
    finally:
        algo.stop()
        other.stop()


def test_policy_set_state_refuses_nonfinite_weights():
    import gymnasium as gym

    from tfrl.algorithms.pg import PGTFPolicy
    from tfrl.policy.nonfinite import NonFiniteStateError

    policy = PGTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2),
                        {"model": {"fcnet_hiddens": [8]}, "seed": 0})
    state = policy.get_state()
    before = [w.copy() for w in state["weights"]]
    state["weights"][0] = state["weights"][0].copy()
    state["weights"][0][1, 2] = -np.inf
    with pytest.raises(NonFiniteStateError, match=r"weight 0 \([\w/]+\) holds -inf at index "
                                                  r"\(1, 2\)"):
        policy.set_state(state)
    for a, b in zip(policy.get_weights(), before):
        np.testing.assert_array_equal(a, b)
