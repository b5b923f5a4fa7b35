"""The off-policy actor-critic networks (shapes, separate twin weights, bounds, seeded
weights) and the target-network updates (hard copy, Polyak by hand, bad input)."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.tf.actor_critic_nets import (
    CategoricalActor, DeterministicActor, DiscreteQNetwork, QNetwork, SquashedGaussianActor,
    TwinQNetwork, call_frozen)
from tfrl.models.tf.tf_action_dist import MAX_LOG_NN_OUTPUT, Categorical, SquashedGaussian
from tfrl.models.tf.target_update import hard_update, soft_update

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
DISCRETE = gym.spaces.Discrete(4)


def batch(rows=5, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(rows, 3)).astype(np.float32),
            rng.uniform(-1, 1, size=(rows, 2)).astype(np.float32))


def test_q_network_shapes_and_dependence_on_the_action():
    obs, actions = batch()
    q = QNetwork(OBS, BOX, hiddens=[16, 8])
    out = q(obs, actions)
    assert out.shape == (5,) and out.dtype == tf.float32
    assert not np.allclose(out.numpy(), q(obs, actions + 0.5).numpy())
    # 2 hidden layers + the output: kernels and biases.
    assert [tuple(v.shape) for v in q.trainable_variables] == [
        (5, 16), (16,), (16, 8), (8,), (8, 1), (1,)]
    # Image-shaped observations are flattened.
    q_img = QNetwork(gym.spaces.Box(0, 255, (2, 2, 3), np.uint8), BOX, hiddens=[4])
    assert q_img(np.zeros((2, 2, 2, 3), np.uint8), actions[:2]).shape == (2,)


def test_discrete_q_network_and_categorical_actor_shapes():
    obs, _ = batch()
    assert DiscreteQNetwork(OBS, DISCRETE, hiddens=[8])(obs).shape == (5, 4)
    actor = CategoricalActor(OBS, DISCRETE, hiddens=[8])
    logits = actor(obs)
    assert logits.shape == (5, 4)
    dist = actor.distribution(logits)
    assert isinstance(dist, Categorical) and dist.sample().shape == (5,)


@pytest.mark.parametrize("action_space, shape", [(BOX, (5,)), (DISCRETE, (5, 4))])
def test_twin_q_nets_have_separate_weights(action_space, shape):
    keras.utils.set_random_seed(0)
    obs, actions = batch()
    twin = TwinQNetwork(OBS, action_space, hiddens=[8])
    q1, q2 = twin(obs, actions if action_space is BOX else None)
    assert q1.shape == shape and q2.shape == shape
    assert not np.allclose(q1.numpy(), q2.numpy())  # initialized independently
    ids1 = {id(v) for v in twin.q1.variables}
    assert ids1 and ids1.isdisjoint(id(v) for v in twin.q2.variables)
    assert len(twin.trainable_variables) == 2 * len(twin.q1.trainable_variables)
    paths = [v.path for v in twin.variables]
    assert len(set(paths)) == len(paths)  # e.g. q1_hidden_1/kernel, q2_hidden_1/kernel
    # A gradient step on q1's loss leaves q2 as it was.
    before = [v.numpy().copy() for v in twin.q2.variables]
    with tf.GradientTape() as tape:
        q1, _ = twin(obs, actions if action_space is BOX else None)
        loss = tf.reduce_mean(tf.square(q1))
    grads = tape.gradient(loss, twin.trainable_variables)
    assert all(g is None for g in grads[len(twin.q1.trainable_variables):])
    keras.optimizers.SGD(0.1).apply_gradients(
        (g, v) for g, v in zip(grads, twin.trainable_variables) if g is not None)
    for old, var in zip(before, twin.q2.variables):
        np.testing.assert_array_equal(old, var.numpy())


def test_weights_follow_the_seed():
    keras.utils.set_random_seed(7)
    a = TwinQNetwork(OBS, BOX, hiddens=[8])
    keras.utils.set_random_seed(7)
    b = TwinQNetwork(OBS, BOX, hiddens=[8])
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_deterministic_actor_stays_within_the_bounds():
    actor = DeterministicActor(OBS, BOX, hiddens=[8])
    obs, _ = batch(rows=200)
    actions = actor(obs * 100.0).numpy()  # saturating inputs
    assert actions.shape == (200, 2)
    assert np.all(actions >= BOX.low) and np.all(actions <= BOX.high)
    # A zero output layer maps to the middle of the bounds.
    for v in actor.mlp.out.variables:
        v.assign(tf.zeros_like(v))
    np.testing.assert_allclose(actor(obs).numpy(), np.tile([0.0, 0.5], (200, 1)), atol=1e-7)


def test_squashed_gaussian_actor_clips_the_log_std_and_samples_within_bounds():
    actor = SquashedGaussianActor(OBS, BOX, hiddens=[8])
    obs, _ = batch()
    dist_inputs = actor(obs)
    assert dist_inputs.shape == (5, 4)
    kernel, bias = actor.mlp.out.variables
    kernel.assign(tf.zeros_like(kernel))
    bias.assign([0.5, -0.5, 50.0, -50.0])  # means; log-stds far outside the range
    dist_inputs = actor(obs).numpy()
    np.testing.assert_allclose(dist_inputs[:, :2], np.tile([0.5, -0.5], (5, 1)))
    np.testing.assert_allclose(dist_inputs[:, 2:], np.tile([MAX_LOG_NN_OUTPUT, -5.0], (5, 1)))
    dist = actor.distribution(actor(obs))
    assert isinstance(dist, SquashedGaussian)
    tf.random.set_seed(0)
    sample = dist.sample().numpy()
    assert np.all(sample >= BOX.low) and np.all(sample <= BOX.high)
    assert dist.sampled_action_logp().shape == (5,)


@pytest.mark.parametrize("compiled", [False, True])
def test_call_frozen_equals_the_call_and_stops_the_weights_gradient(compiled):
    obs, actions = batch()
    twin = TwinQNetwork(OBS, BOX, hiddens=[8])
    act = tf.Variable(actions)

    def grads():
        with tf.GradientTape() as tape:
            q1, q2 = call_frozen(twin, obs, act)
            loss = tf.reduce_sum(q1 + q2)
        return q1, q2, tape.gradient(loss, twin.trainable_variables + [act])

    q1, q2, g = tf.function(grads)() if compiled else grads()
    want1, want2 = twin(obs, actions)
    np.testing.assert_allclose(q1, want1, rtol=1e-6)
    np.testing.assert_allclose(q2, want2, rtol=1e-6)
    assert all(x is None for x in g[:-1]) and np.abs(g[-1].numpy()).max() > 0


def test_hard_update_makes_the_target_equal_the_online_net():
    keras.utils.set_random_seed(1)
    online = TwinQNetwork(OBS, BOX, hiddens=[8], name="twin_q")
    target = TwinQNetwork(OBS, BOX, hiddens=[8], name="target_twin_q")
    obs, actions = batch()
    assert not np.allclose(online(obs, actions)[0].numpy(), target(obs, actions)[0].numpy())
    hard_update(target.variables, online.variables)
    for t, o in zip(target.variables, online.variables):
        np.testing.assert_array_equal(t.numpy(), o.numpy())
        assert t is not o
    for a, b in zip(online(obs, actions), target(obs, actions)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_soft_update_by_hand_eagerly_and_compiled():
    target = [tf.Variable([0.0, 10.0]), tf.Variable([[4.0]])]
    online = [tf.Variable([1.0, 20.0]), tf.Variable([[0.0]])]
    soft_update(target, online, tau=0.25)
    np.testing.assert_allclose(target[0].numpy(), [0.25, 12.5])
    np.testing.assert_allclose(target[1].numpy(), [[3.0]])
    soft_update(target, online, tau=0.0)  # no change
    np.testing.assert_allclose(target[0].numpy(), [0.25, 12.5])

    @tf.function
    def update(tau):
        soft_update(target, online, tau)

    update(tf.constant(0.5))
    np.testing.assert_allclose(target[0].numpy(), [0.625, 16.25])
    np.testing.assert_allclose(target[1].numpy(), [[1.5]])


@pytest.mark.parametrize("call, match", [
    (lambda: QNetwork(OBS, DISCRETE), r"QNetwork needs a Box action space; received "
     r"Discrete\(4\)\. For Discrete actions use DiscreteQNetwork/CategoricalActor \(SAC's "
     r"discrete variant\) or DQN"),
    (lambda: DeterministicActor(OBS, DISCRETE), r"DeterministicActor needs a Box action "
     r"space; received Discrete\(4\)\. For Discrete actions use .*SAC's discrete variant"),
    (lambda: SquashedGaussianActor(OBS, gym.spaces.MultiBinary(2)),
     r"SquashedGaussianActor needs a Box action space; received MultiBinary\(2\)\. Give "
     r"the env a Box action space .*For Discrete actions use"),
    (lambda: DeterministicActor(OBS, gym.spaces.Box(-np.inf, np.inf, (2,))),
     r"DeterministicActor squashes actions into the action space's bounds, which must be "
     r"finite"),
    (lambda: DiscreteQNetwork(OBS, BOX), r"DiscreteQNetwork needs a Discrete action space; "
     r"received Box.*For Box actions use QNetwork/SquashedGaussianActor \(SAC\) or "
     r"DeterministicActor"),
    (lambda: soft_update([tf.Variable(1.0)], [], 0.5), r"soft_update\(\): the target and "
     r"online networks must have as many variables; received 1 and 0"),
    (lambda: soft_update([tf.Variable([1.0])], [tf.Variable([1.0, 2.0])], 0.5),
     r"soft_update\(\): target variable .* \(float32 \(1,\)\) does not match online "
     r"variable .* \(float32 \(2,\)\)"),
    (lambda: soft_update([tf.Variable(1.0)], [tf.Variable(2.0)], 1.5),
     r"soft_update\(\): tau must be in \[0, 1\]; received 1.5"),
    (lambda: hard_update([tf.Variable(1.0)], [tf.Variable(2.0, dtype=tf.float64)]),
     r"soft_update\(\): target variable .* \(float32 \(\)\) does not match online "
     r"variable .* \(float64 \(\)\)"),
])
def test_bad_input_raises_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
