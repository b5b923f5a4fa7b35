"""The GTrXL attention model (`use_attention=True`, tfrl.models.tf.attention_net): shapes,
memory shifting, padded steps, sequence-vs-step equivalence, GRU gate init, errors."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.attention_net import (GRUGate, GTrXLWrapper, RelativeMultiHeadAttention,
                                          shift_memory)

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)
SMALL = {"use_attention": True, "attention_num_transformer_units": 2, "attention_dim": 8,
         "attention_num_heads": 2, "attention_head_dim": 4, "attention_memory_inference": 4,
         "attention_memory_training": 4, "attention_position_wise_mlp_dim": 8}


def _model(**overrides):
    keras.utils.set_random_seed(0)
    return ModelCatalog.get_model(OBS, ACT, 2, {**SMALL, **overrides})


def _obs(batch, time, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (batch, time, 3)).astype(np.float32)


def test_catalog_builds_gtrxl_with_shapes():
    model = _model()
    assert isinstance(model, GTrXLWrapper) and model.is_recurrent
    state = model.get_initial_state(3)
    assert [s.shape for s in state] == [(3, 4, 8), (3, 4, 8)]
    logits, value, state_out = model((_obs(3, 5), state, np.array([5, 2, 1], np.int32)))
    assert tuple(logits.shape) == (3, 5, 2) and tuple(value.shape) == (3, 5)
    assert [tuple(s.shape) for s in state_out] == [(3, 4, 8), (3, 4, 8)]


def test_defaults_come_from_model_defaults():
    model = ModelCatalog.get_model(OBS, ACT, 2, {"use_attention": True})
    # RLlib's defaults: 1 unit, dim 64, memory 50.
    assert [s.shape for s in model.get_initial_state(1)] == [(1, 50, 64)]
    gate = model.units[0].gate1
    np.testing.assert_array_equal(gate.bias_z.numpy(), np.full(64, 2.0, np.float32))


def test_shift_memory_keeps_the_rows_ending_at_the_last_valid_step():
    memory = np.arange(1, 4, dtype=np.float32).reshape(1, 3, 1).repeat(2, 0)  # rows 1,2,3
    inputs = np.array([[10, 20, 30]], np.float32).reshape(1, 3, 1).repeat(2, 0)
    out = shift_memory(tf.constant(memory), tf.constant(inputs), tf.constant([2, 0]))
    np.testing.assert_array_equal(out.numpy()[..., 0], [[3, 10, 20], [1, 2, 3]])


def test_padded_steps_change_nothing():
    model = _model()
    state = [np.random.default_rng(1).normal(size=s.shape).astype(np.float32)
             for s in model.get_initial_state(2)]
    seq_lens = np.array([3, 5], np.int32)
    obs = _obs(2, 5)
    other = obs.copy()
    other[0, 3:] = 7.0  # padding of row 0 changed
    a = model((obs, state, seq_lens))
    b = model((other, state, seq_lens))
    np.testing.assert_array_equal(a[0].numpy()[0, :3], b[0].numpy()[0, :3])
    np.testing.assert_array_equal(a[1].numpy()[0, :3], b[1].numpy()[0, :3])
    for sa, sb in zip(a[2], b[2]):
        np.testing.assert_array_equal(sa.numpy(), sb.numpy())
    # Valid outputs never see later steps (causal): step 0 is the same with T=1.
    one = model((obs[:, :1], state, np.ones(2, np.int32)))
    np.testing.assert_allclose(one[0].numpy()[:, 0], a[0].numpy()[:, 0], rtol=1e-5, atol=1e-6)


def test_a_sequence_in_one_call_equals_one_step_at_a_time():
    """Training on a sequence reproduces sampling step by step with the memory carried
    (each step sees exactly the M steps before it), also past the memory's length."""
    model = _model()
    obs = _obs(2, 7, seed=3)
    seq_lens = np.array([7, 7], np.int32)
    full_logits, full_value, full_state = model((obs, model.get_initial_state(2), seq_lens))
    state = model.get_initial_state(2)
    for t in range(7):
        logits, value, state = model((obs[:, t:t + 1], state, np.ones(2, np.int32)))
        np.testing.assert_allclose(logits.numpy()[:, 0], full_logits.numpy()[:, t],
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(value.numpy()[:, 0], full_value.numpy()[:, t],
                                   rtol=1e-5, atol=1e-5)
    for s, f in zip(state, full_state):
        np.testing.assert_allclose(s.numpy(), f.numpy(), rtol=1e-5, atol=1e-5)


def test_memory_matters():
    model = _model()
    obs = _obs(1, 1)
    zeros = model.get_initial_state(1)
    filled = [np.random.default_rng(2).normal(size=s.shape).astype(np.float32) * 3
              for s in zeros]
    a = model((obs, zeros, np.ones(1, np.int32)))[0].numpy()
    b = model((obs, filled, np.ones(1, np.int32)))[0].numpy()
    assert np.abs(a - b).max() > 1e-4


def test_gru_gate_starts_near_identity_with_its_bias():
    keras.utils.set_random_seed(0)
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 6)), tf.float32)
    y = tf.constant(np.random.default_rng(1).normal(size=(4, 6)), tf.float32)
    closed, open_ = GRUGate(init_bias=20.0), GRUGate(init_bias=0.0)
    np.testing.assert_allclose(closed(x, y).numpy(), x.numpy(), atol=1e-6)
    assert np.abs(open_(x, y).numpy() - x.numpy()).max() > 0.1
    np.testing.assert_array_equal(closed.bias_z.numpy(), np.full(6, 20.0, np.float32))


def test_attention_is_causal_and_windowed():
    keras.utils.set_random_seed(0)
    layer = RelativeMultiHeadAttention(6, num_heads=2, head_dim=3)
    rng = np.random.default_rng(0)
    memory = tf.constant(rng.normal(size=(1, 2, 6)), tf.float32)
    x = rng.normal(size=(1, 4, 6)).astype(np.float32)
    base = layer(tf.constant(x), memory).numpy()
    later = x.copy()
    later[0, 3] += 5.0  # a later step changes no earlier output
    np.testing.assert_array_equal(layer(tf.constant(later), memory).numpy()[0, :3], base[0, :3])
    # Window M=2: step 2 sees steps 0, 1 and itself, not the memory; steps 0, 1 see it.
    other = layer(tf.constant(x), tf.constant(rng.normal(size=(1, 2, 6)), tf.float32)).numpy()
    np.testing.assert_array_equal(other[0, 2:], base[0, 2:])
    assert np.abs(other[0, :2] - base[0, :2]).max() > 1e-4


@pytest.mark.parametrize("overrides, match", [
    ({"attention_memory_training": 8}, "attention_memory_training"),
    ({"attention_use_n_prev_actions": 1}, "attention_use_n_prev_actions"),
    ({"use_lstm": True}, "use_lstm"),
])
def test_bad_configs_get_clear_errors(overrides, match):
    with pytest.raises(ValueError, match=match):
        _model(**overrides)
