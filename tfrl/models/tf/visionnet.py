"""The conv model for image observations `[B, H, W, C]`."""

from typing import List

import keras
import tensorflow as tf

from tfrl.models.tf.misc import normc_initializer
from tfrl.models.tf.tf_model import PolicyHead, TFModel, apply, dense_stack, to_float, value_head
from tfrl.models.utils import get_activation_fn, get_filter_config


def conv_stack(model_config: dict, obs_shape, prefix: str) -> List[keras.layers.Layer]:
    """Conv layers from `conv_filters` (or the default for the image size), flattened.

    All convs but the last use "same" padding, the last "valid" (as RLlib), so the
    default filters reduce 84x84 and 42x42 images to 1x1x256.
    """
    filters = model_config["conv_filters"] or get_filter_config(obs_shape)
    act = get_activation_fn(model_config["conv_activation"])
    layers = []
    for i, spec in enumerate(filters):
        if len(spec) != 3:
            raise ValueError(
                f"Each conv_filters entry must be [out_channels, kernel, stride]. Received: "
                f"{spec!r} (entry {i}). Example: [[16, [8, 8], 4], [32, [4, 4], 2]]."
            )
        out_channels, kernel, stride = spec
        layers.append(
            keras.layers.Conv2D(
                int(out_channels), kernel, strides=stride, activation=act,
                padding="valid" if i == len(filters) - 1 else "same",
                kernel_initializer=normc_initializer(1.0), name=f"{prefix}_conv{i + 1}",
            )
        )
    layers.append(keras.layers.Flatten(name=f"{prefix}_flatten"))
    return layers


class VisionNetwork(TFModel):
    """A conv policy for image observations with a separate or shared value branch.

    The conv stack (`conv_filters`, `conv_activation`; defaults for 84x84 and 42x42
    images) is flattened and followed by `post_fcnet_hiddens` (`post_fcnet_activation`).
    With `vf_share_layers=False` the value function has its own conv stack.
    Constructor arguments: those of `TFModel` (an image `obs_space` `[H, W, C]`;
    default name "vision").

    Call:
        `model(obs, training=False) -> (dist_inputs [B, num_outputs], value [B])`.

    Raises:
        ValueError: If the observations are not images (rank 3).
    """

    default_name = "vision"

    def _build_layers(self) -> None:
        obs_space, model_config = self.obs_space, self.model_config
        if len(obs_space.shape) != 3:
            raise ValueError(
                f"VisionNetwork needs image observations [H, W, C]. Received: shape="
                f"{obs_space.shape}. Use FullyConnectedNetwork for flat observations."
            )
        post = model_config["post_fcnet_hiddens"]
        post_act = model_config["post_fcnet_activation"]
        self.conv_layers = conv_stack(model_config, obs_space.shape, "pi")
        self.post_layers = dense_stack(post, post_act, "post_fc")
        self.policy_head = PolicyHead(
            self.num_outputs, bool(model_config["free_log_std"]), name="pi")
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.value_layers = [] if self.vf_share_layers else (
            conv_stack(model_config, obs_space.shape, "vf") + dense_stack(post, post_act, "vf_fc")
        )
        self.value_out = value_head()

    def call(self, obs, training=False):
        x = to_float(obs)  # [B, H, W, C]
        features = apply(self.post_layers, apply(self.conv_layers, x))  # [B, F]
        dist_inputs = self.policy_head(features)  # [B, num_outputs]
        value_features = features if self.vf_share_layers else apply(self.value_layers, x)
        value = tf.squeeze(self.value_out(value_features), axis=-1)  # [B]
        return dist_inputs, value
