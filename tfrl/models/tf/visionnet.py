"""The conv model for image observations, and the image encoder the catalog's models share.

Image layout: Keras' channels-last `[B, H, W, C]`. An observation of shape `(C, H, W)`
is read as channels-first when `conv_data_format` says so, or (the default,
`conv_data_format=None`) when `C <= 4 < H, W` — e.g. `(4, 84, 84)` frame stacks from
gymnasium's `FrameStackObservation` or ale-py's vector env; the encoder then transposes
it to `[B, H, W, C]` first. Byte images (a `uint8` observation space) are scaled to
`[0, 1]` inside the model (`normalize_images=True`, the default, as SB3's
`normalize_images`), so they stay one byte per pixel everywhere outside the model.
"""

from typing import List, Sequence, Tuple, Union

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.model_defaults import model_setting
from tfrl.models.tf.tf_model import PolicyHead, TFModel, apply, dense_stack, to_float, value_head
from tfrl.models.utils import get_activation_fn, get_default_encoder

CONV_DATA_FORMATS = (None, "channels_last", "channels_first")
# model_config["conv_compute_dtype"] -> the Keras dtype policy of the encoder's layers.
_DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16"}
CONV_COMPUTE_DTYPES = tuple(_DTYPE_POLICIES)
_PADDINGS = ("same", "valid")


def image_layout(obs_shape: Sequence[int], data_format: Union[str, None] = None) -> str:
    """"channels_last" or "channels_first" for an image observation shape.

    Args:
        obs_shape: The observation shape (rank 3).
        data_format: `model_config["conv_data_format"]`: None for the rule
            "channels-first iff C <= 4 < H, W for a shape (C, H, W)", or the layout.

    Raises:
        ValueError: For an unknown `data_format`.

    Example:
        >>> image_layout((4, 84, 84)), image_layout((84, 84, 4)), image_layout((10, 10, 4))
        ('channels_first', 'channels_last', 'channels_last')
    """
    if data_format not in CONV_DATA_FORMATS:
        raise ValueError(
            f"model_config['conv_data_format'] must be one of {list(CONV_DATA_FORMATS)}. "
            f"Received: {data_format!r}.")
    if data_format is not None:
        return data_format
    c, h, w = (int(d) for d in obs_shape)
    return "channels_first" if c <= 4 < min(h, w) else "channels_last"


def conv_stack(model_config: dict, obs_space: Union[gym.Space, Sequence[int]],
               prefix: str) -> List[keras.layers.Layer]:
    """The image encoder: input layers, conv layers, flatten and dense layers.

    Input layers: a transpose to channels-last for channels-first observations (see
    `image_layout`), and a scale by 1/255 for `uint8` observation spaces when
    `normalize_images` is set. Conv layers come from `conv_filters`, entries
    `[out_channels, kernel, stride]` or `[out_channels, kernel, stride, padding]`;
    without a padding all convs but the last use "same" padding, the last "valid" (as
    RLlib). With `conv_filters=None` the default encoder for the image size is used
    (`tfrl.models.utils.get_default_encoder`: Nature DQN for 84x84, MinAtar's for
    10x10), including its dense layers. With `conv_compute_dtype="bfloat16"` the layers
    compute in bfloat16 (Keras' `mixed_bfloat16` policy, float32 weights) and a last
    layer casts the features to float32.

    Args:
        model_config: The merged model config.
        obs_space: The (preprocessed) observation space; a bare shape means float
            observations (no scaling).
        prefix: Layer name prefix.

    Raises:
        ValueError: For malformed `conv_filters`, an unknown padding or data format, or
            filters that shrink the image to nothing.
    """
    is_space = isinstance(obs_space, gym.Space)
    obs_shape = tuple(int(d) for d in (obs_space.shape if is_space else obs_space))
    layout = image_layout(obs_shape, model_config.get("conv_data_format"))
    image_shape = obs_shape[1:] + obs_shape[:1] if layout == "channels_first" else obs_shape
    filters, hiddens = (
        (model_config["conv_filters"], []) if model_config["conv_filters"]
        else get_default_encoder(image_shape))
    act = get_activation_fn(model_config["conv_activation"])
    # conv_compute_dtype "bfloat16": every encoder layer computes in bf16 (float32
    # weights), and a last layer casts the features back to float32 for the heads.
    policy = _DTYPE_POLICIES[model_config.get("conv_compute_dtype") or "float32"]
    kw = {"dtype": policy} if policy else {}
    layers: List[keras.layers.Layer] = []
    if layout == "channels_first":
        layers.append(keras.layers.Permute((2, 3, 1), name=f"{prefix}_to_channels_last", **kw))
    if (is_space and np.dtype(obs_space.dtype) == np.uint8
            and model_setting(model_config, "normalize_images")):
        layers.append(keras.layers.Rescaling(1.0 / 255.0, name=f"{prefix}_scale", **kw))
    size = image_shape[:2]
    for i, spec in enumerate(filters):
        out_channels, kernel, stride, padding = _parse_filter(spec, i, len(filters))
        size = _conv_output_size(size, kernel, stride, padding)
        if min(size) < 1:
            raise ValueError(
                f"conv_filters shrink the image to nothing at entry {i} ({spec!r}). "
                f"Received: observation shape {obs_shape} (read as {layout}, image "
                f"{image_shape}), conv_filters={filters!r}. Use smaller kernels or strides, "
                "or set model_config['conv_data_format'] if the layout is wrong.")
        layers.append(
            keras.layers.Conv2D(
                out_channels, kernel, strides=stride, activation=act, padding=padding,
                kernel_initializer=_relu_initializer(), name=f"{prefix}_conv{i + 1}", **kw,
            )
        )
    layers.append(keras.layers.Flatten(name=f"{prefix}_flatten", **kw))
    layers += [
        keras.layers.Dense(int(units), activation=act, kernel_initializer=_relu_initializer(),
                           name=f"{prefix}_conv_fc{i + 1}", **kw)
        for i, units in enumerate(hiddens)
    ]
    if policy:
        layers.append(keras.layers.Activation("linear", dtype="float32",
                                              name=f"{prefix}_to_float32"))
    return layers


def _relu_initializer() -> keras.initializers.Initializer:
    # Orthogonal with gain sqrt(2) (SB3's and cleanrl's conv and feature layers): keeps
    # the activations' scale through ReLU layers, so a fresh policy head sees O(1)
    # features. (normc normalizes a kernel's first axis, which for a conv kernel is its
    # height, not its fan-in: activations then grow ~10x per layer.)
    return keras.initializers.Orthogonal(gain=float(np.sqrt(2.0)))


def _parse_filter(spec, i: int, count: int) -> Tuple[int, Tuple[int, int], int, str]:
    if not isinstance(spec, (list, tuple)) or len(spec) not in (3, 4):
        raise ValueError(
            f"Each conv_filters entry must be [out_channels, kernel, stride] or [out_channels, "
            f"kernel, stride, padding]. Received: {spec!r} (entry {i}). Example: "
            "[[16, [8, 8], 4], [32, [4, 4], 2, 'valid']].")
    out_channels, kernel, stride = spec[:3]
    padding = spec[3] if len(spec) == 4 else ("valid" if i == count - 1 else "same")
    if padding not in _PADDINGS:
        raise ValueError(
            f"A conv_filters padding must be 'same' or 'valid'. Received: {padding!r} "
            f"(entry {i}: {spec!r}).")
    kernel = (int(kernel), int(kernel)) if np.isscalar(kernel) else tuple(int(k) for k in kernel)
    stride = int(stride) if np.isscalar(stride) else int(stride[0])
    return int(out_channels), kernel, stride, padding


def _conv_output_size(size, kernel, stride, padding) -> Tuple[int, int]:
    if padding == "same":
        return tuple(-(-n // stride) for n in size)
    return tuple((n - k) // stride + 1 if n >= k else 0 for n, k in zip(size, kernel))


class VisionNetwork(TFModel):
    """A conv policy for image observations with a separate or shared value branch.

    The image encoder (`conv_stack`: `conv_filters`, `conv_activation`,
    `conv_data_format`, `normalize_images`, `conv_compute_dtype`; defaults by image size) is followed by
    `post_fcnet_hiddens` (`post_fcnet_activation`). With `vf_share_layers=False` the
    value function has its own encoder. A fresh model is near a uniform policy (logits
    layer normc(0.01), as SB3's policy head gain 0.01) with small values.
    Constructor arguments: those of `TFModel` (an image `obs_space`, `[H, W, C]` or
    channels-first `[C, H, W]`; default name "vision").

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
        self.conv_layers = conv_stack(model_config, obs_space, "pi")
        self.post_layers = dense_stack(post, post_act, "post_fc")
        self.policy_head = PolicyHead(
            self.num_outputs, bool(model_config["free_log_std"]), name="pi")
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.value_layers = [] if self.vf_share_layers else (
            conv_stack(model_config, obs_space, "vf") + dense_stack(post, post_act, "vf_fc")
        )
        self.value_out = value_head()

    def call(self, obs, training=False):
        x = to_float(obs)  # [B, H, W, C] (or [B, C, H, W]: the encoder transposes)
        features = apply(self.post_layers, apply(self.conv_layers, x))  # [B, F]
        dist_inputs = self.policy_head(features)  # [B, num_outputs]
        value_features = features if self.vf_share_layers else apply(self.value_layers, x)
        value = tf.squeeze(self.value_out(value_features), axis=-1)  # [B]
        return dist_inputs, value
