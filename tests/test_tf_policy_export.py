"""TFPolicy export: a SavedModel reloaded in a fresh process acts like the live policy; checkpoints."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import gymnasium as gym

from policy_helpers import make_batch, make_policy, recurrent_policy
from tfrl.policy.tf_policy import TFPolicy


def test_saved_model_in_a_fresh_process_returns_the_live_actions(tmp_path):
    policy = make_policy("mirrored")
    policy.learn_on_batch(make_batch(32))
    obs = make_batch(6, seed=3)["obs"]
    actions, _, extras = policy.compute_actions(obs, explore=False)
    export_dir = str(tmp_path / "saved")
    policy.export_model(export_dir)
    np.save(tmp_path / "obs.npy", obs)
    script = (
        "import numpy as np, tensorflow as tf\n"
        f"m = tf.saved_model.load({export_dir!r})\n"
        f"obs = np.load({str(tmp_path / 'obs.npy')!r})\n"
        "out = m.signatures['deterministic_action'](obs=tf.constant(obs))\n"
        f"np.savez({str(tmp_path / 'out.npz')!r}, **{{k: v.numpy() for k, v in out.items()}})\n"
        "print(sorted(m.signatures))\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'action_dist_inputs', 'deterministic_action', 'serving_default', " \
           "'stochastic_action', 'value'" in done.stdout
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(out["actions"], actions)
    np.testing.assert_array_equal(out["action_dist_inputs"], extras["action_dist_inputs"])
    np.testing.assert_array_equal(out["vf_preds"], extras["vf_preds"])
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp_export_")]


def test_recurrent_saved_model_has_state_in_and_out(tmp_path):
    policy = recurrent_policy()
    obs = np.random.default_rng(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    state = [np.full((2, 4), 0.5, np.float32)] * 2
    actions, state_out, extras = policy.compute_actions(obs, state, explore=False)
    policy.export_model(str(tmp_path / "rnn"))
    loaded = tf.saved_model.load(str(tmp_path / "rnn"))
    out = loaded.signatures["deterministic_action"](
        obs=tf.constant(obs), state_in_0=tf.constant(state[0]), state_in_1=tf.constant(state[1]))
    np.testing.assert_array_equal(out["actions"].numpy(), actions)
    np.testing.assert_array_equal(out["state_out_1"].numpy(), state_out[1])
    sampled = loaded.signatures["stochastic_action"](
        obs=tf.constant(obs), state_in_0=tf.constant(state[0]), state_in_1=tf.constant(state[1]))
    assert sampled["action_logp"].shape == (2,)
    np.testing.assert_array_equal(loaded.signatures["value"](
        obs=tf.constant(obs), state_in_0=tf.constant(state[0]),
        state_in_1=tf.constant(state[1]))["vf_preds"].numpy(), extras["vf_preds"])


def test_saved_model_of_an_lstm_with_its_own_value_lstm_has_four_states(tmp_path):
    policy = recurrent_policy(model={"vf_share_layers": False})  # state [h, c, h_vf, c_vf]
    assert policy.num_state_tensors() == 4
    rng = np.random.default_rng(1)
    obs = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    state = [rng.normal(size=(2, 4)).astype(np.float32) for _ in range(4)]
    actions, state_out, extras = policy.compute_actions(obs, state, explore=False)
    policy.export_model(str(tmp_path / "rnn4"))
    loaded = tf.saved_model.load(str(tmp_path / "rnn4"))
    inputs = {f"state_in_{i}": tf.constant(s) for i, s in enumerate(state)}
    out = loaded.signatures["deterministic_action"](obs=tf.constant(obs), **inputs)
    np.testing.assert_array_equal(out["actions"].numpy(), actions)
    for i in range(4):
        np.testing.assert_array_equal(out[f"state_out_{i}"].numpy(), state_out[i])
    np.testing.assert_array_equal(loaded.signatures["value"](obs=tf.constant(obs), **inputs)[
        "vf_preds"].numpy(), extras["vf_preds"])
    # The value reads the last two states, the actions only the first two.
    other_vf = dict(inputs, state_in_2=tf.zeros((2, 4)), state_in_3=tf.zeros((2, 4)))
    np.testing.assert_array_equal(
        loaded.signatures["deterministic_action"](obs=tf.constant(obs), **other_vf)[
            "action_dist_inputs"].numpy(), extras["action_dist_inputs"])
    assert not np.allclose(loaded.signatures["value"](obs=tf.constant(obs), **other_vf)[
        "vf_preds"].numpy(), extras["vf_preds"])


def test_saved_model_acts_like_the_numpy_inference_path(tmp_path):
    policy = TFPolicy(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(3),
                      {"seed": 0, "model": {"fcnet_hiddens": [16]}})
    assert policy.inference == "numpy"
    obs = make_batch(6, seed=3)["obs"]
    actions, _, extras = policy.compute_actions(obs, explore=False)
    policy.export_model(str(tmp_path / "dense"))
    out = tf.saved_model.load(str(tmp_path / "dense")).signatures["deterministic_action"](
        obs=tf.constant(obs))
    np.testing.assert_array_equal(out["actions"].numpy(), actions)
    np.testing.assert_allclose(out["vf_preds"].numpy(), extras["vf_preds"], atol=1e-6)


def test_saved_model_takes_the_prev_inputs_the_model_consumes(tmp_path):
    policy = recurrent_policy(model={"lstm_use_prev_action": True, "lstm_use_prev_reward": True})
    obs = np.random.default_rng(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    inputs = {"state_in_0": np.full((2, 4), 0.5, np.float32),
              "state_in_1": np.zeros((2, 4), np.float32),
              "prev_actions": np.array([1, 0]), "prev_rewards": np.array([0.5, -1.0], np.float32)}
    _, _, extras = policy.compute_actions(
        obs, [inputs["state_in_0"], inputs["state_in_1"]], explore=False,
        prev_action_batch=inputs["prev_actions"], prev_reward_batch=inputs["prev_rewards"])
    policy.export_model(str(tmp_path / "prev"))
    loaded = tf.saved_model.load(str(tmp_path / "prev"))
    out = loaded.signatures["value"](obs=tf.constant(obs),
                                     **{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_array_equal(out["vf_preds"].numpy(), extras["vf_preds"])


def test_checkpoint_round_trip_restores_weights_and_optimizer(tmp_path):
    source = make_policy("one_device", optimizer="adam", lr=0.01, shuffle_sequences=False)
    source.learn_on_batch(make_batch(32))
    source.export_checkpoint(str(tmp_path / "ckpt"))
    source.export_checkpoint(str(tmp_path / "ckpt"))  # overwriting is fine
    target = make_policy("mirrored", optimizer="adam", lr=0.01, shuffle_sequences=False)
    target.import_checkpoint(str(tmp_path / "ckpt"))
    assert int(target.num_grad_updates.numpy()) == 6
    batch = make_batch(32, seed=1)
    source.learn_on_batch(batch)
    target.learn_on_batch(batch)
    for a, b in zip(source.get_weights(), target.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_export_errors(tmp_path):
    policy = make_policy()
    with pytest.raises(FileNotFoundError, match=r"No policy checkpoint in .*expected .*policy.index"):
        policy.import_checkpoint(str(tmp_path))
    # ONNX export exists (tests/test_portable_export.py); an opset that is not one fails.
    with pytest.raises(ValueError, match=r"onnx must be an ONNX opset version, an int >= 7 "
                                         r".*received 'latest'"):
        policy.export_model(str(tmp_path / "x"), onnx="latest")
