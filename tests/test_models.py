"""Keras models built by the catalog: shapes, value branches, LSTM masking, custom models."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.models.catalog import MODEL_DEFAULTS, ModelCatalog, merge_model_config
from tfrl.models.tf.custom_model import KerasModelWrapper
from tfrl.models.tf.fcnet import FullyConnectedNetwork
from tfrl.models.tf.recurrent_net import LSTMWrapper, RecurrentNetwork, sequences_at_most
from tfrl.models.tf.tf_modelv2 import TFModelV2
from tfrl.models.tf.visionnet import VisionNetwork
from tfrl.models.utils import get_activation_fn, get_filter_config

BOX = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
SMALL = {"fcnet_hiddens": [8, 8]}


@pytest.fixture(autouse=True)
def _seed_keras():
    keras.utils.set_random_seed(0)


def _obs(space, batch):
    space.seed(0)
    prep = ModelCatalog.get_preprocessor_for_space(space)
    return prep.transform_batch([space.sample() for _ in range(batch)]).astype(np.float32)


@pytest.mark.parametrize(
    "obs_space",
    [BOX, gym.spaces.Discrete(5),
     gym.spaces.Dict({"a": BOX, "b": gym.spaces.MultiDiscrete([2, 3])})],
)
@pytest.mark.parametrize("action_space", [gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,))])
def test_fully_connected_shapes(obs_space, action_space):
    _, num_outputs = ModelCatalog.get_action_dist(action_space)
    model = ModelCatalog.get_model(obs_space, action_space, num_outputs, SMALL)
    assert isinstance(model, FullyConnectedNetwork) and not model.is_recurrent
    assert model.num_outputs == num_outputs and model.get_initial_state(3) == []
    dist_inputs, value = model(_obs(obs_space, 5), training=False)
    assert dist_inputs.shape == (5, num_outputs) and value.shape == (5,)


def test_defaults_follow_the_contract():
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {})
    kernels = [w.shape for w in model.trainable_weights if "kernel" in w.path]
    assert kernels[:2] == [(4, 256), (256, 256)]
    assert MODEL_DEFAULTS["vf_share_layers"] is False and MODEL_DEFAULTS["fcnet_activation"] == "tanh"


def test_vision_network_default_filters_and_uint8_images():
    space = gym.spaces.Box(0, 255, (42, 42, 3), np.uint8)
    model = ModelCatalog.get_model(space, gym.spaces.Discrete(4), 4, {"vf_share_layers": True})
    assert isinstance(model, VisionNetwork)
    dist_inputs, value = model(np.full((2, 42, 42, 3), 255, np.uint8))
    assert dist_inputs.shape == (2, 4) and value.shape == (2,)


def test_vision_network_custom_filters_and_post_fcnet():
    space = gym.spaces.Box(0.0, 1.0, (12, 12, 2), np.float32)
    config = {"conv_filters": [[4, [3, 3], 2], [8, [3, 3], 2]], "post_fcnet_hiddens": [16]}
    model = ModelCatalog.get_model(space, gym.spaces.Box(-1, 1, (3,)), 6, config)
    dist_inputs, value = model(np.zeros((3, 12, 12, 2), np.float32))
    assert dist_inputs.shape == (3, 6) and value.shape == (3,)
    assert any("vf_conv1" in w.path for w in model.weights)  # Separate value conv stack.


def test_image_without_default_filters_is_rejected():
    space = gym.spaces.Box(0.0, 1.0, (30, 30, 3), np.float32)
    with pytest.raises(ValueError, match=r"No default conv_filters.*\(30, 30, 3\)"):
        ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, {})
    with pytest.raises(ValueError, match=r"stride, padding\]. Received: \[4, 3\]"):
        ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, {"conv_filters": [[4, 3]]})


@pytest.mark.parametrize("share", [True, False])
def test_value_branch_shared_or_separate(share):
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {**SMALL, "vf_share_layers": share})
    obs = _obs(BOX, 4)
    value_before = model(obs)[1].numpy()
    kernel = model.hidden_layers[0].kernel
    kernel.assign(kernel + 1.0)  # Perturb the first policy hidden layer.
    changed = not np.allclose(model(obs)[1].numpy(), value_before)
    assert changed == share


def test_free_log_std():
    model = ModelCatalog.get_model(BOX, gym.spaces.Box(-1, 1, (2,)), 4, {**SMALL, "free_log_std": True})
    dist_inputs = model(_obs(BOX, 3))[0].numpy()
    np.testing.assert_array_equal(dist_inputs[:, 2:], np.zeros((3, 2)))
    assert any("log_std" in w.path for w in model.trainable_weights)
    with pytest.raises(ValueError, match="free_log_std needs an even num_outputs.*Received: num_outputs=3"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(3), 3, {"free_log_std": True})


LSTM_CONFIG = {"use_lstm": True, "lstm_cell_size": 6, "fcnet_hiddens": [8]}


def _lstm(vf_share_layers=False):
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(3), 3,
                                   {**LSTM_CONFIG, "vf_share_layers": vf_share_layers})
    assert isinstance(model, LSTMWrapper) and model.is_recurrent
    return model


# The state: [h, c] with a shared LSTM, [h, c, h_vf, c_vf] with the value's own LSTM.
SHARE_AND_STATES = [(True, 2), (False, 4)]


@pytest.mark.parametrize("vf_share_layers, num_states", SHARE_AND_STATES)
def test_lstm_shapes_and_initial_state(vf_share_layers, num_states):
    model = _lstm(vf_share_layers)
    state = model.get_initial_state(2)
    assert [s.shape for s in state] == [(2, 6)] * num_states and not np.any(state)
    obs = np.random.default_rng(0).normal(size=(2, 5, 4)).astype(np.float32)
    dist_inputs, value, state_out = model((obs, state, np.array([5, 3], np.int32)))
    assert dist_inputs.shape == (2, 5, 3) and value.shape == (2, 5)
    assert [s.shape for s in state_out] == [(2, 6)] * num_states


@pytest.mark.parametrize("vf_share_layers, num_states", SHARE_AND_STATES)
def test_lstm_padded_steps_do_not_affect_valid_steps_and_state_out(vf_share_layers,
                                                                   num_states):
    model = _lstm(vf_share_layers)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(3, 4, 4)).astype(np.float32)
    seq_lens = np.array([4, 2, 0], np.int32)
    state_in = [rng.normal(size=(3, 6)).astype(np.float32) for _ in range(num_states)]
    dist_inputs, value, state_out = model((obs, state_in, seq_lens))
    noisy = obs.copy()
    noisy[1, 2:] += 100.0  # Garbage at padded steps only.
    noisy[2] += 100.0
    dist_inputs2, value2, state_out2 = model((noisy, state_in, seq_lens))
    valid = np.arange(4)[None, :] < seq_lens[:, None]  # [B, T]
    np.testing.assert_allclose(dist_inputs2.numpy()[valid], dist_inputs.numpy()[valid], atol=1e-6)
    np.testing.assert_allclose(value2.numpy()[valid], value.numpy()[valid], atol=1e-6)
    for s, s2 in zip(state_out, state_out2):
        np.testing.assert_allclose(s2.numpy(), s.numpy(), atol=1e-6)
    # state_out is the state after the last valid step: rerun row 1 on its 2 steps.
    _, _, short = model((obs[1:2, :2], [s[1:2] for s in state_in], np.array([2], np.int32)))
    for s, s_short in zip(state_out, short):
        np.testing.assert_allclose(s.numpy()[1:2], s_short.numpy(), atol=1e-6)
    # A zero-length row keeps its input state.
    for s, s_in in zip(state_out, state_in):
        np.testing.assert_allclose(s.numpy()[2], s_in[2], atol=1e-6)


@pytest.mark.parametrize("vf_share_layers", [False, True])
def test_lstm_post_fcnet_layers_follow_the_lstm(vf_share_layers):
    # fcnet_hiddens [] + post_fcnet_hiddens [5]: obs -> LSTM -> dense 5 (tanh) -> heads,
    # SB3-contrib's MlpLstmPolicy order (net_arch per head after the LSTM).
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(3), 3, {
        **LSTM_CONFIG, "fcnet_hiddens": [], "post_fcnet_hiddens": [5],
        "post_fcnet_activation": "tanh", "vf_share_layers": vf_share_layers})
    shapes = {w.path.split("/", 1)[1]: tuple(w.shape) for w in model.trainable_weights}
    assert shapes["lstm/lstm_cell/kernel"] == (4, 24)  # the LSTM reads the observations
    assert shapes["post_1/kernel"] == (6, 5) and shapes["pi/logits/kernel"] == (5, 3)
    assert shapes["value_out/kernel"] == (5, 1)
    assert ("vf_post_1/kernel" in shapes) == (not vf_share_layers)
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(2, 3, 4)).astype(np.float32)
    seq_lens = np.array([3, 2], np.int32)
    state = [rng.normal(size=(2, 6)).astype(np.float32) for _ in model.get_initial_state(2)]
    dist_inputs, value, _ = model((obs, state, seq_lens))
    mask = tf.sequence_mask(seq_lens, 3)
    out, _, _ = model.lstm(obs, initial_state=state[:2], mask=mask)
    post = np.tanh(out.numpy() @ model.post[0].kernel.numpy() + model.post[0].bias.numpy())
    valid = mask.numpy()
    np.testing.assert_allclose(dist_inputs.numpy()[valid],
                               model.policy_head(post).numpy()[valid], atol=1e-5)
    if vf_share_layers:
        np.testing.assert_allclose(value.numpy()[valid],
                                   model.value_out(post).numpy()[..., 0][valid], atol=1e-5)


def test_lstm_value_has_its_own_lstm_unless_vf_share_layers():
    obs = np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32)
    seq_lens = np.array([3, 2], np.int32)
    for vf_share_layers in (False, True):
        model = _lstm(vf_share_layers)
        pi_layers = model.encoder + [model.lstm, model.policy_head]
        pi_vars = [w for layer in pi_layers for w in layer.trainable_weights]
        with tf.GradientTape(persistent=True) as tape:
            dist_inputs, value, _ = model((obs, model.get_initial_state(2), seq_lens))
            value_sum, logits_sum = tf.reduce_sum(value), tf.reduce_sum(dist_inputs)
        value_grads = tape.gradient(value_sum, pi_vars)
        if vf_share_layers:  # the value reads the policy's encoder and LSTM
            assert not hasattr(model, "vf_lstm")
            assert np.any(tape.gradient(value_sum, model.lstm.trainable_weights[0]).numpy())
            continue
        # Separate: neither output reads the other's layers.
        vf_layers = model.vf_encoder + [model.vf_lstm, model.value_out]
        vf_vars = [w for layer in vf_layers for w in layer.trainable_weights]
        # Each: dense kernel, bias; LSTM kernel, recurrent kernel, bias; head kernel, bias.
        assert len(vf_vars) == len(pi_vars) == 7
        assert len(model.trainable_weights) == 14
        assert all(g is None for g in value_grads)
        assert all(g is None for g in tape.gradient(logits_sum, vf_vars))
        assert all(g is not None for g in tape.gradient(value_sum, vf_vars))


def test_lstm_in_tf_function_and_bad_inputs():
    model = _lstm(vf_share_layers=True)
    call = tf.function(lambda obs, h, c, lens: model((obs, [h, c], lens)), autograph=False)
    h, c = model.get_initial_state(2)
    out = call(tf.zeros((2, 3, 4)), h, c, tf.constant([3, 1]))
    assert out[0].shape == (2, 3, 3)
    with pytest.raises(ValueError, match=r"called with \(obs, state_in, seq_lens\)"):
        model(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r"\(vf_share_layers=False\) takes 4 state tensors; "
                                         r"received 2"):
        _lstm()((np.zeros((2, 3, 4), np.float32), [h, c], np.array([3, 1], np.int32)))


def test_unknown_config_key_names_the_closest_key():
    with pytest.raises(ValueError, match="Received: 'fcnet_hidden'. Did you mean 'fcnet_hiddens'"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"fcnet_hidden": [8]})
    with pytest.raises(ValueError, match="Received: 'zzz'. See MODEL_DEFAULTS"):
        merge_model_config({"zzz": 1})


@pytest.mark.parametrize(
    "config, match",
    [
        ({"no_final_linear": True}, "'no_final_linear'.*not supported by tfrl yet"),
        ({"fcnet_hiddens": [8, 0]}, r"list of positive ints. Received: \[8, 0\]"),
        ({"fcnet_activation": "gelu"}, "Unknown activation. Received: 'gelu'"),
    ],
)
def test_bad_config_values(config, match):
    with pytest.raises(ValueError, match=match):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, config)


class LogitsOnly(keras.Model):
    def __init__(self, num_outputs):
        super().__init__()
        self.out = keras.layers.Dense(num_outputs)

    def call(self, obs, training=False):
        return self.out(obs)


class WithValue(keras.Model):
    """A custom model with RLlib's ModelV2 constructor signature."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name, width=4):
        super().__init__(name=name)
        self.hidden = keras.layers.Dense(width)
        self.pi = keras.layers.Dense(num_outputs)
        self.vf = keras.layers.Dense(1)

    def call(self, obs, training=False):
        x = self.hidden(obs)
        return self.pi(x), self.vf(x)  # value [B, 1]


def test_custom_model_returning_logits_only_gets_zero_value_with_warning():
    with pytest.warns(UserWarning, match="value-based losses .* will not learn"):
        model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": LogitsOnly(2)})
    assert isinstance(model, KerasModelWrapper)
    dist_inputs, value = model(_obs(BOX, 3))
    assert dist_inputs.shape == (3, 2)
    np.testing.assert_array_equal(value.numpy(), np.zeros(3))


def test_registered_custom_model_class_with_value():
    ModelCatalog.register_custom_model("with_value", WithValue)
    config = {"custom_model": "with_value", "custom_model_config": {"width": 7}}
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, config)
    dist_inputs, value = model(_obs(BOX, 3))
    assert dist_inputs.shape == (3, 2) and value.shape == (3,)
    assert model.base_model.hidden.kernel.shape == (4, 7)
    with pytest.raises(ValueError, match="No custom_model registered under 'with_valu'.*Did you mean 'with_value'"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": "with_valu"})


def test_contract_abiding_custom_model_is_used_as_is():
    class Complete(WithValue):
        is_recurrent = False
        num_outputs = 2

        def get_initial_state(self, batch_size=1):
            return []

        def call(self, obs, training=False):
            logits, value = super().call(obs)
            return logits, value[:, 0]

    user_model = Complete(BOX, None, 2, {}, "complete")
    assert ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": user_model}) is user_model


class ThreeOutputs(keras.Model):
    def call(self, obs, training=False):
        return obs, obs, obs


class BadValue(keras.Model):
    def call(self, obs, training=False):
        return obs[:, :2], obs


@pytest.mark.parametrize(
    "user_model, error, match",
    [
        (LogitsOnly(5), ValueError, r"dist_inputs of shape \(2, 5\). Expected \[B, num_outputs\] = \(2, 2\)"),
        (ThreeOutputs(), ValueError, "returned 3 outputs"),
        (BadValue(), ValueError, r"value of shape \(2, 4\). Expected \[B\] or \[B, 1\]"),
        (object(), TypeError, "must be a keras.Model.*Received: object"),
    ],
)
def test_bad_custom_models_are_rejected(user_model, error, match):
    with pytest.raises(error, match=match):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": user_model})


def test_custom_model_with_use_lstm_is_rejected():
    with pytest.raises(ValueError, match="use_lstm=True with a custom_model"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": LogitsOnly(2), "use_lstm": True})


def test_seeded_builds_are_identical():
    keras.utils.set_random_seed(3)
    first = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, SMALL).get_weights()
    keras.utils.set_random_seed(3)
    second = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, SMALL).get_weights()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_helpers_and_get_model_v2():
    assert get_activation_fn("relu") == "relu"
    assert get_filter_config([84, 84, 4])[-1] == [64, [3, 3], 1, "valid"]  # Nature DQN
    with pytest.raises(ValueError, match="Unsupported framework. Received: framework='torch'"):
        get_activation_fn("relu", framework="torch")
    with pytest.raises(ValueError, match="Keras models only. Received: framework='torch'"):
        ModelCatalog.get_model_v2(BOX, gym.spaces.Discrete(2), 2, SMALL, framework="torch")
    model = ModelCatalog.get_model_v2(BOX, gym.spaces.Discrete(2), 2, SMALL, name="m")
    assert model.name == "m"


class TinyRecurrent(keras.Model):
    """A user recurrent model following the recurrent contract itself."""

    is_recurrent = True

    def __init__(self, num_outputs, bad_value=False):
        super().__init__(name="tiny_recurrent")
        self.cell = keras.layers.SimpleRNN(3, return_sequences=True, return_state=True)
        self.pi = keras.layers.Dense(num_outputs)
        self.bad_value = bad_value

    def get_initial_state(self, batch_size=1):
        return [np.zeros((batch_size, 3), np.float32)]

    def call(self, inputs, training=False):
        obs, state, seq_lens = inputs
        out, h = self.cell(obs, initial_state=state[0])
        value = out[..., 0] if not self.bad_value else out
        return self.pi(out), value, [h]


def test_recurrent_custom_model_is_checked_and_used_as_is():
    user_model = TinyRecurrent(2)
    assert ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": user_model}) is user_model
    with pytest.raises(ValueError, match=r"value of shape \(2, 3, 3\). Expected \(2, 3, 2\) and \(2, 3\)"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": TinyRecurrent(2, True)})


def test_custom_model_class_with_wrong_signature():
    with pytest.raises(TypeError, match="Could not construct custom_model LogitsOnly.*ModelV2 signature"):
        ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, {"custom_model": LogitsOnly})


def test_lstm_over_images():
    space = gym.spaces.Box(0, 255, (10, 10, 1), np.uint8)
    config = {"use_lstm": True, "lstm_cell_size": 4}
    model = ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, config)
    dist_inputs, value, _ = model(
        (np.zeros((2, 3, 10, 10, 1), np.uint8), model.get_initial_state(2), np.array([3, 1], np.int32))
    )
    assert dist_inputs.shape == (2, 3, 2) and value.shape == (2, 3)


class RLlibStyleModel(TFModelV2):
    """RLlib's documented custom Keras model pattern, ported by renaming the import."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.inputs = keras.layers.Input(shape=obs_space.shape, name="observations")
        layer_1 = keras.layers.Dense(16, name="my_layer1", activation=tf.nn.relu)(self.inputs)
        layer_out = keras.layers.Dense(num_outputs, name="my_out", activation=None)(layer_1)
        value_out = keras.layers.Dense(1, name="value_out")(layer_1)
        self.base_model = keras.Model(self.inputs, [layer_out, value_out])

    def forward(self, input_dict, state, seq_lens):
        model_out, self._value_out = self.base_model(input_dict["obs"])
        return model_out, state

    def value_function(self):
        return tf.reshape(self._value_out, [-1])


def test_rllib_style_tfmodelv2_custom_model_is_used_as_is():
    ModelCatalog.register_custom_model("rllib_style", RLlibStyleModel)
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(3), 3, {"custom_model": "rllib_style"})
    assert isinstance(model, RLlibStyleModel) and len(model.trainable_weights) == 6
    dist_inputs, value = tf.function(model, autograph=False)(tf.zeros((5, 4)))
    assert dist_inputs.shape == (5, 3) and value.shape == (5,)


def test_tfmodelv2_without_forward_or_value_function():
    class NoForward(TFModelV2):
        pass

    class NoValue(TFModelV2):
        def forward(self, input_dict, state, seq_lens):
            return input_dict["obs_flat"][:, :2], state

    with pytest.raises(NotImplementedError, match="NoForward must implement forward"):
        NoForward(BOX, None, 2, {}, "m")(np.zeros((1, 4), np.float32))
    with pytest.raises(NotImplementedError, match="NoValue has no value_function"):
        NoValue(BOX, None, 2, {}, "m")(np.zeros((1, 4), np.float32))


class RLlibStyleRNN(RecurrentNetwork):
    """An RLlib-style recurrent custom model with a per-item get_initial_state()."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name, cell_size=5):
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.cell_size = cell_size
        self.gru = keras.layers.GRU(cell_size, return_sequences=True, return_state=True)
        self.logits = keras.layers.Dense(num_outputs)
        self.values = keras.layers.Dense(1)

    def forward_rnn(self, inputs, state, seq_lens):
        mask = tf.sequence_mask(seq_lens, tf.shape(inputs)[1])
        out, h = self.gru(inputs, initial_state=state[0], mask=mask)
        self._value_out = self.values(out)  # [B, T, 1]
        return self.logits(out), [h]

    def value_function(self):
        return tf.reshape(self._value_out, [-1])

    def get_initial_state(self):
        return [np.zeros(self.cell_size, np.float32)]


def test_rllib_style_recurrent_network():
    config = {"custom_model": RLlibStyleRNN, "custom_model_config": {"cell_size": 5}}
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(2), 2, config)
    assert model.is_recurrent and [s.shape for s in model.get_initial_state(3)] == [(3, 5)]
    dist_inputs, value, state_out = model(
        (np.zeros((3, 4, 4), np.float32), model.get_initial_state(3), np.array([4, 2, 1], np.int32))
    )
    assert dist_inputs.shape == (3, 4, 2) and value.shape == (3, 4) and state_out[0].shape == (3, 5)
    with pytest.raises(NotImplementedError, match="must implement forward_rnn"):
        RecurrentNetwork(BOX, None, 2, {}, "r")((np.zeros((1, 1, 4)), [], np.ones(1, np.int32)))


def test_rllib_keys_tfrl_does_not_implement_are_named():
    merge_model_config({"attention_dim": 32, "conv_kernel_initializer": None})
    with pytest.raises(ValueError, match="'conv_kernel_initializer'.*not supported by tfrl yet"):
        merge_model_config({"conv_kernel_initializer": "xavier_uniform"})


def test_fcnet_weights_initializer_sets_the_hidden_kernels():
    space, actions = gym.spaces.Box(-1.0, 1.0, (8,)), gym.spaces.Discrete(2)
    config = merge_model_config({"fcnet_hiddens": [16, 16], "fcnet_weights_initializer":
                                 "orthogonal", "fcnet_weights_initializer_config": {"gain": 2.0}})
    keras.utils.set_random_seed(0)
    model = ModelCatalog.get_model(space, actions, 2, config)
    model(np.zeros((1, 8), np.float32))
    hidden = [layer for layer in model.hidden_layers + model.value_layers]
    assert len(hidden) == 4
    for layer in hidden:
        w = np.asarray(layer.kernel)  # orthogonal with gain 2: W^T W = 4 I (or W W^T)
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-4)
    # The default (normc) gives unit-norm columns, not orthogonal ones.
    keras.utils.set_random_seed(0)
    default = ModelCatalog.get_model(space, actions, 2, merge_model_config({"fcnet_hiddens": [16]}))
    default(np.zeros((1, 8), np.float32))
    w = np.asarray(default.hidden_layers[0].kernel)
    np.testing.assert_allclose(np.linalg.norm(w, axis=0), 1.0, rtol=1e-5)


def test_fcnet_weights_initializer_errors():
    space, actions = gym.spaces.Box(-1.0, 1.0, (8,)), gym.spaces.Discrete(2)
    with pytest.raises(ValueError, match="Unknown or misconfigured weights initializer 'nope'"):
        ModelCatalog.get_model(space, actions, 2, merge_model_config(
            {"fcnet_weights_initializer": "nope"}))
    with pytest.raises(ValueError, match="needs an initializer"):
        ModelCatalog.get_model(space, actions, 2, merge_model_config(
            {"fcnet_weights_initializer_config": {"gain": 2.0}}))
    with pytest.raises(TypeError, match="must be a Keras initializer name"):
        ModelCatalog.get_model(space, actions, 2, merge_model_config(
            {"fcnet_weights_initializer": 3}))


def _lstm_kernels(model_config):
    """{name: (kernel, recurrent_kernel, bias)} of a built 8-cell LSTM wrapper's LSTMs."""
    space, actions = gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Discrete(2)
    config = merge_model_config({"use_lstm": True, "lstm_cell_size": 8, "fcnet_hiddens": [],
                                 **model_config})
    keras.utils.set_random_seed(0)
    model = ModelCatalog.get_model(space, actions, 2, config)
    model((np.zeros((1, 2, 3), np.float32), model.get_initial_state(1), np.array([2], np.int32)))
    return {lstm.name: [np.asarray(w) for w in (lstm.cell.kernel, lstm.cell.recurrent_kernel,
                                                 lstm.cell.bias)]
            for lstm in (model.lstm, model.vf_lstm)}


def test_lstm_initializers_set_the_lstm_kernels_and_bias():
    # Default: Keras' (Glorot input kernel, orthogonal recurrent kernel, forget bias 1).
    for kernel, recurrent, bias in _lstm_kernels({}).values():
        np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(8), atol=1e-5)
        np.testing.assert_array_equal(bias, np.repeat([0.0, 1.0, 0.0, 0.0], 8))
    # PyTorch's nn.LSTM init (SB3-contrib's RecurrentPPO leaves its LSTMs at it):
    # every weight and bias uniform within +-1/sqrt(cells), no forget-gate offset.
    k = 1 / 8 ** 0.5
    uniform = {"minval": -k, "maxval": k}
    got = _lstm_kernels({"lstm_weights_initializer": "random_uniform",
                         "lstm_weights_initializer_config": uniform,
                         "lstm_bias_initializer": "random_uniform",
                         "lstm_bias_initializer_config": uniform})
    assert sorted(got) == ["lstm", "vf_lstm"]
    for kernel, recurrent, bias in got.values():
        for w in (kernel, recurrent, bias):
            assert np.abs(w).max() <= k and np.abs(w).max() > 0.8 * k, np.abs(w).max()
            assert abs(w.mean()) < 0.3 * k  # not the forget-gate ones
        assert not np.allclose(kernel[:, :8], recurrent[:3, :8])  # drawn apart
    assert not np.allclose(got["lstm"][1], got["vf_lstm"][1])
    # Weights alone: the bias keeps Keras' default.
    only = _lstm_kernels({"lstm_weights_initializer": "orthogonal",
                          "lstm_weights_initializer_config": {"gain": 2.0}})["lstm"]
    np.testing.assert_allclose(only[1] @ only[1].T, 4.0 * np.eye(8), atol=1e-4)
    np.testing.assert_array_equal(only[2], np.repeat([0.0, 1.0, 0.0, 0.0], 8))
    with pytest.raises(ValueError, match="lstm_bias_initializer=None.*Set lstm_bias_initializer"):
        _lstm_kernels({"lstm_bias_initializer_config": uniform})
    with pytest.raises(ValueError, match="Unknown or misconfigured weights initializer 'nope'"):
        _lstm_kernels({"lstm_weights_initializer": "nope"})


def test_custom_model_classes_get_the_preprocessed_obs_space():
    seen = {}

    class Probe(RLlibStyleModel):
        def __init__(self, obs_space, *args):
            seen["space"] = obs_space
            super().__init__(obs_space, *args)

    model = ModelCatalog.get_model(gym.spaces.Discrete(5), gym.spaces.Discrete(2), 2, {"custom_model": Probe})
    assert seen["space"].shape == (5,) and seen["space"].original_space == gym.spaces.Discrete(5)
    assert model(np.eye(5, dtype=np.float32))[0].shape == (5, 2)


@pytest.mark.parametrize(
    "config, action_space",
    [
        ({**SMALL, "free_log_std": True}, gym.spaces.Box(-1, 1, (2,))),
        (SMALL, gym.spaces.Dict({"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(-1, 1, (1,))})),
        (LSTM_CONFIG, gym.spaces.MultiDiscrete([2, 3])),
    ],
)
def test_every_weight_gets_a_gradient_through_the_distribution(config, action_space):
    dist_class, num_outputs = ModelCatalog.get_action_dist(action_space)
    model = ModelCatalog.get_model(BOX, action_space, num_outputs, config)
    obs = np.random.default_rng(0).normal(size=(3, 2, 4)).astype(np.float32)
    with tf.GradientTape() as tape:
        if model.is_recurrent:
            inputs = (obs, model.get_initial_state(3), np.array([2, 1, 2], np.int32))
            dist_inputs, value, _ = model(inputs)
        else:
            dist_inputs, value = model(obs[:, 0])
        dist = dist_class(dist_inputs, model)
        loss = -tf.reduce_mean(dist.logp(dist.sample())) + tf.reduce_mean(value**2)
        loss -= tf.reduce_mean(dist.entropy())
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)


@pytest.mark.parametrize(
    "action_space, prev_actions",
    [
        (gym.spaces.Discrete(3), np.array([[0, 2, 1]])),
        (gym.spaces.MultiDiscrete([2, 3]), np.array([[[0, 2], [1, 1], [1, 0]]])),
        (gym.spaces.Box(-1, 1, (2,)), np.full((1, 3, 2), 0.5, np.float32)),
    ],
)
def test_lstm_with_prev_action_and_reward(action_space, prev_actions):
    config = {**LSTM_CONFIG, "lstm_use_prev_action": True, "lstm_use_prev_reward": True}
    dist_class, n = ModelCatalog.get_action_dist(action_space)
    model = ModelCatalog.get_model(BOX, action_space, n, config)
    inputs = (np.ones((1, 3, 4), np.float32), model.get_initial_state(1), np.array([3], np.int32))
    zeros = model.prev_input_kwargs(1, 3)
    assert set(zeros) == {"prev_actions", "prev_rewards"}
    base = model(inputs, **zeros)[0].numpy()
    with_actions = model(inputs, prev_actions=prev_actions, prev_rewards=zeros["prev_rewards"])
    with_rewards = model(inputs, prev_actions=zeros["prev_actions"], prev_rewards=np.ones((1, 3)))
    assert with_actions[0].shape == (1, 3, n)
    assert not np.allclose(with_actions[0].numpy(), base)
    assert not np.allclose(with_rewards[0].numpy(), base)
    with pytest.raises(ValueError, match="lstm_use_prev_reward=True and needs prev_rewards"):
        model(inputs, prev_actions=prev_actions)


def test_lstm_prev_action_needs_a_simple_action_space():
    space = gym.spaces.Tuple([gym.spaces.Discrete(2)])
    with pytest.raises(ValueError, match="lstm_use_prev_action=True supports Discrete"):
        ModelCatalog.get_model(BOX, space, 2, {**LSTM_CONFIG, "lstm_use_prev_action": True})


def test_bfloat16_conv_encoder_computes_in_bf16_and_hands_float32_to_the_heads():
    space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    obs = np.random.default_rng(0).integers(0, 256, (16, 84, 84, 4), dtype=np.uint8)
    models = {}
    for dtype in ("float32", "bfloat16"):
        keras.utils.set_random_seed(0)
        models[dtype] = ModelCatalog.get_model(
            space, gym.spaces.Discrete(4), 4, {"conv_compute_dtype": dtype, "vf_share_layers": True})
        models[dtype](obs)
    models["bfloat16"].set_weights(models["float32"].get_weights())  # same float32 weights
    (logits32, value32), (logits16, value16) = models["float32"](obs), models["bfloat16"](obs)
    assert logits16.dtype == value16.dtype == tf.float32
    convs = [layer for layer in models["bfloat16"].conv_layers if "conv" in layer.name]
    assert len(convs) == 4  # 3 convs + the Nature net's dense 512
    assert all(layer.compute_dtype == "bfloat16" and layer.kernel.dtype == "float32"
               for layer in convs)
    # bf16 math: close to float32 (8-bit significands), not identical.
    diff = np.abs(value16.numpy() - value32.numpy())
    assert 0 < diff.max() < 0.05 * max(1.0, np.abs(value32.numpy()).max())
    np.testing.assert_allclose(logits16, logits32, atol=1e-3)
    with pytest.raises(ValueError, match=r"conv_compute_dtype'\] must be one of \['float32', "
                                         r"'bfloat16'\]. Received: 'float16'"):
        merge_model_config({"conv_compute_dtype": "float16"})


@pytest.mark.slow
def test_lstm_unrolled_equals_the_loop():
    # Sequences up to max_seq_len (4 here) run unrolled; a T unknown at tracing runs its
    # first 4 steps unrolled (padded with masked steps) and any more in Keras' symbolic
    # loop (under a tf.cond), as does a known T over 4 or unroll_len 0. All give the
    # same outputs, states and gradients at every valid step.
    model = ModelCatalog.get_model(BOX, gym.spaces.Discrete(3), 3, {
        **LSTM_CONFIG, "max_seq_len": 4, "vf_share_layers": False})
    assert model.unroll_len == 4
    rng = np.random.default_rng(3)
    seen = []  # (T as Keras' LSTM sees it, whether it unrolls): its loop, spied on

    def spy(lstm):
        inner_loop = lstm.inner_loop

        def spied(sequences, *args, **kwargs):
            seen.append((sequences.shape[1], lstm.unroll))
            return inner_loop(sequences, *args, **kwargs)
        return spied

    for lstm in (model.lstm, model.vf_lstm):
        lstm.inner_loop = spy(lstm)

    def forward_and_grads(obs, lens, *state):
        with tf.GradientTape() as tape:
            dist_inputs, value, state_out = model((obs, list(state), lens))
            mask = tf.cast(tf.sequence_mask(lens, tf.shape(obs)[1]), tf.float32)
            loss = tf.reduce_sum((tf.reduce_sum(dist_inputs ** 2, -1) + value) * mask)
        return dist_inputs, value, state_out, tape.gradient(loss, model.trainable_weights)

    signature = [tf.TensorSpec((None, None, 4), tf.float32),
                 tf.TensorSpec((None,), tf.int32)] + [tf.TensorSpec((None, 6), tf.float32)] * 4
    traced = tf.function(forward_and_grads, autograph=False,
                         input_signature=signature)  # T unknown: padded, under tf.cond
    # Traced under sequences_at_most(4) (as the train step traces for batches of
    # sequences up to max_seq_len): the 4 unrolled steps alone, no loop.
    bounded = tf.function(forward_and_grads, autograph=False, input_signature=signature)

    def run(fn, args, unroll_len):
        model.unroll_len = unroll_len
        del seen[:]
        try:
            return tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
        finally:
            model.unroll_len = 4

    for max_time, seq_lens in ((3, [3, 1, 0]), (4, [4, 2, 3]), (6, [6, 5, 1])):
        obs = rng.normal(size=(3, max_time, 4)).astype(np.float32)
        lens = np.array(seq_lens, np.int32)
        args = [obs, lens] + [rng.normal(size=(3, 6)).astype(np.float32) for _ in range(4)]
        valid = np.arange(max_time)[None, :] < lens[:, None]
        loop = run(forward_and_grads, args, 0)  # eager, Keras' loop
        assert seen == [(max_time, False)] * 2
        for fn in (forward_and_grads, traced):  # eager (static T), traced (T unknown)
            unrolled = run(fn, args, 4)
            if fn is forward_and_grads:
                assert seen == [(max_time, max_time <= 4)] * 2
            elif max_time == 3:  # traced once: 4 steps unrolled, a loop for any more
                assert seen == [(4, True), (None, False)] * 2
            assert not model.lstm.unroll and not model.vf_lstm.unroll  # restored
            np.testing.assert_allclose(unrolled[0][valid], loop[0][valid], atol=1e-6)
            np.testing.assert_allclose(unrolled[1][valid], loop[1][valid], atol=1e-6)
            for a, b in zip(unrolled[2] + unrolled[3], loop[2] + loop[3]):
                np.testing.assert_allclose(a, b, atol=1e-5)
        if max_time <= 4:  # bit for bit what the traced function with the loop gives
            with sequences_at_most(4):
                head_only = run(bounded, args, 4)
            if max_time == 3:  # traced once
                assert seen == [(4, True)] * 2
            for a, b in zip(tf.nest.flatten(head_only), tf.nest.flatten(unrolled)):
                np.testing.assert_array_equal(a, b)
