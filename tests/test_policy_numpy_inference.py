"""The numpy inference path of dense TFPolicies: the compiled path's outputs, fresh weights."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import OBS_SPACE, PGPolicy, recurrent_policy
from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf import tf_action_dist as dists
from tfrl.policy import numpy_inference
from tfrl.policy.tf_policy import TFPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
BOUNDED = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
CASES = {  # name -> (action space, dist_type, model config)
    "categorical_tanh": (gym.spaces.Discrete(3), None, {"fcnet_activation": "tanh"}),
    "multi_categorical_relu": (gym.spaces.MultiDiscrete([2, 4]), None,
                               {"fcnet_activation": "relu", "vf_share_layers": True}),
    "gaussian_swish": (gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), None,
                       {"fcnet_activation": "swish"}),
    "gaussian_free_log_std_elu": (gym.spaces.Box(-1.0, 1.0, (3,), np.float32), None,
                                  {"fcnet_activation": "elu", "free_log_std": True}),
    "squashed_linear": (BOUNDED, dists.SquashedGaussian, {"fcnet_activation": "linear"}),
    "deterministic": (gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "deterministic", {}),
    # The policy and value networks evaluated together with one hidden layer (no deeper
    # stacked layers), and no hidden layer at all (evaluated apart).
    "categorical_one_hidden": (gym.spaces.Discrete(4), None, {"fcnet_hiddens": [16]}),
    "gaussian_no_hidden": (gym.spaces.Box(-1.0, 1.0, (2,), np.float32), None,
                           {"fcnet_hiddens": []}),
}


class CatalogPolicy(TFPolicy):
    """Catalog model and distribution (`dist_type` from the config), a PG loss."""

    def make_action_distribution(self):
        return ModelCatalog.get_action_dist(self.action_space, self.config["model"],
                                            dist_type=self.config.get("dist_type"))

    def make_optimizer(self):
        return keras.optimizers.SGD(self.config["lr"])

    def loss(self, model, dist_class, train_batch):
        dist_inputs, value = model(train_batch["obs"], training=True)
        return (-self.global_mean(dist_inputs) * 0.1
                + self.global_mean((value - train_batch["advantages"]) ** 2))


def _policy(name, inference="numpy", seed=0, **config):
    space, dist_type, model = CASES[name]
    keras.utils.set_random_seed(seed)
    return CatalogPolicy(OBS, space, {
        "seed": seed, "lr": 0.1, "inference": inference, "dist_type": dist_type,
        "model": {"fcnet_hiddens": [16, 8], **model}, **config})


def _obs(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n, 5)).astype(np.float32)


def _pair(name):
    fast, compiled = _policy(name), _policy(name, "tf")
    compiled.set_weights(fast.get_weights())
    assert fast.inference == "numpy" and compiled.inference == "tf"
    return fast, compiled


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_path_returns_the_compiled_outputs(name):
    fast, compiled = _pair(name)
    obs = _obs(7)
    for explore in (False, True):
        got = fast.compute_actions(obs, explore=explore)
        want = compiled.compute_actions(obs, explore=explore)
        assert got[1] == want[1] == []
        assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
        assert sorted(got[2]) == sorted(want[2])
        for key, value in want[2].items():
            assert got[2][key].dtype == value.dtype and got[2][key].shape == value.shape, key
        for key in ("action_dist_inputs", "vf_preds"):
            np.testing.assert_allclose(got[2][key], want[2][key], atol=1e-5)
        if not explore:
            np.testing.assert_allclose(got[0], want[0], atol=1e-6, rtol=0)
            np.testing.assert_array_equal(got[2]["action_logp"], want[2]["action_logp"])
        else:
            # The sampled actions' logp is the distribution's (checked with the TF class).
            logp = fast.dist_class(tf.constant(got[2]["action_dist_inputs"])).logp(got[0])
            np.testing.assert_allclose(got[2]["action_logp"], logp.numpy(), atol=1e-4)
            np.testing.assert_allclose(got[2]["action_prob"], np.exp(got[2]["action_logp"]),
                                       rtol=1e-6)
    np.testing.assert_array_equal(fast.value(obs), fast.compute_actions(obs)[2]["vf_preds"])
    np.testing.assert_allclose(compiled.value(obs), fast.value(obs), atol=1e-5)
    assert compiled.value(obs).dtype == fast.value(obs).dtype == np.float32
    assert fast.num_traces["compute_actions"] == fast.num_traces["value"] == 0


def test_value_equals_vf_preds_on_the_compiled_path():
    policy = _policy("categorical_tanh", "tf")
    obs = _obs(6)
    np.testing.assert_array_equal(policy.value(obs), policy.compute_actions(obs)[2]["vf_preds"])
    _, value = policy.model(obs)
    np.testing.assert_allclose(policy.value(obs), value.numpy(), atol=1e-6)
    for i in range(5):
        policy.value(_obs(1 + i, seed=i))
    assert policy.num_traces["value"] == 1


def _chi_square(counts, probs):
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_sampled_categorical_frequencies_match_the_distribution():
    policy = _policy("multi_categorical_relu")
    obs = np.repeat(_obs(1), 40000, axis=0)
    actions, _, extras = policy.compute_actions(obs, explore=True)
    logits = extras["action_dist_inputs"][0]
    for i, (lo, hi) in enumerate(((0, 2), (2, 6))):
        probs = np.exp(logits[lo:hi]) / np.exp(logits[lo:hi]).sum()
        counts = np.bincount(actions[:, i], minlength=hi - lo)
        # 99.9% quantiles of chi-square with 1 and 3 degrees of freedom: 10.8, 16.3.
        assert _chi_square(counts, probs) < (10.8 if hi - lo == 2 else 16.3)


@pytest.mark.parametrize("name", ["gaussian_free_log_std_elu", "squashed_linear"])
def test_sampled_gaussian_moments_match_the_distribution(name):
    policy = _policy(name)
    obs = np.repeat(_obs(1), 40000, axis=0)
    actions, _, extras = policy.compute_actions(obs, explore=True)
    mean, log_std = np.split(extras["action_dist_inputs"][0], 2)
    if name == "squashed_linear":
        log_std = np.clip(log_std, -5.0, 2.0)
        low, high = BOUNDED.low, BOUNDED.high
        assert ((actions >= low) & (actions <= high)).all()
        actions = np.arctanh(np.clip((actions - low) / (high - low) * 2 - 1, -1 + 1e-6, 1 - 1e-6))
    std_err = np.exp(log_std) / np.sqrt(len(actions))
    assert (np.abs(actions.mean(0) - mean) < 5 * std_err).all()
    np.testing.assert_allclose(actions.std(0), np.exp(log_std), rtol=0.03)


def test_weights_are_recopied_after_every_change(tmp_path):
    fast, compiled = _pair("categorical_tanh")
    obs = _obs(8)
    batch = {"obs": obs, "advantages": np.ones(8, np.float32)}

    def check():
        _, value = fast.model(obs)
        np.testing.assert_allclose(fast.value(obs), value.numpy(), atol=1e-5)

    check()
    fast.learn_on_batch(batch)
    check()
    grads, _ = fast.compute_gradients(batch)
    fast.apply_gradients(grads)
    check()
    fast.export_checkpoint(str(tmp_path / "ckpt"))
    fast.set_weights(compiled.get_weights())
    check()
    fast.import_checkpoint(str(tmp_path / "ckpt"))
    check()
    fast.set_state(compiled.get_state())
    check()
    assert fast.weights_version == 5


def test_sampling_is_seeded():
    a, b, c = (_policy("gaussian_swish", seed=s) for s in (0, 0, 1))
    obs = _obs(4)
    runs = [np.concatenate([p.compute_actions(obs)[0] for _ in range(3)]) for p in (a, b, c)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])


def test_restored_policy_samples_the_same_actions():
    source = _policy("categorical_tanh")
    obs = _obs(16)
    source.compute_actions(obs)
    restored = _policy("categorical_tanh", seed=5)
    restored.set_state(source.get_state())
    for _ in range(3):
        np.testing.assert_array_equal(restored.compute_actions(obs)[0],
                                      source.compute_actions(obs)[0])


def test_inference_config_and_errors():
    with pytest.raises(ValueError, match=r"config\[.inference.\]=.numpy. is not supported for "
                                         r"PGPolicy: the "
                                         r"model is a TinyModel, not the catalog's "
                                         r"FullyConnectedNetwork"):
        PGPolicy(OBS_SPACE, gym.spaces.Discrete(2), {"inference": "numpy"})
    with pytest.raises(ValueError, match=r"not supported for RecurrentPG: the model is a "
                                         r"LSTMWrapper"):
        recurrent_policy(inference="numpy")
    with pytest.raises(ValueError, match=r"the action distribution 'MultiActionDistribution' is "
                                         r"not one of \['Categorical', "):
        TFPolicy(OBS, gym.spaces.Tuple([gym.spaces.Discrete(2)]), {"inference": "numpy"})

    class WithExtras(CatalogPolicy):
        def extra_action_out(self, input_dict, state_batches, model, action_dist):
            return {"obs_sum": tf.reduce_sum(input_dict["obs"], axis=-1)}

    with pytest.raises(ValueError, match=r"WithExtras overrides extra_action_out"):
        WithExtras(OBS, gym.spaces.Discrete(2), {"inference": "numpy"})
    assert WithExtras(OBS, gym.spaces.Discrete(2), {}).inference == "tf"
    assert PGPolicy(OBS_SPACE, gym.spaces.Discrete(2), {}).inference == "tf"
    with pytest.raises(ValueError, match=r"config\['inference'\] must be 'auto', 'tf' or 'numpy'; "
                                         r"received 'jax'"):
        TFPolicy(OBS, gym.spaces.Discrete(2), {"inference": "jax"})


def test_numpy_path_checks_its_input():
    policy = _policy("categorical_tanh")
    with pytest.raises(ValueError, match=r"obs_batch must have shape \[B, 5\] .*received shape "
                                         r"\(2, 4\)"):
        policy.compute_actions(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"obs_batch must have shape \[B, 5\] .*received shape "
                                         r"\(2, 5, 1\)"):
        policy.compute_actions(np.zeros((2, 5, 1), np.float32))
    with pytest.raises(ValueError, match=r"value\(\): CatalogPolicy has 0 state tensor\(s\); "
                                         r"received 1"):
        policy.value(np.zeros((2, 5), np.float32), [np.zeros((2, 3))])
    actions, _, extras = policy.compute_actions(np.zeros((2, 5), np.float64).tolist())
    assert actions.shape == (2,) and extras["vf_preds"].dtype == np.float32
    action, _, extras = policy.compute_single_action(np.zeros(5, np.float32), timestep=9)
    assert action.shape == () and extras["vf_preds"].shape == ()
    assert policy.global_timestep == 2 + 1  # rows acted on; timestep=9 was that call's step


# ----------------------------------------------------------- layer stacks (convs)

def _stack(input_shape, *layers):
    model = keras.Sequential([keras.Input(input_shape), *layers])
    rng = np.random.default_rng(5)
    for v in model.weights:  # non-zero biases, so a misplaced bias shows
        v.assign(rng.normal(size=v.shape).astype(np.float32) * 0.3)
    return model


@pytest.mark.parametrize("input_shape, layers", [
    ((10, 10, 4), lambda: [keras.layers.Conv2D(16, 3, activation="relu"),
                           keras.layers.Flatten(), keras.layers.Dense(8, "tanh")]),
    # "same" padding with strides that leave an odd total pad (TF puts the extra after),
    # a non-square kernel, a 2-pixel stride, and a Rescaling in front.
    ((7, 9, 3), lambda: [keras.layers.Rescaling(1 / 255.0, offset=0.5),
                         keras.layers.Conv2D(5, (3, 2), strides=2, padding="same",
                                             activation="elu"),
                         keras.layers.Conv2D(4, 2, strides=(1, 2), padding="same"),
                         keras.layers.Flatten(), keras.layers.Dense(3)]),
    # channels-first observations: the catalog's Permute to channels-last first.
    ((3, 6, 6), lambda: [keras.layers.Permute((2, 3, 1)),
                         keras.layers.Conv2D(4, 3, padding="valid", activation="swish"),
                         keras.layers.Flatten()]),
])
def test_a_layer_stack_in_numpy_equals_keras(input_shape, layers):
    model = _stack(input_shape, *layers())
    assert numpy_inference.stack_problem(model.layers, input_shape) is None
    fns = numpy_inference.stack_params(
        iter(numpy_inference.WeightReader(
            numpy_inference.stack_variables(model.layers)).read()), model.layers)
    x = np.random.default_rng(0).uniform(0, 255, (6,) + input_shape).astype(np.float32)
    want = model(x).numpy()
    got = numpy_inference.stack_forward(x, fns)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_layer_stack_numpy_cannot_run_says_which_layer_and_why():
    problem = numpy_inference.stack_problem
    big = _stack((84, 84, 4), keras.layers.Conv2D(32, 8, strides=4), keras.layers.Flatten())
    assert "multiply-adds per observation" in problem(big.layers, (84, 84, 4))
    pool = _stack((8, 8, 2), keras.layers.MaxPooling2D(), keras.layers.Flatten())
    assert problem(pool.layers, (8, 8, 2)).endswith(
        "is a MaxPooling2D (numpy has Dense, Conv2D, Flatten)")
    dilated = _stack((8, 8, 2), keras.layers.Conv2D(2, 3, dilation_rate=2, name="dil"))
    assert problem(dilated.layers, (8, 8, 2)).startswith("layer dil is a Conv2D with settings")
    gelu = _stack((4,), keras.layers.Dense(3, activation="gelu", name="g"))
    assert problem(gelu.layers, (4,)).startswith("layer g has activation")


def test_a_vision_policy_with_a_small_encoder_acts_in_numpy_as_in_tf():
    # MinAtar-sized frames, a separate value encoder: actions, logp, values as in TF
    # (sampling drawn from the same seeded generator is checked by the dense cases).
    frames = gym.spaces.Box(0, 1, (10, 10, 4), bool)
    config = {"model": {"conv_filters": None, "vf_share_layers": False}, "seed": 3}
    policies = [CatalogPolicy(frames, gym.spaces.Discrete(3), {**config, "inference": m})
                for m in ("auto", "tf")]
    assert [p.inference for p in policies] == ["numpy", "tf"]
    policies[1].set_weights(policies[0].get_weights())
    obs = np.random.default_rng(2).random((7, 10, 10, 4)) < 0.3
    (a, _, ea), (b, _, eb) = [p.compute_actions(obs, explore=False) for p in policies]
    np.testing.assert_array_equal(a, b)
    for key in ("action_dist_inputs", "vf_preds"):
        np.testing.assert_allclose(ea[key], eb[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(policies[0].value(obs), eb["vf_preds"], rtol=1e-5, atol=1e-5)
    # Nature DQN's encoder on 84x84 frames acts in TF (numpy is slower there).
    atari = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    assert CatalogPolicy(atari, gym.spaces.Discrete(3), config).inference == "tf"
