"""TFLite and ONNX export (tfrl.policy.portable_export): each format's deterministic entry
point computes what the SavedModel's does (MLP, Box actions, CNN, LSTM with its state),
its stochastic one samples the policy's distribution and never an action a mask forbids,
and bad requests are refused with a clear error."""

import sys

import gymnasium as gym
import keras
import numpy as np
import onnxruntime as ort
import pytest
import tensorflow as tf
import tree
from ai_edge_litert.interpreter import Interpreter

from tfrl.algorithms.ppo import PPOTFPolicy
from tfrl.examples.envs.masked_actions import MaskedActions
from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.graph_preprocess import graph_preprocessor
from tfrl.policy import portable_export
from tfrl.utils.spaces.space_utils import to_numpy_batch

BOX4 = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def make_policy(obs_space, action_space, **model):
    keras.utils.set_random_seed(0)
    return PPOTFPolicy(obs_space, action_space, {"model": model, "seed": 0})


def export_all(policy, tmp_path):
    """(SavedModel deterministic signature, TFLite runner factory, ONNX sessions)."""
    tf.random.set_seed(0)  # seeds the stochastic entry points' random ops
    policy.export_model(str(tmp_path / "saved"))
    tflite = policy.export_tflite(str(tmp_path / "tflite"))
    policy.export_model(str(tmp_path / "onnx"), onnx=17)
    saved = tf.saved_model.load(str(tmp_path / "saved")).signatures["deterministic_action"]

    def runner(name):
        return Interpreter(model_path=tflite).get_signature_runner(name)

    sessions = {name: ort.InferenceSession(str(tmp_path / "onnx" / file)) for name, file in [
        ("deterministic_action", "model.onnx"), ("stochastic_action", "model_stochastic.onnx")]}
    return saved, runner, sessions


def run_onnx(session, feed):
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feed)))


def feed_for(policy, rows, rng):
    low = policy.observation_space.low
    feed = {"obs": rng.uniform(np.maximum(low, -1.0), 1.0,
                               (rows,) + policy.observation_space.shape).astype(np.float32)}
    for i, state in enumerate(policy.get_initial_state()):
        feed[f"state_in_{i}"] = rng.normal(size=(rows,) + state.shape).astype(np.float32)
    return feed


@pytest.mark.parametrize("kind", ["mlp", "box", "cnn", "lstm"])
def test_deterministic_entry_points_match_the_saved_model(tmp_path, kind):
    policy, rows = {
        "mlp": (lambda: make_policy(BOX4, gym.spaces.Discrete(3), fcnet_hiddens=[16, 16]), 10000),
        "box": (lambda: make_policy(BOX4, gym.spaces.Box(-2.0, 2.0, (2,), np.float32),
                                    fcnet_hiddens=[16, 16]), 1000),
        "cnn": (lambda: make_policy(gym.spaces.Box(0.0, 1.0, (16, 16, 3), np.float32),
                                    gym.spaces.Discrete(3),
                                    conv_filters=[[8, [4, 4], 2], [16, [8, 8], 1]]), 64),
        "lstm": (lambda: make_policy(BOX4, gym.spaces.Discrete(3), fcnet_hiddens=[16],
                                     use_lstm=True, lstm_cell_size=8), 200),
    }[kind]
    policy = policy()
    saved, runner, sessions = export_all(policy, tmp_path)
    feed = feed_for(policy, rows, np.random.default_rng(1))
    expected = {k: v.numpy() for k, v in saved(**{k: tf.constant(v) for k, v in feed.items()}).items()}
    outputs = {"tflite": runner("deterministic_action")(**feed),
               "onnx": run_onnx(sessions["deterministic_action"], feed)}
    keys = sorted(expected)
    assert keys == sorted(["actions", "action_dist_inputs", "vf_preds"]
                          + [f"state_out_{i}" for i in range(len(policy.get_initial_state()))])
    for fmt, got in outputs.items():
        assert sorted(got) == keys, fmt
        for key in keys:
            assert got[key].shape == expected[key].shape, (fmt, key)
            np.testing.assert_allclose(got[key], expected[key], atol=1e-5, err_msg=f"{fmt} {key}")
        if kind != "box":  # the greedy discrete actions are the same actions
            np.testing.assert_array_equal(got["actions"], expected["actions"])


def test_stochastic_entry_points_sample_the_policy_distribution(tmp_path):
    policy = make_policy(BOX4, gym.spaces.Discrete(3), fcnet_hiddens=[16])
    kernel, bias = policy.model.policy_head.dense.kernel, policy.model.policy_head.dense.bias
    kernel.assign(np.zeros(kernel.shape, np.float32))
    bias.assign(np.array([2.0, 0.0, -2.0], np.float32))  # probabilities .867 .117 .016
    _, runner, sessions = export_all(policy, tmp_path)
    obs = np.zeros((4000, 4), np.float32)
    expected = tf.nn.softmax([2.0, 0.0, -2.0]).numpy()
    tflite = runner("stochastic_action")(obs=obs)
    onnx = run_onnx(sessions["stochastic_action"], {"obs": obs})
    for fmt, got in (("tflite", tflite), ("onnx", onnx)):
        frequencies = np.bincount(got["actions"], minlength=3) / len(obs)
        np.testing.assert_allclose(frequencies, expected, atol=0.025, err_msg=fmt)
        np.testing.assert_allclose(got["action_dist_inputs"][0], [2.0, 0.0, -2.0], atol=1e-6)
    # Seeded by TensorFlow's global seed at export: a fresh interpreter draws the same.
    np.testing.assert_array_equal(runner("stochastic_action")(obs=obs)["actions"],
                                  tflite["actions"])


def test_exported_masked_policies_never_pick_a_forbidden_action(tmp_path):
    raw = MaskedActions().observation_space  # Dict(action_mask [100], observation)
    prep = ModelCatalog.get_preprocessor_for_space(raw)
    policy = make_policy(prep.observation_space, gym.spaces.Discrete(100), fcnet_hiddens=[8])
    _, runner, sessions = export_all(policy, tmp_path)
    env, rows = MaskedActions(), []
    obs, _ = env.reset(seed=0)
    for _ in range(2000):
        rows.append(obs)
        obs = env._draw()
    # The exported models take the env's Dict entries by name, mask included.
    feed = {f"obs_{k}": np.stack([o[k] for o in rows]) for k in rows[0]}
    assert sorted(feed) == ["obs_action_mask", "obs_observation"]
    mask = feed["obs_action_mask"] > 0
    assert mask.sum(axis=1).max() == 20  # 80 of 100 actions invalid
    live, _, _ = policy.compute_actions(
        prep.transform_batch({k: np.stack([o[k] for o in rows]) for k in rows[0]}),
        explore=False)
    for name in portable_export.ENTRY_POINTS:
        for fmt, got in (("tflite", runner(name)(**feed)),
                         ("onnx", run_onnx(sessions[name], feed))):
            actions = got["actions"].astype(np.int64)
            assert mask[np.arange(len(rows)), actions].all(), (fmt, name)
            assert np.isfinite(got["action_dist_inputs"]).all()
            if name == "deterministic_action":  # the live policy's greedy actions
                np.testing.assert_array_equal(actions, live, err_msg=fmt)


def test_bad_export_requests_say_what_to_do(tmp_path, monkeypatch):
    policy = make_policy(BOX4, gym.spaces.Discrete(3), fcnet_hiddens=[4])
    for bad in (6, "17", 17.0, True):
        with pytest.raises(ValueError, match=r"onnx must be an ONNX opset version, an int >= 7 "
                                             rf"\(e\.g\. 17\); received {bad!r}\."):
            policy.export_model(str(tmp_path / "x"), onnx=bad)
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # as if not installed
    with pytest.raises(ImportError, match=r"Exporting a policy as ONNX needs the package "
                                          r"'tf2onnx', which is not installed .*pip install "
                                          r"\"tfrl\[export\]\""):
        policy.export_model(str(tmp_path / "x"), onnx=17)
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_graph_preprocessing_matches_the_catalog_preprocessors():
    spaces = [
        gym.spaces.Dict({
            "b": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
            "a": gym.spaces.Discrete(3, start=2),
            "c": gym.spaces.MultiDiscrete([[2, 3], [4, 2]]),
            "d": gym.spaces.Tuple((gym.spaces.Box(0, 5, (2,), np.int32),
                                   gym.spaces.Discrete(2)))}),
        gym.spaces.Discrete(5),
        gym.spaces.MultiDiscrete([3, 4]),
    ]
    for space in spaces:
        space.seed(0)
        batch = to_numpy_batch([space.sample() for _ in range(16)], space)
        expected = ModelCatalog.get_preprocessor_for_space(space).transform_batch(batch)
        got = graph_preprocessor(space)(tree.map_structure(tf.constant, batch))
        assert got.shape.as_list() == [16, expected.shape[1]]
        np.testing.assert_array_equal(got.numpy(), expected)
    # Boxes (passed through) and Atari frames (resized, also inside a Dict) keep the
    # policy's own input.
    assert graph_preprocessor(gym.spaces.Box(0.0, 1.0, (3,), np.float32)) is None
    assert graph_preprocessor(gym.spaces.Dict(
        {"frame": gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)})) is None
