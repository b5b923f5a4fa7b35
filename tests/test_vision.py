"""Pixels: the catalog's conv models (layout, scaling, initialization, defaults) and uint8
image observations kept one byte per pixel from the env to the model's input."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.data.sample_batch import SampleBatch, concat_samples
from tfrl.serving import wire_format
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.models.catalog import MODEL_DEFAULTS, ModelCatalog, merge_model_config
from tfrl.models.tf.visionnet import VisionNetwork, image_layout
from tfrl.models.utils import get_default_encoder

FRAMES = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)


def _frames(batch, shape=(84, 84, 4), seed=0):
    return np.random.default_rng(seed).integers(0, 256, (batch,) + tuple(shape), dtype=np.uint8)


def _entropy(logits):
    p = tf.nn.softmax(logits).numpy().astype(np.float64)
    return -(p * np.log(p)).sum(-1)  # [B]


class FrameEnv(gym.Env):
    """Random uint8 frames `shape`, 3 actions, episodes of `length` steps."""

    def __init__(self, shape=(84, 84, 4), length=7):
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), 1.0, self.t >= self.length, False, {}


@pytest.mark.parametrize("num_actions", [4, 18])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fresh_policy_on_frames_is_near_uniform_with_small_values(num_actions, seed):
    keras.utils.set_random_seed(seed)
    policy = PPOTFPolicy(FRAMES, gym.spaces.Discrete(num_actions), {"seed": seed})
    assert isinstance(policy.model, VisionNetwork)
    _, _, extras = policy.compute_actions(_frames(32, seed=seed))
    entropy = _entropy(extras["action_dist_inputs"])  # [B]
    # Within 1 % of log(n) for every frame (measured: > 99.99 % for these seeds).
    assert np.all(entropy > 0.99 * np.log(num_actions)), entropy.min() / np.log(num_actions)
    assert np.all(np.abs(extras["vf_preds"]) < 2.0), np.abs(extras["vf_preds"]).max()


def test_uint8_frames_are_scaled_inside_the_model_unless_disabled():
    keras.utils.set_random_seed(0)
    model = ModelCatalog.get_model(FRAMES, gym.spaces.Discrete(4), 4, {})
    frames = _frames(4)
    # The model reads frames as values in [0, 1]: a float copy /255 acts the same.
    float_space = gym.spaces.Box(0.0, 1.0, (84, 84, 4), np.float32)
    keras.utils.set_random_seed(0)
    float_model = ModelCatalog.get_model(float_space, gym.spaces.Discrete(4), 4, {})
    np.testing.assert_allclose(model(frames)[0], float_model(frames / 255.0)[0], atol=1e-6)
    keras.utils.set_random_seed(0)
    raw = ModelCatalog.get_model(FRAMES, gym.spaces.Discrete(4), 4, {"normalize_images": False})
    np.testing.assert_allclose(raw(frames)[0], float_model(frames.astype(np.float32))[0],
                               rtol=1e-4, atol=1e-4)
    assert MODEL_DEFAULTS["normalize_images"] is True
    with pytest.raises(ValueError,
                       match=r"'normalize_images'\] must be True or False. Received: 'yes'"):
        merge_model_config({"normalize_images": "yes"})


def test_default_encoders_nature_for_84_and_minatar_for_10():
    keras.utils.set_random_seed(0)
    model = ModelCatalog.get_model(FRAMES, gym.spaces.Discrete(4), 4, {"vf_share_layers": True})
    kernels = [tuple(w.shape) for w in model.trainable_weights if "kernel" in w.path]
    # Nature DQN: 84 -> 20 -> 9 -> 7 (valid padding), 7 * 7 * 64 = 3136 -> 512.
    assert kernels == [(8, 8, 4, 32), (4, 4, 32, 64), (3, 3, 64, 64), (3136, 512), (512, 4),
                       (512, 1)]
    small = gym.spaces.Box(0, 1, (10, 10, 6), bool)
    model = ModelCatalog.get_model(small, gym.spaces.Discrete(3), 3, {"vf_share_layers": True})
    kernels = [tuple(w.shape) for w in model.trainable_weights if "kernel" in w.path]
    assert kernels == [(3, 3, 6, 16), (1024, 128), (128, 3), (128, 1)]
    assert get_default_encoder((84, 84, 1))[1] == [512]


def test_conv_filters_take_an_optional_padding():
    space = gym.spaces.Box(0.0, 1.0, (12, 12, 2), np.float32)
    config = {"conv_filters": [[4, [3, 3], 1, "valid"], [8, [3, 3], 2, "same"]],
              "vf_share_layers": True}
    model = ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, config)
    # 12 -(3x3 valid)-> 10 -(same, stride 2)-> 5: 5 * 5 * 8 = 200 features.
    assert model.policy_head.dense.kernel.shape == (200, 2)
    with pytest.raises(ValueError, match=r"padding must be 'same' or 'valid'. Received: 'full'"):
        ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2,
                               {"conv_filters": [[4, [3, 3], 1, "full"]]})
    with pytest.raises(ValueError, match=r"\[out_channels, kernel, stride, padding\]. Received: "
                                         r"\[4, \[3, 3\], 1, 'valid', 0\]"):
        ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2,
                               {"conv_filters": [[4, [3, 3], 1, "valid", 0]]})


def test_channels_first_frames_are_transposed_by_the_documented_rule():
    assert image_layout((4, 84, 84)) == "channels_first"
    assert image_layout((1, 10, 10)) == "channels_first"
    assert image_layout((84, 84, 4)) == "channels_last"
    assert image_layout((4, 4, 4)) == "channels_last"  # H, W not > 4: read as channels-last
    assert image_layout((4, 84, 84), "channels_last") == "channels_last"
    first = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    keras.utils.set_random_seed(0)
    model_first = ModelCatalog.get_model(first, gym.spaces.Discrete(4), 4, {})
    keras.utils.set_random_seed(0)
    model_last = ModelCatalog.get_model(FRAMES, gym.spaces.Discrete(4), 4, {})
    frames = _frames(3)  # [B, 84, 84, 4]
    out_first = model_first(np.ascontiguousarray(frames.transpose(0, 3, 1, 2)))
    out_last = model_last(frames)
    for a, b in zip(out_first, out_last):
        np.testing.assert_allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError, match=r"'conv_data_format'\] must be one of \[None, "
                                         r"'channels_last', 'channels_first'\]. Received: 'NCHW'"):
        ModelCatalog.get_model(first, gym.spaces.Discrete(4), 4, {"conv_data_format": "NCHW"})
    with pytest.raises(ValueError, match=r"'conv_data_format'\] must be one of .*Received: 'NHWC'"):
        image_layout((4, 84, 84), "NHWC")


def test_filters_that_shrink_the_image_to_nothing_say_how_to_fix():
    wrong = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    with pytest.raises(ValueError, match=r"shrink the image to nothing at entry 0.*Received: "
                                         r"observation shape \(4, 84, 84\) \(read as "
                                         r"channels_last.*conv_data_format"):
        ModelCatalog.get_model(wrong, gym.spaces.Discrete(4), 4,
                               {"conv_data_format": "channels_last",
                                "conv_filters": [[8, [8, 8], 4, "valid"]]})


def test_lstm_over_uint8_frames_scales_them_too():
    space = gym.spaces.Box(0, 255, (10, 10, 2), np.uint8)
    config = {"use_lstm": True, "lstm_cell_size": 4}
    keras.utils.set_random_seed(0)
    model = ModelCatalog.get_model(space, gym.spaces.Discrete(2), 2, config)
    assert any(isinstance(layer, keras.layers.Rescaling) for layer in model.encoder)
    # Channels-first frames through the LSTM: the encoder transposes each step's frame.
    first = gym.spaces.Box(0, 255, (2, 10, 10), np.uint8)
    keras.utils.set_random_seed(0)
    model_first = ModelCatalog.get_model(first, gym.spaces.Discrete(2), 2, config)
    frames = _frames(6, (10, 10, 2)).reshape(2, 3, 10, 10, 2)  # [B, T, H, W, C]
    inputs = (model.get_initial_state(2), np.array([3, 2], np.int32))
    out_last = model((frames,) + inputs)
    out_first = model_first((np.ascontiguousarray(np.moveaxis(frames, -1, 2)),) + inputs)
    for a, b in zip(out_last[:2], out_first[:2]):
        np.testing.assert_allclose(a, b, atol=1e-5)


# ---------------------------------------------------------------- uint8 on every hop
def test_uint8_frames_stay_uint8_from_env_to_wire_policy_input_and_export(tmp_path):
    worker = RolloutWorker(env_creator=lambda ctx: FrameEnv(), policy_spec=PPOTFPolicy,
                           rollout_fragment_length=16, num_envs=2, seed=0,
                           policy_config={"seed": 0, "sgd_minibatch_size": 16, "num_sgd_iter": 1,
                                          "model": {"vf_share_layers": True}})
    batch = worker.sample()
    assert batch[SampleBatch.OBS].dtype == np.uint8
    assert batch[SampleBatch.OBS].shape == (32, 84, 84, 4)
    assert batch[SampleBatch.OBS].nbytes == 32 * 84 * 84 * 4  # one byte per pixel
    # PPO's loss never reads s_{t+1}: its batches drop it after postprocessing (RLlib's
    # view-requirement rule), so no second frame copy travels to the learner.
    assert SampleBatch.NEXT_OBS not in batch
    assert concat_samples([batch, batch])[SampleBatch.OBS].dtype == np.uint8
    back = wire_format.loads(wire_format.dumps(batch))
    assert back[SampleBatch.OBS].dtype == np.uint8
    np.testing.assert_array_equal(back[SampleBatch.OBS], batch[SampleBatch.OBS])
    policy = worker.get_policy()
    assert policy.observation_space.dtype == np.uint8
    obs_spec = policy.action_input_signature()[0]
    assert obs_spec.dtype == tf.uint8 and tuple(obs_spec.shape) == (None, 84, 84, 4)
    stats = policy.learn_on_batch(batch)  # the train columns take the uint8 frames
    assert np.isfinite(stats["learner_stats"]["total_loss"])
    # The exported SavedModel takes uint8 frames and acts like the live policy.
    policy.export_model(str(tmp_path / "saved"))
    signature = tf.saved_model.load(str(tmp_path / "saved")).signatures["deterministic_action"]
    assert signature.structured_input_signature[1]["obs"].dtype == tf.uint8
    frames = batch[SampleBatch.OBS][:5]
    actions, _, _ = policy.compute_actions(frames, explore=False)
    np.testing.assert_array_equal(signature(obs=tf.constant(frames))["actions"].numpy(), actions)
