"""RLlib's tests of the TF action distributions, ported to tfrl.

Ports `rllib/models/tests/test_distributions.py` of ray-project/ray at commit
33a00c346893cd67748c5ede6c73ff43b24365be: `test_categorical`, `test_multi_categorical`,
`test_squashed_gaussian`, `test_diag_gaussian`, `test_beta`, `test_gumbel_softmax`,
`test_multi_action_distribution` (the TF/eager branches; torch, JAX and TF1 sessions
dropped). RLlib seeds numpy once per class (42 + 1); here every test seeds numpy, TF
and its spaces. `scipy.stats.norm.pdf` and `beta.pdf` are reproduced in numpy below.
"""

import math
from functools import partial

import numpy as np
import pytest
import tensorflow as tf
import tree
from compat_helpers import check
from gymnasium.spaces import Box, Dict, Tuple

from tfrl.models.tf.tf_action_dist import (
    Beta,
    Categorical,
    DiagGaussian,
    GumbelSoftmax,
    MultiActionDistribution,
    MultiCategorical,
    SquashedGaussian,
)
from tfrl.utils.numpy import (
    LARGE_INTEGER,
    MAX_LOG_NN_OUTPUT,
    MIN_LOG_NN_OUTPUT,
    SMALL_NUMBER,
    softmax,
)

RLLIB_PATH = "rllib/models/tests/test_distributions.py"
RLLIB_COMMIT = "33a00c346893cd67748c5ede6c73ff43b24365be"


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(42 + 1)
    tf.random.set_seed(42 + 1)


def _norm_pdf(x, loc, scale):
    """scipy.stats.norm.pdf (float64)."""
    x, loc, scale = (np.asarray(v, np.float64) for v in (x, loc, scale))
    return np.exp(-0.5 * ((x - loc) / scale) ** 2) / (np.sqrt(2.0 * np.pi) * scale)


def _beta_pdf(x, a, b):
    """scipy.stats.beta.pdf (float64)."""
    x, a, b = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(a, np.float64),
                                  np.asarray(b, np.float64))
    lgamma = np.vectorize(math.lgamma)
    log_b = lgamma(a) + lgamma(b) - lgamma(a + b)
    return np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - log_b)


def _stability_test(distribution_cls, network_output_shape, bounds=None, extra_kwargs=None):
    """RLlib's `_stability_test`: extreme NN outputs must give finite samples and logps."""
    extreme_values = [0.0, float(LARGE_INTEGER), -float(LARGE_INTEGER), 1.1e-34, 1.1e34,
                      -1.1e-34, -1.1e34, SMALL_NUMBER, -SMALL_NUMBER]
    inputs = np.zeros(shape=network_output_shape, dtype=np.float32)
    for batch_item in range(network_output_shape[0]):
        for num in range(len(inputs[batch_item]) // 2):
            inputs[batch_item][num] = np.random.choice(extreme_values)
        else:
            # As RLlib's helper: the loop's `else` sets the last of the first half to the
            # log of a number >= 1.
            inputs[batch_item][num] = np.log(max(1, np.random.choice(extreme_values)))

    dist = distribution_cls(inputs, {}, **(extra_kwargs or {}))
    for _ in range(100):
        sample = dist.sample()
        sample_check = sample.numpy()
        assert not np.any(np.isnan(sample_check))
        assert np.all(np.isfinite(sample_check))
        if bounds:
            assert np.min(sample_check) >= bounds[0]
            assert np.max(sample_check) <= bounds[1]
            # Make sure the bounds are actually sampled (integer bounds).
            if isinstance(bounds[0], int):
                assert isinstance(bounds[1], int)
                assert bounds[0] in sample_check
                assert bounds[1] in sample_check
        logp = dist.logp(sample)
        logp_check = logp.numpy()
        assert not np.any(np.isnan(logp_check))
        assert np.all(np.isfinite(logp_check))


def test_categorical():
    batch_size = 10000
    num_categories = 4
    inputs_space = Box(-1.0, 2.0, shape=(batch_size, num_categories), dtype=np.float32)
    inputs_space.seed(42)
    values_space = Box(0, num_categories - 1, shape=(batch_size,), dtype=np.int32)
    values_space.seed(42)

    inputs = inputs_space.sample()
    categorical = Categorical(inputs, {})

    _stability_test(Categorical, inputs_space.shape, bounds=(0, num_categories - 1))

    # Deterministic: always the max-likelihood category.
    expected = np.transpose(np.argmax(inputs, axis=-1))
    out = categorical.deterministic_sample()
    check(out, expected)

    # Stochastic: roughly the mean.
    out = categorical.sample()
    check(tf.reduce_mean(out), 1.0, decimals=0)

    # Log-likelihoods.
    probs = softmax(inputs)
    values = values_space.sample()
    out = categorical.logp(values)
    expected = []
    for i in range(batch_size):
        expected.append(np.sum(np.log(np.array(probs[i][values[i]]))))
    check(out, expected, decimals=4)

    # Entropy.
    out = categorical.entropy()
    expected_entropy = -np.sum(probs * np.log(probs), -1)
    check(out, expected_entropy)


def test_multi_categorical():
    batch_size = 100
    num_categories = 3
    num_sub_distributions = 5
    inputs_space = Box(-1.0, 2.0, shape=(batch_size, num_sub_distributions * num_categories))
    inputs_space.seed(42)
    values_space = Box(0, num_categories - 1, shape=(num_sub_distributions, batch_size),
                       dtype=np.int32)
    values_space.seed(42)

    inputs = inputs_space.sample()
    input_lengths = [num_categories] * num_sub_distributions
    inputs_split = np.split(inputs, num_sub_distributions, axis=1)

    multi_categorical = MultiCategorical(inputs, None, input_lengths)

    _stability_test(MultiCategorical, inputs_space.shape, bounds=(0, num_categories - 1),
                    extra_kwargs={"input_lens": input_lengths})

    expected = np.transpose(np.argmax(inputs_split, axis=-1))
    out = multi_categorical.deterministic_sample()
    check(out, expected)

    out = multi_categorical.sample()
    check(tf.reduce_mean(out), 1.0, decimals=0)

    # Log-likelihoods: the values come one array per sub-distribution, [5, 100].
    probs = softmax(inputs_split)
    values = values_space.sample()
    out = multi_categorical.logp(values)
    expected = []
    for i in range(batch_size):
        expected.append(np.sum(np.log(np.array(
            [probs[j][i][values[j][i]] for j in range(num_sub_distributions)]))))
    check(out, expected, decimals=4)

    out = multi_categorical.entropy()
    expected_entropy = -np.sum(np.sum(probs * np.log(probs), 0), -1)
    check(out, expected_entropy)


def test_squashed_gaussian():
    input_space = Box(-2.0, 2.0, shape=(2000, 10))
    input_space.seed(42)
    low, high = -2.0, 1.0

    _stability_test(SquashedGaussian, input_space.shape, bounds=(low, high))

    # Deterministic: the squashed mean.
    inputs = input_space.sample()
    means, _ = np.split(inputs, 2, axis=-1)
    squashed_distribution = SquashedGaussian(inputs, {}, low=low, high=high)
    expected = ((np.tanh(means) + 1.0) / 2.0) * (high - low) + low
    out = squashed_distribution.deterministic_sample()
    check(out, expected)

    # Stochastic: within the bounds, roughly the mean.
    inputs = input_space.sample()
    means, log_stds = np.split(inputs, 2, axis=-1)
    squashed_distribution = SquashedGaussian(inputs, {}, low=low, high=high)
    expected = ((np.tanh(means) + 1.0) / 2.0) * (high - low) + low
    values = squashed_distribution.sample().numpy()
    assert np.max(values) <= high
    assert np.min(values) >= low
    check(np.mean(values), expected.mean(), decimals=1)

    # Log-likelihoods of its own samples.
    sampled_action_logp = squashed_distribution.logp(values).numpy()
    stds = np.exp(np.clip(log_stds, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT))
    normed_values = (values - low) / (high - low) * 2.0 - 1.0
    save_normed_values = np.clip(normed_values, -1.0 + SMALL_NUMBER, 1.0 - SMALL_NUMBER)
    unsquashed_values = np.arctanh(save_normed_values)
    log_prob_unsquashed = np.sum(np.log(_norm_pdf(unsquashed_values, means, stds)), -1)
    log_prob = log_prob_unsquashed - np.sum(np.log(1 - np.tanh(unsquashed_values) ** 2),
                                            axis=-1)
    check(np.sum(sampled_action_logp), np.sum(log_prob), rtol=0.05)

    # NN output.
    means = np.array([[0.1, 0.2, 0.3, 0.4, 50.0], [-0.1, -0.2, -0.3, -0.4, -1.0]])
    log_stds = np.array([[0.8, -0.2, 0.3, -1.0, 2.0], [0.7, -0.3, 0.4, -0.9, 2.0]])
    squashed_distribution = SquashedGaussian(
        inputs=np.concatenate([means, log_stds], axis=-1), model={}, low=low, high=high)
    stds = np.exp(log_stds)
    values = np.array([[0.9, 0.2, 0.4, -0.1, -1.05], [-0.9, -0.2, 0.4, -0.1, -1.05]])
    unsquashed_values = np.arctanh((values - low) / (high - low) * 2.0 - 1.0)
    log_prob_unsquashed = np.sum(np.log(_norm_pdf(unsquashed_values, means, stds)), -1)
    log_prob = log_prob_unsquashed - np.sum(np.log(1 - np.tanh(unsquashed_values) ** 2),
                                            axis=-1)
    outs = squashed_distribution.logp(values)
    check(outs, log_prob, decimals=4)


def test_diag_gaussian():
    input_space = Box(-2.0, 1.0, shape=(2000, 10))
    input_space.seed(42)

    _stability_test(DiagGaussian, input_space.shape)

    inputs = input_space.sample()
    means, _ = np.split(inputs, 2, axis=-1)
    diag_distribution = DiagGaussian(inputs, {})
    expected = means
    out = diag_distribution.deterministic_sample()
    check(out, expected)

    inputs = input_space.sample()
    means, log_stds = np.split(inputs, 2, axis=-1)
    diag_distribution = DiagGaussian(inputs, {})
    expected = means
    values = diag_distribution.sample().numpy()
    check(np.mean(values), expected.mean(), decimals=1)

    sampled_action_logp = diag_distribution.logp(values).numpy()
    assert np.all(np.isfinite(sampled_action_logp))  # RLlib computes it without a check

    # NN output.
    means = np.array([[0.1, 0.2, 0.3, 0.4, 50.0], [-0.1, -0.2, -0.3, -0.4, -1.0]],
                     dtype=np.float32)
    log_stds = np.array([[0.8, -0.2, 0.3, -1.0, 2.0], [0.7, -0.3, 0.4, -0.9, 2.0]],
                        dtype=np.float32)
    diag_distribution = DiagGaussian(inputs=np.concatenate([means, log_stds], axis=-1),
                                     model={})
    stds = np.exp(log_stds)
    values = np.array([[0.9, 0.2, 0.4, -0.1, -1.05], [-0.9, -0.2, 0.4, -0.1, -1.05]])
    log_prob = np.sum(np.log(_norm_pdf(values, means, stds)), -1)
    outs = diag_distribution.logp(values)
    check(outs, log_prob, decimals=4)


def test_beta():
    input_space = Box(-2.0, 1.0, shape=(2000, 10))
    input_space.seed(42)
    low, high = -1.0, 2.0
    plain_beta_value_space = Box(0.0, 1.0, shape=(2000, 5))
    plain_beta_value_space.seed(42)

    inputs = input_space.sample()
    beta_distribution = Beta(inputs, {}, low=low, high=high)
    inputs = beta_distribution.inputs.numpy()
    alpha, beta_ = np.split(inputs, 2, axis=-1)

    # Deterministic: the mean, 1 / [1 + (beta / alpha)], scaled.
    expected = (1.0 / (1.0 + beta_ / alpha)) * (high - low) + low
    out = beta_distribution.deterministic_sample()
    check(out, expected, rtol=0.01)

    values = beta_distribution.sample().numpy()
    assert np.max(values) <= high
    assert np.min(values) >= low
    check(np.mean(values), expected.mean(), decimals=1)

    # Log-likelihoods (against scipy's beta.pdf).
    inputs = input_space.sample()
    beta_distribution = Beta(inputs, {}, low=low, high=high)
    inputs = beta_distribution.inputs.numpy()
    alpha, beta_ = np.split(inputs, 2, axis=-1)
    values = plain_beta_value_space.sample()
    values_scaled = values * (high - low) + low
    out = beta_distribution.logp(values_scaled)
    check(out, np.sum(np.log(_beta_pdf(values, alpha, beta_)), -1), rtol=0.01)


def test_gumbel_softmax():
    batch_size = 1000
    num_categories = 5
    input_space = Box(-1.0, 1.0, shape=(batch_size, num_categories))
    input_space.seed(42)

    # Deterministic: the softmax probabilities.
    inputs = input_space.sample()
    gumbel_softmax = GumbelSoftmax(inputs, {}, temperature=1.0)
    expected = softmax(inputs)
    out = gumbel_softmax.deterministic_sample()
    check(out, expected)

    # Stochastic: mostly the max-likelihood (argmax) categories.
    inputs = input_space.sample()
    gumbel_softmax = GumbelSoftmax(inputs, {}, temperature=1.0)
    expected_mean = np.mean(np.argmax(inputs, -1)).astype(np.float32)
    outs = gumbel_softmax.sample()
    check(np.mean(np.argmax(outs, -1)), expected_mean, rtol=0.08)


def test_multi_action_distribution():
    batch_size = 1000
    input_space = Tuple([
        Box(-10.0, 10.0, shape=(batch_size, 4)),
        Box(-2.0, 2.0, shape=(batch_size, 6)),
        Dict({"a": Box(-1.0, 1.0, shape=(batch_size, 4))}),
    ])
    input_space.seed(42)
    std_space = Box(-0.05, 0.05, shape=(batch_size, 3))
    std_space.seed(42)

    low, high = -1.0, 1.0
    value_space = Tuple([
        Box(0, 3, shape=(batch_size,), dtype=np.int32),
        Box(-2.0, 2.0, shape=(batch_size, 3), dtype=np.float32),
        Dict({"a": Box(0.0, 1.0, shape=(batch_size, 2), dtype=np.float32)}),
    ])
    value_space.seed(42)

    child_distr_cls = [Categorical, DiagGaussian, partial(Beta, low=low, high=high)]

    def make(parts):
        return MultiActionDistribution(
            np.concatenate([parts[0], parts[1], parts[2]["a"]], axis=1), model={},
            action_space=value_space, child_distributions=child_distr_cls,
            input_lens=[4, 6, 4])

    def beta_inputs(x):
        # The inputs as Beta itself adjusts them.
        x = np.clip(x, np.log(SMALL_NUMBER), -np.log(SMALL_NUMBER))
        return np.log(np.exp(x) + 1.0) + 1.0

    inputs = list(input_space.sample())
    distr = make(inputs)
    inputs[2]["a"] = beta_inputs(inputs[2]["a"])
    # Deterministic sample.
    expected_det = [
        np.argmax(inputs[0], axis=-1),
        inputs[1][:, :3],  # the means
        (1.0 / (1.0 + inputs[2]["a"][:, 2:] / inputs[2]["a"][:, 0:2])) * (high - low) + low,
    ]
    out = distr.deterministic_sample()
    check(out[0], expected_det[0])
    check(out[1], expected_det[1])
    check(out[2]["a"], expected_det[2])

    # Stochastic sampling: roughly the means.
    inputs = list(input_space.sample())
    inputs[0] = softmax(inputs[0], -1)  # (for the expectations below)
    inputs[1][:, 3:] = std_space.sample()  # small stds
    inputs[2]["a"] = beta_inputs(inputs[2]["a"])
    distr = make(inputs)
    expected_mean = [
        np.mean(np.sum(inputs[0] * np.array([0, 1, 2, 3]), -1)),
        inputs[1][:, :3],
        (1.0 / (1.0 + inputs[2]["a"][:, 2:] / inputs[2]["a"][:, :2])) * (high - low) + low,
    ]
    out = list(distr.sample())
    check(np.mean(out[0]), expected_mean[0], decimals=1)
    check(np.mean(out[1], 0), np.mean(expected_mean[1], 0), decimals=1)
    check(np.mean(out[2]["a"], 0), np.mean(expected_mean[2], 0), decimals=1)

    # Log-likelihoods.
    inputs = list(input_space.sample())
    inputs[2]["a"] = beta_inputs(inputs[2]["a"])
    distr = make(inputs)
    inputs[0] = softmax(inputs[0], -1)
    values = list(value_space.sample())
    log_prob_beta = np.log(_beta_pdf(values[2]["a"], inputs[2]["a"][:, :2],
                                     inputs[2]["a"][:, 2:]))
    # Scale the Beta values to [low, high].
    values[2]["a"] = values[2]["a"] * (high - low) + low
    inputs[1][:, 3:] = np.exp(inputs[1][:, 3:])
    expected_log_llh = np.sum(np.concatenate([
        np.expand_dims(np.log([i[values[0][j]] for j, i in enumerate(inputs[0])]), -1),
        np.log(_norm_pdf(values[1], inputs[1][:, :3], inputs[1][:, 3:])),
        log_prob_beta,
    ], -1), -1)

    values[0] = np.expand_dims(values[0], -1)
    # All flattened into one tensor.
    concat = np.concatenate(tree.flatten(values), -1).astype(np.float32)
    out = distr.logp(concat)
    check(out, expected_log_llh, atol=15)
    # Structured input.
    out = distr.logp(values)
    check(out, expected_log_llh, atol=15)
    # Flattened (one array per component) input.
    out = distr.logp(tree.flatten(values))
    check(out, expected_log_llh, atol=15)
