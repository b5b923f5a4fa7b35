"""NoisyLayer: shapes, the paper's initialisation, factorised noise decided by the seed
alone, the means without a seed, gradients into sigma, config round trip, bad input."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.tf.layers import NoisyLayer
from tfrl.models.tf.layers.noisy_layer import _scaled

X = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
SEED = tf.constant([3, 7])


def built(sigma0=0.5, out_size=3, activation=None):
    keras.utils.set_random_seed(0)
    layer = NoisyLayer("q_out", out_size, sigma0, activation=activation)
    layer.build((None, X.shape[1]))
    return layer


def test_shapes_and_the_papers_initialisation():
    layer = built(sigma0=0.5)
    assert layer.name == "q_out"
    assert [tuple(w.shape) for w in layer.weights] == [(4, 3), (3,), (4, 3), (3,)]
    # p = 4 inputs: mu ~ U[-1/2, 1/2], sigma = sigma0 / sqrt(p) = 0.25 everywhere.
    for mu in (layer.mu_w, layer.mu_b):
        assert np.all(np.abs(mu.numpy()) <= 0.5) and np.std(mu.numpy()) > 0
    np.testing.assert_array_equal(layer.sigma_w.numpy(), np.full((4, 3), 0.25, np.float32))
    np.testing.assert_array_equal(layer.sigma_b.numpy(), np.full(3, 0.25, np.float32))
    assert tuple(layer(X, noise_seed=SEED).shape) == (5, 3)
    assert layer.compute_output_shape((None, 4)) == (None, 3)


def test_without_a_seed_it_is_the_dense_layer_of_the_means():
    layer = built(activation="relu")
    want = np.maximum(X @ layer.mu_w.numpy() + layer.mu_b.numpy(), 0.0)
    np.testing.assert_allclose(layer(X), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(layer(X), layer(X))


def test_noise_is_factorised_and_decided_by_the_seed():
    layer = built()
    eps_w, eps_b = (t.numpy() for t in layer.noise(4, SEED))
    # eps_w = f(eps_in) f(eps_out)^T (rank one), eps_b = f(eps_out).
    assert eps_w.shape == (4, 3) and eps_b.shape == (3,)
    assert np.linalg.matrix_rank(eps_w) == 1
    eps_in = eps_w[:, 0] / eps_b[0]
    np.testing.assert_allclose(eps_w, np.outer(eps_in, eps_b), rtol=1e-5, atol=1e-6)
    # The output is that of the noisy weights mu + sigma * eps.
    kernel = layer.mu_w.numpy() + 0.25 * eps_w
    bias = layer.mu_b.numpy() + 0.25 * eps_b
    np.testing.assert_allclose(layer(X, noise_seed=SEED), X @ kernel + bias, rtol=1e-5,
                               atol=1e-6)
    # Same seed: same noise (in a fresh layer too); another seed: other noise.
    np.testing.assert_array_equal(layer(X, noise_seed=SEED), built()(X, noise_seed=SEED))
    assert not np.allclose(layer(X, noise_seed=SEED), layer(X, noise_seed=SEED + 1))
    # sigma0 = 0: no noise at all.
    quiet = built(sigma0=0.0)
    np.testing.assert_allclose(quiet(X, noise_seed=SEED), quiet(X), rtol=1e-6)


def test_f_is_the_signed_square_root():
    np.testing.assert_allclose(_scaled(tf.constant([-4.0, 0.0, 2.25])), [-2.0, 0.0, 1.5])


def test_gradients_reach_sigma_only_through_the_noise():
    layer = built()
    with tf.GradientTape(persistent=True) as tape:
        noisy = tf.reduce_sum(layer(X, noise_seed=SEED))
        mean = tf.reduce_sum(layer(X))
    grads = tape.gradient(noisy, layer.trainable_weights)
    assert all(g is not None and np.abs(g.numpy()).max() > 0 for g in grads)
    sigma_grads = tape.gradient(mean, [layer.sigma_w, layer.sigma_b])
    assert sigma_grads == [None, None]


def test_config_round_trips():
    layer = built(sigma0=0.1, out_size=2, activation="tanh")
    clone = NoisyLayer.from_config(layer.get_config())
    assert (clone.name, clone.out_size, clone.sigma0, clone.activation_name) == (
        "q_out", 2, 0.1, "tanh")


@pytest.mark.parametrize("kwargs, match", [
    ({"out_size": 0}, r"out_size must be a positive int; received 0"),
    ({"out_size": 2.5}, r"out_size must be a positive int; received 2.5"),
    ({"sigma0": -0.1}, r"sigma0 must be >= 0; received -0.1"),
])
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoisyLayer("x", **{"out_size": 3, "sigma0": 0.5, **kwargs})
