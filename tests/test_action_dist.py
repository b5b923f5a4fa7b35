"""Action distributions against numpy formulas, in eager and graph mode."""

import functools

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.tf_action_dist import (
    Categorical,
    DiagGaussian,
    Deterministic,
    MultiActionDistribution,
    MultiCategorical,
    SquashedGaussian,
    TFActionDistribution,
)

RNG = np.random.default_rng(0)


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_cat(logits_p, logits_q, x):
    lp, lq = _log_softmax(logits_p), _log_softmax(logits_q)
    logp = np.take_along_axis(lp, x[..., None], -1)[..., 0]
    entropy = -(np.exp(lp) * lp).sum(-1)
    kl = (np.exp(lp) * (lp - lq)).sum(-1)
    return logp, entropy, kl


def _np_gauss_logp(mean, log_std, x):
    return (-0.5 * ((x - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi)).sum(-1)


def _np_gauss(inputs_p, inputs_q, x):
    m1, s1 = np.split(inputs_p, 2, -1)
    m2, s2 = np.split(inputs_q, 2, -1)
    entropy = (s1 + 0.5 * (1 + np.log(2 * np.pi))).sum(-1)
    kl = (s2 - s1 + (np.exp(2 * s1) + (m1 - m2) ** 2) / (2 * np.exp(2 * s2)) - 0.5).sum(-1)
    return _np_gauss_logp(m1, s1, x), entropy, kl


def _close(tensor, expected, atol=1e-5):
    np.testing.assert_allclose(np.asarray(tensor), expected, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("lead", [(4,), (2, 3)])
def test_categorical_matches_numpy(lead):
    p, q = RNG.normal(size=lead + (5,)), RNG.normal(size=lead + (5,))
    x = RNG.integers(0, 5, size=lead)
    dp, dq = Categorical(p.astype(np.float32)), Categorical(q.astype(np.float32))
    logp, entropy, kl = _np_cat(p, q, x)
    _close(dp.logp(x), logp)
    _close(dp.entropy(), entropy)
    _close(dp.kl(dq), kl)
    np.testing.assert_array_equal(dp.deterministic_sample(), p.argmax(-1))
    assert dp.sample().shape == lead


def test_categorical_temperature_and_bad_temperature():
    logits = np.array([[1.0, 2.0, 0.5]], np.float32)
    _close(Categorical(logits, temperature=2.0).logp([1]), _log_softmax(logits / 2.0)[:, 1])
    with pytest.raises(ValueError, match="temperature > 0. Received: 0.0"):
        Categorical(logits, temperature=0.0)


def test_multi_categorical_matches_sum_of_categoricals():
    lens = [2, 3]
    p, q = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    x = np.stack([RNG.integers(0, 2, 4), RNG.integers(0, 3, 4)], -1)
    dp = MultiCategorical(p.astype(np.float32), None, lens)
    dq = MultiCategorical(q.astype(np.float32), None, lens)
    parts = [_np_cat(p[:, :2], q[:, :2], x[:, 0]), _np_cat(p[:, 2:], q[:, 2:], x[:, 1])]
    for i, method in enumerate([dp.logp(x), dp.entropy(), dp.kl(dq)]):
        _close(method, parts[0][i] + parts[1][i])
    np.testing.assert_array_equal(
        dp.deterministic_sample(), np.stack([p[:, :2].argmax(-1), p[:, 2:].argmax(-1)], -1)
    )
    space = gym.spaces.MultiDiscrete(lens)
    assert all(space.contains(a) for a in dp.sample().numpy())


def test_multi_categorical_wrong_input_lens():
    with pytest.raises(ValueError, match=r"sum\(input_lens\) logits.*\[2, 2\]"):
        MultiCategorical(np.zeros((1, 5), np.float32), None, [2, 2])


@pytest.mark.parametrize("lead", [(4,), (2, 3)])
def test_diag_gaussian_matches_numpy(lead):
    p, q = RNG.normal(size=lead + (6,)) * 0.5, RNG.normal(size=lead + (6,)) * 0.5
    x = RNG.normal(size=lead + (3,))
    dp, dq = DiagGaussian(p.astype(np.float32)), DiagGaussian(q.astype(np.float32))
    logp, entropy, kl = _np_gauss(p, q, x)
    _close(dp.logp(x.astype(np.float32)), logp, atol=1e-4)
    _close(dp.entropy(), entropy)
    _close(dp.kl(dq), kl, atol=1e-4)
    _close(dp.deterministic_sample(), p[..., :3])
    assert dp.sample().shape == lead + (3,)


def _squash_np(u, low, high):
    return low + (np.tanh(u) + 1.0) / 2.0 * (high - low)


def test_squashed_gaussian_logp_is_change_of_variables():
    low, high = np.array([-2.0, 0.0]), np.array([1.0, 4.0])
    inputs = np.array([[0.3, -0.2, -0.5, 0.1], [-1.0, 0.7, 0.2, -0.3]])
    u = np.array([[0.4, -1.2], [1.5, 0.1]])
    x = _squash_np(u, low, high)
    # Numeric Jacobian of the squash, per dimension (central differences, float64).
    h = 1e-6
    dxdu = (_squash_np(u + h, low, high) - _squash_np(u - h, low, high)) / (2 * h)
    mean, log_std = np.split(inputs, 2, -1)
    expected = _np_gauss_logp(mean, log_std, u) - np.log(dxdu).sum(-1)
    dist = SquashedGaussian(inputs.astype(np.float32), None, low, high)
    # logp is RLlib's: the density of the normalized action tanh(u), i.e. the density
    # of x plus sum log((high - low) / 2).
    _close(dist.logp(x.astype(np.float32)) - np.log((high - low) / 2).sum(), expected,
           atol=1e-3)


def test_squashed_gaussian_density_integrates_to_one():
    dist = SquashedGaussian(np.array([[0.5, -0.5]], np.float32), None, -1.0, 3.0)
    grid = np.linspace(-1.0, 3.0, 20001)[1:-1].astype(np.float32)
    # logp is the density of the normalized action: the density of x is lower by
    # log((high - low) / 2) = log 2.
    density = np.exp(dist.logp(grid[:, None, None])[:, 0].numpy() - np.log(2.0))
    assert abs(np.trapezoid(density, grid) - 1.0) < 2e-3


def test_squashed_gaussian_samples_bounds_and_safety():
    low, high = np.array([-2.0, 0.0], np.float32), np.array([1.0, 4.0], np.float32)
    inputs = RNG.normal(size=(500, 4)).astype(np.float32) * 3.0
    dist = SquashedGaussian(inputs, None, low, high)
    sample = dist.sample().numpy()
    assert np.all(sample >= low) and np.all(sample <= high)
    # sampled_action_logp is computed from the pre-squash value: agrees with logp(x).
    # Away from saturation, where float32 atanh(tanh(u)) loses precision.
    inside = np.all(np.abs((sample - low) / (high - low) * 2 - 1) < 0.99, axis=-1)
    _close(dist.sampled_action_logp().numpy()[inside], dist.logp(sample).numpy()[inside], atol=2e-2)
    np.testing.assert_allclose(dist.deterministic_sample(), _squash_np(inputs[:, :2], low, high), rtol=1e-5, atol=1e-5)
    at_bounds = dist.logp(np.stack([low, high] * 250))
    assert np.all(np.isfinite(at_bounds.numpy()))


def test_squashed_gaussian_sample_from_noise_by_hand():
    low, high = np.array([-2.0, 0.0], np.float32), np.array([1.0, 4.0], np.float32)
    inputs = np.array([[0.3, -0.2, 0.1, -1.0]], np.float32)  # mean [0.3, -0.2], log_std [0.1, -1]
    noise = np.array([[0.5, -1.5]], np.float32)
    actions, logp = SquashedGaussian(inputs, None, low, high).sample_from_noise(noise)
    u = np.array([0.3, -0.2]) + np.exp([0.1, -1.0]) * noise[0]
    np.testing.assert_allclose(actions.numpy()[0], _squash_np(u, low, high), rtol=1e-5)
    # RLlib's: log N(u) - log(1 - tanh(u)^2 + SMALL_NUMBER), the density of tanh(u).
    gauss = -0.5 * noise[0] ** 2 - np.array([0.1, -1.0]) - 0.5 * np.log(2 * np.pi)
    jac = np.log(1 - np.tanh(u) ** 2 + 1e-6)
    np.testing.assert_allclose(logp.numpy(), [np.sum(gauss - jac)], rtol=1e-5)


def test_squashed_gaussian_errors():
    with pytest.raises(ValueError, match="finite bounds with low < high"):
        SquashedGaussian(np.zeros((1, 2), np.float32), None, 1.0, 1.0)
    dist = SquashedGaussian(np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="no closed-form entropy"):
        dist.entropy()
    with pytest.raises(ValueError, match="no closed-form KL"):
        dist.kl(dist)


def test_deterministic():
    inputs = RNG.normal(size=(3, 2)).astype(np.float32)
    dist = Deterministic(inputs)
    np.testing.assert_array_equal(dist.sample(), inputs)
    np.testing.assert_array_equal(dist.deterministic_sample(), inputs)
    np.testing.assert_array_equal(dist.logp(inputs), np.zeros(3))
    np.testing.assert_array_equal(dist.sampled_action_logp(), np.zeros(3))
    with pytest.raises(NotImplementedError, match="Deterministic has no entropy"):
        dist.entropy()


DICT_SPACE = gym.spaces.Dict(
    {"move": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "fire": gym.spaces.Discrete(3),
     "knobs": gym.spaces.MultiDiscrete([2, 2])}
)


def test_dict_distribution_is_sum_of_children():
    dist_class, n = ModelCatalog.get_action_dist(DICT_SPACE)
    assert n == 3 + 4 + 4  # fire logits, knobs logits, move mean+log_std (sorted keys)
    p, q = RNG.normal(size=(4, n)) * 0.5, RNG.normal(size=(4, n)) * 0.5
    dp, dq = dist_class(p.astype(np.float32), None), dist_class(q.astype(np.float32), None)
    x = {"fire": RNG.integers(0, 3, 4), "knobs": RNG.integers(0, 2, (4, 2)),
         "move": RNG.uniform(-1, 1, (4, 2)).astype(np.float32)}
    fire = _np_cat(p[:, :3], q[:, :3], x["fire"])
    k1 = _np_cat(p[:, 3:5], q[:, 3:5], x["knobs"][:, 0])
    k2 = _np_cat(p[:, 5:7], q[:, 5:7], x["knobs"][:, 1])
    move = _np_gauss(p[:, 7:], q[:, 7:], x["move"])
    for i, got in enumerate([dp.logp(x), dp.entropy(), dp.kl(dq)]):
        _close(got, fire[i] + k1[i] + k2[i] + move[i], atol=1e-4)
    # The same actions flattened into one tensor, children in the space's order.
    flat = np.concatenate([x["fire"][:, None], x["knobs"], x["move"]], -1).astype(np.float32)
    _close(dp.logp(flat), dp.logp(x).numpy(), atol=1e-5)
    sample = dp.sample()
    assert set(sample) == {"fire", "knobs", "move"}
    row = {k: v.numpy()[0] for k, v in sample.items()}
    row["move"] = np.clip(row["move"], -1, 1)  # Gaussian samples are unbounded.
    assert DICT_SPACE.contains(row)
    _close(dp.sampled_action_logp(), dp.logp(sample).numpy(), atol=1e-4)
    mode = dp.deterministic_sample()
    np.testing.assert_array_equal(mode["fire"], p[:, :3].argmax(-1))
    _close(mode["move"], p[:, 7:9])


def test_tuple_distribution_nested_and_in_space():
    space = gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Tuple([gym.spaces.Discrete(3)])])
    dist_class, n = ModelCatalog.get_action_dist(space)
    assert n == 5
    logits = RNG.normal(size=(6, 5)).astype(np.float32)
    dist = dist_class(logits, None)
    sample = dist.sample()
    assert isinstance(sample, tuple) and isinstance(sample[1], tuple)
    assert space.contains((int(sample[0][0]), (int(sample[1][0][0]),)))
    expected = (_log_softmax(logits[:, :2])[np.arange(6), sample[0].numpy()]
                + _log_softmax(logits[:, 2:])[np.arange(6), sample[1][0].numpy()])
    _close(dist.logp(sample), expected)


def test_multi_action_distribution_errors():
    dist_class, _ = ModelCatalog.get_action_dist(DICT_SPACE)
    with pytest.raises(ValueError, match=r"sum\(input_lens\)=11 inputs"):
        dist_class(np.zeros((1, 4), np.float32), None)
    with pytest.raises(ValueError, match="depends on its children"):
        MultiActionDistribution.required_model_output_shape(DICT_SPACE, None)


def test_methods_work_in_graph_mode_on_time_axis():
    space = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,), np.float32)])
    dist_class, n = ModelCatalog.get_action_dist(space)

    # The distributions have no tensor-dependent Python control flow: autograph is not
    # needed (the compiled train functions trace with autograph=False).
    @tf.function(autograph=False)
    def step(inputs):
        dist = dist_class(inputs, None)
        action = dist.sample()
        return dist.logp(action), dist.sampled_action_logp(), dist.entropy(), dist.kl(dist)

    logp, sampled_logp, entropy, kl = step(tf.constant(RNG.normal(size=(2, 3, n)), tf.float32))
    assert logp.shape == entropy.shape == kl.shape == (2, 3)
    _close(sampled_logp, logp.numpy(), atol=1e-4)
    _close(kl, np.zeros((2, 3)))


def test_sampling_is_seeded():
    dist = DiagGaussian(np.zeros((3, 4), np.float32))
    tf.random.set_seed(7)
    first = dist.sample().numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(dist.sample().numpy(), first)


def _stateless_cases():
    dict_class, n = ModelCatalog.get_action_dist(DICT_SPACE)
    rng = np.random.default_rng(3)
    inputs = lambda k: (rng.normal(size=(64, k)) * 0.5).astype(np.float32)  # noqa: E731
    return [Categorical(inputs(3)), MultiCategorical(inputs(5), None, [2, 3]),
            DiagGaussian(inputs(4)),
            SquashedGaussian(inputs(4), None, low=-2.0, high=2.0),
            Deterministic(inputs(2)), dict_class(inputs(n), None)]


@pytest.mark.parametrize("index", range(6))
def test_sample_with_a_seed_is_stateless_and_keeps_its_logp(index):
    dist = _stateless_cases()[index]
    flat = lambda x: np.concatenate([np.reshape(v, (64, -1)).astype(np.float64)  # noqa: E731
                                     for v in tf.nest.flatten(x)], -1)
    first = flat(dist.sample(tf.constant([1, 2])))
    logp = dist.sampled_action_logp().numpy()
    tf.random.set_seed(99)  # the global seed plays no part
    np.testing.assert_array_equal(flat(dist.sample(tf.constant([1, 2]))), first)
    np.testing.assert_allclose(dist.sampled_action_logp().numpy(), logp, rtol=1e-6)
    other = flat(dist.sample(tf.constant([1, 3])))
    if isinstance(dist, Deterministic):
        np.testing.assert_array_equal(other, first)  # a point mass
    else:
        assert np.any(other != first)
    if not isinstance(dist, SquashedGaussian):  # whose logp loses precision at the bounds
        _close(dist.sampled_action_logp(), dist.logp(dist.sample(tf.constant([1, 3]))).numpy(),
               atol=1e-4)


def test_kl_and_sampled_logp_errors():
    dist = Categorical(np.zeros((1, 2), np.float32))
    with pytest.raises(TypeError, match="same type. Received: other of type DiagGaussian"):
        dist.kl(DiagGaussian(np.zeros((1, 2), np.float32)))
    with pytest.raises(ValueError, match="needs a preceding sample"):
        dist.sampled_action_logp()
    with pytest.raises(NotImplementedError):
        TFActionDistribution(np.zeros((1, 2))).deterministic_sample()


@pytest.mark.parametrize(
    "space, expected_class, n",
    [
        (gym.spaces.Discrete(4), Categorical, 4),
        (gym.spaces.MultiDiscrete([2, 5]), MultiCategorical, 7),
        (gym.spaces.Box(-1.0, 1.0, (3,), np.float32), DiagGaussian, 6),
    ],
)
def test_catalog_default_distributions(space, expected_class, n):
    dist_class, num_outputs = ModelCatalog.get_action_dist(space)
    base = dist_class.func if isinstance(dist_class, functools.partial) else dist_class
    assert base is expected_class and num_outputs == n


def test_catalog_box_dist_types():
    box = gym.spaces.Box(np.array([0.0, -1.0]), np.array([2.0, 1.0]), dtype=np.float32)
    assert ModelCatalog.get_action_dist(box, dist_type="deterministic") == (Deterministic, 2)
    dist_class, n = ModelCatalog.get_action_dist(box, dist_type=SquashedGaussian)
    assert n == 4
    mode = dist_class(np.zeros((1, 4), np.float32), None).deterministic_sample()
    _close(mode, [[1.0, 0.0]])


def test_catalog_custom_action_dist():
    class Constant(Deterministic):
        pass

    ModelCatalog.register_custom_action_dist("constant", Constant)
    dist_class, n = ModelCatalog.get_action_dist(
        gym.spaces.Box(-1, 1, (2,), np.float32), {"custom_action_dist": "constant"}
    )
    assert dist_class is Constant and n == 2
    with pytest.raises(ValueError, match="No custom_action_dist registered under 'constnt'.*Did you mean 'constant'"):
        ModelCatalog.get_action_dist(gym.spaces.Discrete(2), {"custom_action_dist": "constnt"})


@pytest.mark.parametrize(
    "space, kwargs, match",
    [
        (gym.spaces.Box(-1, 1, (2, 2), np.float32), {}, "must be 1-D float"),
        (gym.spaces.Box(0, 3, (2,), np.int64), {}, "must be 1-D float"),
        (gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), {"dist_type": SquashedGaussian},
         "needs a bounded Box"),
        (gym.spaces.Box(-1, 1, (2,), np.float32), {"dist_type": "beta"}, "Unknown dist_type"),
        (gym.spaces.MultiDiscrete([[2, 2]]), {}, "1-D nvec"),
        (gym.spaces.MultiBinary(3), {}, "Unsupported action space"),
    ],
)
def test_catalog_rejects_unsupported_action_spaces(space, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelCatalog.get_action_dist(space, **kwargs)


def test_catalog_rejects_discrete_spaces_not_starting_at_zero():
    with pytest.raises(ValueError, match="must start at 0. Received: Discrete"):
        ModelCatalog.get_action_dist(gym.spaces.Discrete(3, start=1))


def test_multi_entropy_and_multi_kl_are_nested_per_child():
    dist_class, n = ModelCatalog.get_action_dist(DICT_SPACE)
    p, q = RNG.normal(size=(2, n)), RNG.normal(size=(2, n))
    dp, dq = dist_class(p.astype(np.float32), None), dist_class(q.astype(np.float32), None)
    entropy, kl = dp.multi_entropy(), dp.multi_kl(dq)
    assert set(entropy) == set(kl) == {"fire", "knobs", "move"}
    _close(entropy["fire"], _np_cat(p[:, :3], q[:, :3], np.zeros(2, int))[1])
    _close(kl["move"], _np_gauss(p[:, 7:], q[:, 7:], np.zeros((2, 2)))[2], atol=1e-4)
    _close(sum(kl.values()), dp.kl(dq).numpy(), atol=1e-5)


def test_squashed_gaussian_clips_log_std():
    x = np.array([[0.1, -0.2]], np.float32)
    clipped = SquashedGaussian(np.array([[0.0, 0.0, -5.0, 2.0]], np.float32)).logp(x)
    extreme = SquashedGaussian(np.array([[0.0, 0.0, -10.0, 7.0]], np.float32)).logp(x)
    _close(extreme, clipped.numpy())


@pytest.mark.parametrize(
    "space, expected",
    [
        (gym.spaces.Discrete(3), (np.int64, (None,))),
        (gym.spaces.Box(-1, 1, (2,), np.float32), (np.float32, (None, 2))),
        (DICT_SPACE, (np.float32, (None, 5))),
        (gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Discrete(3)]), (np.int64, (None, 2))),
    ],
)
def test_catalog_action_shape(space, expected):
    dtype, shape = ModelCatalog.get_action_shape(space)
    assert (dtype, shape) == (np.dtype(expected[0]), expected[1])


def test_catalog_action_shape_rejects_unsupported_space():
    with pytest.raises(ValueError, match="Unsupported action space. Received: Text"):
        ModelCatalog.get_action_shape(gym.spaces.Text(3))


def test_squashed_gaussian_gradients_are_finite_at_the_bounds():
    inputs = tf.Variable(np.array([[3.0, -3.0, -5.0, -5.0]], np.float32))
    with tf.GradientTape() as tape:
        logp = SquashedGaussian(inputs, None, -1.0, 1.0).logp(np.array([[1.0, -1.0]], np.float32))
    assert np.all(np.isfinite(tape.gradient(logp, inputs).numpy()))
