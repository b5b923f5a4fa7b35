"""The action distributions' formulas against tensorflow-probability, the test oracle.

Each distribution computes logp, entropy and KL with its own TensorFlow ops;
`dist.to_tfp()` gives the equivalent TFP distribution. Hypothesis draws the inputs
(batch shapes, extreme logits, multi-dimensional Gaussians, bounds, splits);
`derandomize=True` keeps every run the same. Sampling is checked by the empirical
frequencies and moments of many seeded draws.
"""

import sys

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.tf_action_dist import (
    MAX_LOG_NN_OUTPUT,
    MIN_LOG_NN_OUTPUT,
    Beta,
    Categorical,
    Deterministic,
    DiagGaussian,
    GumbelSoftmax,
    MultiCategorical,
    SquashedGaussian,
)

tfd = tfp.distributions
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None)
LEADS = st.sampled_from([(1,), (5,), (2, 3)])


def _floats(low, high):
    # No subnormals: TF on CPU flushes them to zero in some ops (TFP's mode, loc * 1).
    return st.floats(low, high, width=32, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False)


def _arrays(shape, low, high):
    return hnp.arrays(np.float32, shape, elements=_floats(low, high))


def _close(got, expected, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=rtol, atol=atol)


@st.composite
def _logits_pairs(draw, max_abs=60.0):
    """Two logits arrays `[*lead, n]`, from mild to extreme (|logit| up to 60)."""
    shape = draw(LEADS) + (draw(st.integers(2, 6)),)
    return draw(_arrays(shape, -max_abs, max_abs)), draw(_arrays(shape, -max_abs, max_abs))


@given(_logits_pairs(), st.sampled_from([1.0, 0.5, 3.0]))
@SETTINGS
def test_categorical_matches_tfp(logits_pair, temperature):
    p_logits, q_logits = logits_pair
    p = Categorical(p_logits, None, temperature)
    q = Categorical(q_logits, None, temperature)
    oracle_p, oracle_q = p.to_tfp(), q.to_tfp()
    n = p_logits.shape[-1]
    for k in range(n):  # every category, for every row
        x = np.full(p_logits.shape[:-1], k)
        _close(p.logp(x), oracle_p.log_prob(x))
    _close(p.entropy(), oracle_p.entropy())
    _close(p.kl(q), tfd.kl_divergence(oracle_p, oracle_q))
    assert np.all(np.isfinite(p.kl(q).numpy())) and np.all(p.kl(p).numpy() == 0.0)
    np.testing.assert_array_equal(p.deterministic_sample(), oracle_p.mode())


def test_categorical_logp_broadcasts_actions_like_tfp():
    logits = np.log(np.array([[0.2, 0.8], [0.5, 0.5]], np.float32))
    dist = Categorical(logits)
    actions = np.array([[0], [1], [1]])  # [3, 1] against rows [2]: [3, 2]
    _close(dist.logp(actions), dist.to_tfp().log_prob(actions))
    _close(dist.logp(actions), np.log([[0.2, 0.5], [0.8, 0.5], [0.8, 0.5]]))


@st.composite
def _multi_categorical_pairs(draw):
    lens = draw(st.lists(st.integers(2, 5), min_size=1, max_size=4))
    shape = draw(LEADS) + (sum(lens),)
    p, q = draw(_arrays(shape, -30, 30)), draw(_arrays(shape, -30, 30))
    x = np.stack([np.full(shape[:-1], draw(st.integers(0, n - 1))) for n in lens], -1)
    return lens, p, q, x


@given(_multi_categorical_pairs())
@SETTINGS
def test_multi_categorical_matches_tfp(case):
    # One TFP Categorical per split (TFP's Blockwise, what to_tfp() returns, costs ~1 s
    # per eager call; test_multi_categorical_to_tfp checks it once).
    lens, p_logits, q_logits, x = case
    p, q = MultiCategorical(p_logits, None, lens), MultiCategorical(q_logits, None, lens)
    splits = np.cumsum(lens)[:-1]
    oracle_p = [tfd.Categorical(logits=part) for part in np.split(p_logits, splits, -1)]
    oracle_q = [tfd.Categorical(logits=part) for part in np.split(q_logits, splits, -1)]
    _close(p.logp(x), sum(o.log_prob(x[..., i]) for i, o in enumerate(oracle_p)), atol=1e-4)
    _close(p.entropy(), sum(o.entropy() for o in oracle_p), atol=1e-4)
    _close(p.kl(q), sum(tfd.kl_divergence(a, b) for a, b in zip(oracle_p, oracle_q)), atol=1e-4)
    np.testing.assert_array_equal(p.deterministic_sample(),
                                  np.stack([o.mode() for o in oracle_p], -1))


def test_multi_categorical_to_tfp():
    rng = np.random.default_rng(0)
    lens = [2, 3, 4]
    p = MultiCategorical(rng.normal(size=(2, 3, 9)).astype(np.float32) * 4, None, lens)
    q = MultiCategorical(rng.normal(size=(2, 3, 9)).astype(np.float32) * 4, None, lens)
    x = np.stack([rng.integers(0, n, (2, 3)) for n in lens], -1)
    oracle_p, oracle_q = p.to_tfp(), q.to_tfp()
    assert oracle_p.batch_shape == (2, 3) and oracle_p.event_shape == (3,)
    _close(p.logp(x), oracle_p.log_prob(x), atol=1e-5)
    _close(p.entropy(), oracle_p.entropy(), atol=1e-5)
    _close(p.kl(q), tfd.kl_divergence(oracle_p, oracle_q), atol=1e-5)


@st.composite
def _gaussian_pairs(draw, log_std=(-5.0, 2.0)):
    """Two `[*lead, 2 * A]` inputs (A = 1..4) and an action `[*lead, A]`."""
    dims = draw(st.integers(1, 4))
    lead = draw(LEADS)

    def inputs():
        mean = draw(_arrays(lead + (dims,), -10, 10))
        return np.concatenate([mean, draw(_arrays(lead + (dims,), *log_std))], -1)

    return inputs(), inputs(), draw(_arrays(lead + (dims,), -10, 10))


@given(_gaussian_pairs())
@SETTINGS
def test_diag_gaussian_matches_tfp(case):
    p_inputs, q_inputs, x = case
    p, q = DiagGaussian(p_inputs), DiagGaussian(q_inputs)
    oracle_p, oracle_q = p.to_tfp(), q.to_tfp()
    _close(p.logp(x), oracle_p.log_prob(x), rtol=1e-5, atol=1e-3)
    _close(p.entropy(), oracle_p.entropy(), atol=1e-5)
    _close(p.kl(q), tfd.kl_divergence(oracle_p, oracle_q), rtol=1e-5, atol=1e-4)
    _close(p.kl(p), np.zeros(p_inputs.shape[:-1]), atol=0.0)
    _close(p.deterministic_sample(), oracle_p.mode(), atol=0.0)


@st.composite
def _squashed_cases(draw):
    """Inputs `[*lead, 2 * A]` (log_std also beyond the clip range), per-dim bounds and
    a pre-squash point `u` away from saturation (where float32 tanh is invertible)."""
    dims = draw(st.integers(1, 4))
    lead = draw(LEADS)
    mean = draw(_arrays(lead + (dims,), -2, 2))
    log_std = draw(_arrays(lead + (dims,), -8, 4))
    low = draw(_arrays((dims,), -5, 4))
    width = draw(_arrays((dims,), 0.125, 10))
    u = draw(_arrays(lead + (dims,), -3, 3))
    return np.concatenate([mean, log_std], -1), low, low + width, u


@given(_squashed_cases())
@SETTINGS
def test_squashed_gaussian_matches_tfp(case):
    inputs, low, high, u = case
    dist = SquashedGaussian(inputs, None, low, high)
    oracle = dist.to_tfp()
    x = oracle.bijector.forward(u)  # the tanh squash and the low/high scaling
    # The log-std clip: the oracle's std is exp(clip(log_std)).
    log_std = np.clip(np.split(inputs, 2, -1)[1], MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT)
    _close(oracle.distribution.stddev(), np.exp(log_std), rtol=1e-6)
    _close(dist._squash(u), x, rtol=1e-5, atol=1e-5)
    # logp(x) re-derives u from x: float32 atanh(tanh(u)) for |u| <= 3 loses up to
    # ~1e-3 of u, i.e. ~1e-3 / std of logp. logp is RLlib's, the density of the
    # normalized action, each dimension's Gaussian term clipped to [-100, 100]: the
    # oracle's Gaussian log-density (clipped), minus its squash's log-Jacobian, plus
    # sum log((high - low) / 2).
    u_of_x = np.arctanh(np.clip((x.numpy() - low) / (high - low) * 2 - 1, -1 + 1e-6, 1 - 1e-6))
    gaussian = np.clip(oracle.distribution.distribution.log_prob(u_of_x), -100, 100).sum(-1)
    expected = (gaussian - oracle.bijector.forward_log_det_jacobian(u_of_x, event_ndims=1)
                + np.log((high - low) / 2).sum())
    _close(dist.logp(x), expected, rtol=1e-3, atol=2e-3 / np.exp(log_std).min())
    _close(dist.deterministic_sample(), oracle.bijector.forward(oracle.distribution.mode()),
           rtol=1e-5, atol=1e-5)


def test_squashed_gaussian_sampled_logp_matches_tfp():
    # sampled_action_logp comes from the pre-squash draw; the oracle evaluates the
    # squashed action: they agree where the action is not saturated.
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    inputs = np.concatenate([rng.normal(size=(400, 3)), rng.uniform(-2, 0.5, (400, 3))], -1)
    low, high = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 5.0, 2.5])
    dist = SquashedGaussian(inputs.astype(np.float32), None, low, high)
    x = dist.sample().numpy()
    unit = (x - low) / (high - low) * 2 - 1
    inside = np.all(np.abs(unit) < 0.99, axis=-1)
    assert inside.sum() > 200
    log_scale = np.log((high - low) / 2).sum()
    _close(dist.sampled_action_logp().numpy()[inside],
           dist.to_tfp().log_prob(x).numpy()[inside] + log_scale, rtol=1e-3, atol=1e-2)


@st.composite
def _squashed_cases_f64(draw):
    """float64 inputs and a pre-squash point `u` with |tanh(u)| <= 0.964 (away from the
    bounds: 1 - tanh(u)^2 >= 0.07, so RLlib's SMALL_NUMBER shifts logp by < 1.5e-5 a
    dimension)."""
    dims = draw(st.integers(1, 4))
    lead = draw(LEADS)

    def arrays(shape, low, high):
        return hnp.arrays(np.float64, shape, elements=st.floats(
            low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False))

    mean = draw(arrays(lead + (dims,), -2, 2))
    log_std = draw(arrays(lead + (dims,), -5, 2))
    low = draw(arrays((dims,), -5, 4))
    width = draw(arrays((dims,), 0.125, 10))
    u = draw(arrays(lead + (dims,), -2, 2))
    return np.concatenate([mean, log_std], -1), low, low + width, u


@given(_squashed_cases_f64())
@SETTINGS
def test_squashed_gaussian_logp_matches_tfp_within_1e_4_away_from_the_bounds(case):
    # RLlib's formula is the density of the normalized action tanh(u): TFP's density of
    # x plus sum log((high - low) / 2), up to the SMALL_NUMBER in the Jacobian (and the
    # [-100, 100] clip of the Gaussian term, applied to the oracle's term too).
    inputs, low, high, u = case
    dist = SquashedGaussian(inputs, None, low, high)
    oracle = dist.to_tfp()
    x = oracle.bijector.forward(u).numpy()
    gaussian = np.clip(oracle.distribution.distribution.log_prob(u), -100, 100).sum(-1)
    expected = (gaussian - oracle.bijector.forward_log_det_jacobian(u, event_ndims=1)
                + np.log((high - low) / 2).sum())
    _close(dist.logp(x), expected, rtol=0.0, atol=1e-4)
    _, sampled_logp = dist.sample_from_noise((u - dist.mean) / dist.std)
    _close(sampled_logp, expected, rtol=0.0, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_squashed_gaussian_logp_is_finite_at_and_near_the_bounds(dtype):
    low, high = np.array([-2.0, 0.0]), np.array([1.0, 4.0])
    # Means and log-stds from moderate to extreme (the log-std is clipped).
    inputs = np.array([[0.0, 0.0, 0.0, 0.0], [50.0, -50.0, -10.0, -10.0],
                       [1e8, -1e8, 10.0, 10.0], [1.1e34, -1.1e34, 0.0, 0.0]], dtype)
    dist = SquashedGaussian(inputs, None, low, high)
    width = high - low
    points = [  # one action per row of inputs: at, just inside and beyond the bounds
        np.stack([low, high, low, high]),
        np.stack([low + 1e-7 * width, high - 1e-7 * width] * 2),
        np.stack([low + 1e-4 * width, high - 1e-4 * width] * 2),
        np.stack([low - 1e-3, high + 1e-3] * 2),
        np.stack([np.array([low[0], high[1]])] * 4),
    ]
    for point in points:
        with tf.GradientTape() as tape:
            inputs_t = tf.constant(inputs)
            tape.watch(inputs_t)
            logp = SquashedGaussian(inputs_t, None, low, high).logp(point.astype(dtype))
        assert np.all(np.isfinite(logp.numpy())), (point, logp)
        assert np.all(np.isfinite(tape.gradient(logp, inputs_t).numpy()))
    # Samples that saturate at the bounds, and their sampled logp.
    noise = np.array([[40.0, -40.0]] * 4, dtype)
    actions, logp = dist.sample_from_noise(noise)
    assert np.all(np.isfinite(logp.numpy()))
    assert np.all(actions.numpy() >= low) and np.all(actions.numpy() <= high)
    assert np.all(np.isfinite(dist.logp(actions).numpy()))


@st.composite
def _beta_cases(draw):
    dims = draw(st.integers(1, 4))
    lead = draw(LEADS)
    p = draw(_arrays(lead + (2 * dims,), -20, 20))
    q = draw(_arrays(lead + (2 * dims,), -20, 20))
    unit = draw(_arrays(lead + (dims,), 2.0 ** -7, 1 - 2.0 ** -7))
    low = draw(_arrays((dims,), -5, 4))
    width = draw(_arrays((dims,), 0.125, 10))
    return p, q, unit, low, low + width


@given(_beta_cases())
@SETTINGS
def test_beta_matches_tfp(case):
    # logp, entropy and KL are those of the normalized action (x - low) / (high - low).
    p_inputs, q_inputs, unit, low, high = case
    p, q = Beta(p_inputs, None, low, high), Beta(q_inputs, None, low, high)
    oracle_p, oracle_q = p.to_tfp(), q.to_tfp()
    x = (unit * (high - low) + low).astype(np.float32)
    unit_of_x = (x - low.astype(np.float32)) / (high - low).astype(np.float32)
    _close(p.logp(x), oracle_p.log_prob(unit_of_x), rtol=1e-4, atol=1e-3)
    _close(p.entropy(), oracle_p.entropy(), rtol=1e-4, atol=1e-4)
    _close(p.kl(q), tfd.kl_divergence(oracle_p, oracle_q), rtol=1e-4, atol=1e-4)
    _close(p.deterministic_sample(), oracle_p.mean() * (high - low) + low, rtol=1e-5, atol=1e-5)
    # RLlib's input transform: concentrations softplus(clip(x)) + 1 >= 1.
    assert np.all(p.inputs.numpy() >= 1.0)


def test_beta_sample_moments_match_tfp():
    tf.random.set_seed(6)
    params = np.array([0.5, -1.0, 2.0, 0.0], np.float32)  # alpha, beta pre-activations
    dist = Beta(np.tile(params, (DRAWS, 1)), None, low=[-1.0, 0.0], high=[1.0, 10.0])
    sample = dist.sample().numpy()
    unit = (sample - [-1.0, 0.0]) / [2.0, 10.0]
    oracle = dist.to_tfp()
    np.testing.assert_allclose(unit.mean(0), oracle.mean().numpy()[0], atol=0.01)
    np.testing.assert_allclose(unit.std(0), oracle.stddev().numpy()[0], rtol=0.03)
    assert np.all(unit >= 0.0) and np.all(unit <= 1.0)
    _close(dist.sampled_action_logp(), oracle.log_prob(unit.astype(np.float32)),
           rtol=1e-4, atol=1e-3)
    seeded = [dist.sample(tf.constant([1, 2])).numpy() for _ in range(2)]
    np.testing.assert_array_equal(seeded[0], seeded[1])


@given(_logits_pairs(max_abs=20.0), st.sampled_from([1.0, 0.5, 3.0]))
@SETTINGS
def test_gumbel_softmax_matches_tfp(logits_pair, temperature):
    logits, _ = logits_pair
    dist = GumbelSoftmax(logits, None, temperature)
    oracle = dist.to_tfp()
    categorical = tfd.Categorical(logits=logits)
    # The deterministic sample is the softmax; the logp of a one-hot vector (or its
    # index) is the categorical log-probability, as RLlib's.
    _close(dist.deterministic_sample(), categorical.probs_parameter(), atol=1e-6)
    np.testing.assert_allclose(oracle.temperature.numpy(), temperature)
    n = logits.shape[-1]
    for k in range(n):
        index = np.full(logits.shape[:-1], k)
        _close(dist.logp(np.eye(n, dtype=np.float32)[index]), categorical.log_prob(index),
               atol=1e-4)
        _close(dist.logp(index), categorical.log_prob(index), atol=1e-4)


@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_gumbel_softmax_samples_match_tfp(temperature):
    probs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    tf.random.set_seed(7)
    dist = GumbelSoftmax(np.tile(np.log(probs), (DRAWS, 1)), None, temperature)
    sample = dist.sample().numpy()
    assert sample.shape == (DRAWS, 4)
    np.testing.assert_allclose(sample.sum(-1), 1.0, rtol=1e-5)
    # Gumbel-max: the argmax of a relaxed sample is a categorical sample.
    np.testing.assert_allclose(np.bincount(sample.argmax(-1), minlength=4) / DRAWS, probs,
                               atol=0.02)
    oracle_sample = dist.to_tfp().sample(seed=7).numpy()
    np.testing.assert_allclose(sample.mean(0), oracle_sample.mean(0), atol=0.02)


def test_deterministic_matches_tfp():
    inputs = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    dist = Deterministic(inputs)
    oracle = dist.to_tfp()
    np.testing.assert_array_equal(dist.sample(), oracle.sample())
    np.testing.assert_array_equal(dist.deterministic_sample(), oracle.mode())
    np.testing.assert_array_equal(dist.logp(inputs), oracle.log_prob(inputs))  # 0 at the point


NESTED_SPACE = gym.spaces.Dict({
    "fire": gym.spaces.Discrete(3),
    "knobs": gym.spaces.MultiDiscrete([2, 4]),
    "move": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
})


@pytest.mark.parametrize("seed, lead", [(0, (4,)), (1, (2, 3))])
def test_dict_distribution_matches_tfp_joint(seed, lead):
    rng = np.random.default_rng(seed)
    dist_class, n = ModelCatalog.get_action_dist(NESTED_SPACE)
    p = dist_class(rng.normal(size=lead + (n,)).astype(np.float32) * 3, None)
    q = dist_class(rng.normal(size=lead + (n,)).astype(np.float32) * 3, None)
    oracle_p, oracle_q = p.to_tfp(), q.to_tfp()
    x = {"fire": rng.integers(0, 3, lead), "knobs": rng.integers(0, 2, lead + (2,)),
         "move": rng.uniform(-1, 1, lead + (2,)).astype(np.float32)}
    _close(p.logp(x), oracle_p.log_prob(x), atol=1e-4)
    _close(p.entropy(), oracle_p.entropy(), atol=1e-4)
    _close(p.kl(q), tfd.kl_divergence(oracle_p, oracle_q), rtol=1e-4, atol=1e-4)


def test_tuple_distribution_matches_tfp_joint():
    space = gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (3,), np.float32)])
    dist_class, n = ModelCatalog.get_action_dist(space)
    rng = np.random.default_rng(1)
    dist = dist_class(rng.normal(size=(6, n)).astype(np.float32), None)
    x = (rng.integers(0, 2, 6), rng.normal(size=(6, 3)).astype(np.float32))
    _close(dist.logp(x), dist.to_tfp().log_prob(list(x)), atol=1e-4)
    _close(dist.entropy(), dist.to_tfp().entropy(), atol=1e-5)


# ----------------------------------------------------------------- sampling
# 20k seeded draws: a frequency's standard error is <= 0.0036, a mean's std / 141. The
# tolerances are ~6 standard errors: they hold at these seeds by a wide margin, and a
# wrong formula (temperature ignored, a swapped mean/std, a wrong squash) misses them
# by much more (the probabilities below differ by >= 0.1).
DRAWS = 20_000


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_categorical_sample_frequencies_match_probabilities(seed):
    probs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    tf.random.set_seed(seed)
    dist = Categorical(np.tile(np.log(probs) * 2.0, (DRAWS, 1)), None, temperature=2.0)
    sample = dist.sample().numpy()
    np.testing.assert_allclose(np.bincount(sample, minlength=4) / DRAWS, probs, atol=0.02)
    _close(dist.sampled_action_logp(), np.log(probs)[sample], atol=1e-6)


def test_multi_categorical_sample_frequencies_match_probabilities():
    tf.random.set_seed(3)
    probs = [np.array([0.7, 0.3]), np.array([0.1, 0.2, 0.3, 0.4])]
    logits = np.concatenate([np.log(p) for p in probs]).astype(np.float32)
    dist = MultiCategorical(np.tile(logits, (DRAWS, 1)), None, [2, 4])
    sample = dist.sample().numpy()
    assert sample.shape == (DRAWS, 2)
    for i, p in enumerate(probs):
        np.testing.assert_allclose(np.bincount(sample[:, i], minlength=len(p)) / DRAWS, p,
                                   atol=0.02)


@pytest.mark.parametrize("seed", [0, 1])
def test_gaussian_sample_moments_match(seed):
    mean, log_std = np.array([1.0, -2.0, 0.0]), np.array([0.0, -1.0, 1.0])
    tf.random.set_seed(seed)
    inputs = np.tile(np.concatenate([mean, log_std]), (DRAWS, 1)).astype(np.float32)
    dist = DiagGaussian(inputs)
    sample = dist.sample().numpy()
    std = np.exp(log_std)
    np.testing.assert_allclose(sample.mean(0), mean, atol=6 * std.max() / np.sqrt(DRAWS))
    np.testing.assert_allclose(sample.std(0), std, rtol=0.03)
    _close(dist.sampled_action_logp(), dist.to_tfp().log_prob(sample), rtol=1e-5, atol=1e-4)


def test_squashed_gaussian_samples_are_tanh_of_the_gaussian():
    mean, log_std = np.array([0.5, -1.0]), np.array([-1.0, 0.0])
    low, high = np.array([-2.0, 0.0]), np.array([2.0, 10.0])
    tf.random.set_seed(4)
    inputs = np.tile(np.concatenate([mean, log_std]), (DRAWS, 1)).astype(np.float32)
    sample = SquashedGaussian(inputs, None, low, high).sample().numpy()
    assert np.all(sample >= low) and np.all(sample <= high)
    u = np.arctanh(np.clip((sample - low) / (high - low) * 2 - 1, -1 + 1e-6, 1 - 1e-6))
    inside = np.abs(u) < 4  # float32 tanh saturates beyond; a few draws of dim 1
    assert inside.mean() > 0.99
    np.testing.assert_allclose(np.median(u, 0), mean, atol=0.03)
    np.testing.assert_allclose(np.percentile(u, 84.13, 0) - np.percentile(u, 15.87, 0),
                               2 * np.exp(log_std), rtol=0.05)


def test_seeded_sampling_repeats_in_graph_mode():
    @tf.function(autograph=False)
    def draw(inputs):
        return Categorical(inputs).sample(), DiagGaussian(tf.concat([inputs, inputs], -1)).sample()

    inputs = tf.zeros([8, 3])
    tf.random.set_seed(5)
    first = [t.numpy() for t in draw(inputs)]
    tf.random.set_seed(5)
    again = [t.numpy() for t in draw(inputs)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_to_tfp_without_tfp_names_the_extra(monkeypatch):
    # None in sys.modules makes `import tensorflow_probability` raise ImportError.
    monkeypatch.setitem(sys.modules, "tensorflow_probability", None)
    with pytest.raises(ImportError, match=r"to_tfp\(\) needs tensorflow-probability.*"
                                          r"pip install 'tfrl\[tfp\]'"):
        Categorical(np.zeros((1, 2), np.float32)).to_tfp()
