"""The GTrXL attention model (`use_attention=True`, tfrl.models.tf.attention_net): shapes,
the `fcnet_hiddens` encoder, memory shifting, padded steps, sequence-vs-step equivalence,
GRU gate init, the previous n actions/rewards (model, sampler, learner, export), errors."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.attention_net import (GRUGate, GTrXLWrapper, RelativeMultiHeadAttention,
                                          prev_window, shift_memory)

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)
SMALL = {"use_attention": True, "fcnet_hiddens": [6], "attention_num_transformer_units": 2,
         "attention_dim": 8,
         "attention_num_heads": 2, "attention_head_dim": 4, "attention_memory_inference": 4,
         "attention_memory_training": 4, "attention_position_wise_mlp_dim": 8}


def _model(action_space=ACT, **overrides):
    keras.utils.set_random_seed(0)
    return ModelCatalog.get_model(OBS, action_space, 2, {**SMALL, **overrides})


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
    # RLlib's defaults: 1 unit, dim 64, memory 50, behind the default [256, 256] tanh stack.
    assert [s.shape for s in model.get_initial_state(1)] == [(1, 50, 64)]
    assert [(layer.units, layer.activation.__name__) for layer in model.encoder[1:]] == [
        (256, "tanh"), (256, "tanh")]
    assert tuple(model.project.kernel.shape) == (256, 64)
    gate = model.units[0].gate1
    np.testing.assert_array_equal(gate.bias_z.numpy(), np.full(64, 2.0, np.float32))


def test_observations_go_through_the_fcnet_stack_first():
    """As RLlib's attention wrapper around the default FCNet: fcnet_hiddens (with
    fcnet_activation) -> linear projection to attention_dim -> the units."""
    model = _model(fcnet_hiddens=[5, 7], fcnet_activation="relu")
    assert [(layer.units, layer.activation.__name__) for layer in model.encoder[1:]] == [
        (5, "relu"), (7, "relu")]
    assert tuple(model.project.kernel.shape) == (7, 8)
    state, seq_lens = model.get_initial_state(2), np.array([3, 3], np.int32)
    # The observation reaches the units only through the stack: with the first layer's
    # weights zeroed, its ReLU outputs 0 and every observation gives the same outputs.
    first = model.encoder[1]
    first.set_weights([np.zeros_like(w) for w in first.get_weights()])
    a = model((_obs(2, 3, seed=1), state, seq_lens))[0].numpy()
    np.testing.assert_allclose(model((_obs(2, 3, seed=2), state, seq_lens))[0].numpy(), a,
                               atol=1e-6)


def test_an_empty_fcnet_stack_feeds_the_flat_observation():
    model = _model(fcnet_hiddens=[])
    assert [type(layer).__name__ for layer in model.encoder] == ["Flatten"]
    assert tuple(model.project.kernel.shape) == (3, 8)  # RLlib: the obs size


def test_image_observations_go_through_the_conv_stack():
    keras.utils.set_random_seed(0)
    image = gym.spaces.Box(0.0, 1.0, (6, 6, 2), np.float32)
    model = ModelCatalog.get_model(image, ACT, 2, {**SMALL, "conv_filters": [[4, 3, 2]]})
    assert [type(layer).__name__ for layer in model.encoder] == ["Conv2D", "Flatten"]
    assert tuple(model.project.kernel.shape) == (2 * 2 * 4, 8)  # the flat conv features


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
    ({"attention_use_n_prev_actions": -1},
     r"attention_use_n_prev_actions must be a non-negative int .* Received: "
     r"attention_use_n_prev_actions=-1"),
    ({"attention_use_n_prev_rewards": 1.5}, r"Received: attention_use_n_prev_rewards=1.5"),
    ({"attention_use_n_prev_actions": True}, r"Received: attention_use_n_prev_actions=True"),
    ({"use_lstm": True}, "use_lstm"),
])
def test_bad_configs_get_clear_errors(overrides, match):
    with pytest.raises(ValueError, match=match):
        _model(**overrides)


def test_prev_inputs_errors():
    with pytest.raises(ValueError, match=r"attention_use_n_prev_actions > 0 supports Discrete, "
                                         r"MultiDiscrete and Box .*Received: Tuple"):
        _model(gym.spaces.Tuple([ACT, ACT]), attention_use_n_prev_actions=1)
    model = _model(attention_use_n_prev_actions=2)
    state, seq_lens = model.get_initial_state(1), np.ones(1, np.int32)
    with pytest.raises(ValueError, match=r"built with attention_use_n_prev_actions > 0 and "
                                         r"needs prev_actions\. Received: prev_actions=None"):
        model((_obs(1, 1), state, seq_lens))
    with pytest.raises(ValueError, match=r"takes 3 state tensors .*received 2"):
        model((_obs(1, 1), state[:2], seq_lens), prev_actions=np.zeros((1, 1), np.int64))


# ------------------------------------------- attention_use_n_prev_actions / _rewards


def test_prev_window_takes_the_last_n_values_and_carries_n_minus_1():
    values = tf.constant([[[10.0], [20.0], [30.0]]])  # [B=1, T=3, 1]: each step's previous
    memory = tf.constant([[[1.0], [2.0]]])  # the 2 values before the sequence
    window, memory_out = prev_window(values, memory, tf.constant([2]))
    # Oldest first: step t sees [values[t-2], values[t-1], values[t]].
    np.testing.assert_array_equal(np.stack([w.numpy()[0, :, 0] for w in window]),
                                  [[1, 2, 10], [2, 10, 20], [10, 20, 30]])
    # Two valid steps: the carried window ends at step 1 (the padded step is left out).
    np.testing.assert_array_equal(memory_out.numpy()[0, :, 0], [10, 20])


PREV = {"attention_use_n_prev_actions": 3, "attention_use_n_prev_rewards": 2,
        "attention_num_transformer_units": 1}


def test_prev_actions_and_rewards_extend_the_attention_input():
    actions = gym.spaces.Discrete(3)
    # The GRU gates closed: the units pass their input through (no memory).
    closed = _model(actions, attention_init_gru_gate_bias=50.0, **PREV)
    # RLlib's wrapper: [fcnet features (6), 3 one-hot actions (3 x 3), 2 rewards].
    assert tuple(closed.project.kernel.shape) == (6 + 3 * 3 + 2, 8)
    # The windows' older entries (2 actions, 1 reward) are carried after the memories.
    assert [s.shape for s in closed.get_initial_state(2)][1:] == [(2, 2, 1), (2, 1, 1)]
    # Step t sees prev_actions[t-2..t] and prev_rewards[t-1..t] (RLlib's "-3:-1" and
    # "-2:-1" views): a change at step 2 reaches exactly those steps.
    rng = np.random.default_rng(0)
    obs, seq_lens = _obs(2, 6), np.full(2, 6, np.int32)
    prev_a = rng.integers(0, 3, (2, 6))
    prev_r = rng.normal(size=(2, 6)).astype(np.float32)
    state = closed.get_initial_state(2)

    def logits(prev_actions, prev_rewards):
        return closed((obs, state, seq_lens), prev_actions=prev_actions,
                      prev_rewards=prev_rewards)[0].numpy()

    base = logits(prev_a, prev_r)

    def changed_steps(out):
        return np.flatnonzero(np.abs(out - base).max(axis=(0, 2)) > 1e-6).tolist()

    other_a = prev_a.copy()
    other_a[:, 2] = (other_a[:, 2] + 1) % 3
    assert changed_steps(logits(other_a, prev_r)) == [2, 3, 4]
    other_r = prev_r.copy()
    other_r[:, 2] += 1.0
    assert changed_steps(logits(prev_a, other_r)) == [2, 3]


@pytest.mark.parametrize("space", [gym.spaces.Discrete(3), gym.spaces.MultiDiscrete([2, 3]),
                                   gym.spaces.Box(-1.0, 1.0, (2,), np.float32)],
                         ids=["discrete", "multidiscrete", "box"])
def test_prev_inputs_in_one_call_equal_one_step_at_a_time(space):
    """The windows carried in the state reproduce a sequence step by step (sampling)."""
    model = _model(space, **PREV)
    space.seed(0)
    obs, steps = _obs(2, 5, seed=4), 5
    prev_a = np.stack([np.stack([space.sample() for _ in range(steps)]) for _ in range(2)])
    prev_r = np.random.default_rng(1).normal(size=(2, steps)).astype(np.float32)
    full = model((obs, model.get_initial_state(2), np.full(2, steps, np.int32)),
                 prev_actions=prev_a, prev_rewards=prev_r)
    state = model.get_initial_state(2)
    for t in range(steps):
        logits, value, state = model((obs[:, t:t + 1], state, np.ones(2, np.int32)),
                                     prev_actions=prev_a[:, t:t + 1],
                                     prev_rewards=prev_r[:, t:t + 1])
        np.testing.assert_allclose(logits.numpy()[:, 0], full[0].numpy()[:, t], atol=1e-5)
        np.testing.assert_allclose(value.numpy()[:, 0], full[1].numpy()[:, t], atol=1e-5)
    for s, f in zip(state, full[2]):
        np.testing.assert_allclose(s.numpy(), f.numpy(), atol=1e-5)
    # The carried action window holds the raw last two actions (flattened, as floats).
    np.testing.assert_array_equal(
        state[1].numpy(), prev_a[:, -2:].reshape(2, 2, -1).astype(np.float32))


@pytest.mark.slow
def test_prev_inputs_flow_through_sampling_learning_and_export(tmp_path):
    """PPO samples the prev_actions / prev_rewards columns and the windows' state (RLlib's
    "-n:-1" views: zeros before an episode's start), learns on them, and its SavedModel
    (windows in, windows out) acts like the live policy step by step."""
    from tfrl.algorithms.ppo import PPOConfig

    config = (PPOConfig()
              .environment("tfrl.examples.envs:RepeatAfterMe-v0",
                           env_config={"delay": 1, "num_symbols": 3, "episode_len": 6})
              .rollouts(num_rollout_workers=0, num_envs_per_worker=2,
                        rollout_fragment_length=8)
              .training(train_batch_size=16, sgd_minibatch_size=8, num_sgd_iter=1,
                        model={**SMALL, **PREV, "max_seq_len": 4})
              .debugging(seed=0))
    algo = config.build()
    try:
        batch = algo.workers.local_worker().sample()  # postprocessed (advantages)
        policy = algo.get_policy()
        before = policy.get_weights()
        stats = policy.learn_on_batch(batch)["learner_stats"]
        policy.export_model(str(tmp_path / "gtrxl"))
    finally:
        algo.stop()
    for eps_id in np.unique(batch["eps_id"]):
        rows = batch["eps_id"] == eps_id
        actions, rewards = batch["actions"][rows], batch["rewards"][rows]
        before = np.concatenate([np.zeros(3), actions])  # a_{t-3} is before[t]
        r_before = np.concatenate([np.zeros(2), rewards])
        for t in range(int(rows.sum())):
            assert batch["prev_actions"][rows][t] == before[t + 2]
            np.testing.assert_array_equal(batch["state_in_1"][rows][t, :, 0], before[t:t + 2])
            assert batch["prev_rewards"][rows][t] == r_before[t + 1]
            assert batch["state_in_2"][rows][t, 0, 0] == r_before[t]
    assert np.isfinite(stats["total_loss"])
    assert max(np.abs(a - b).max() for a, b in zip(before, policy.get_weights())) > 0
    loaded = tf.saved_model.load(str(tmp_path / "gtrxl"))
    signature = loaded.signatures["deterministic_action"]
    assert sorted(signature.structured_input_signature[1]) == [
        "obs", "prev_actions", "prev_rewards", "state_in_0", "state_in_1", "state_in_2"]
    rng = np.random.default_rng(0)
    live = exported = [np.repeat(s[None], 2, axis=0) for s in policy.get_initial_state()]
    prev_a, prev_r = np.zeros(2, np.int64), np.zeros(2, np.float32)
    for t in range(4):
        symbols = rng.integers(0, 3, 2)  # the SavedModel takes the env's observations
        actions, live, _ = policy.compute_actions(
            np.eye(3, dtype=np.float32)[symbols], live, explore=False,
            prev_action_batch=prev_a, prev_reward_batch=prev_r)
        out = signature(obs=tf.constant(symbols), prev_actions=tf.constant(prev_a),
                        prev_rewards=tf.constant(prev_r), **{f"state_in_{i}": tf.constant(s) for i, s in enumerate(exported)})
        exported = [out[f"state_out_{i}"].numpy() for i in range(3)]
        np.testing.assert_array_equal(out["actions"].numpy(), actions, err_msg=f"step {t}")
        for a, b in zip(exported, live):
            np.testing.assert_allclose(a, b, atol=1e-6, err_msg=f"step {t}")
        prev_a, prev_r = actions, rng.normal(size=2).astype(np.float32)
