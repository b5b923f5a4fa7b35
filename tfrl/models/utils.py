"""Small helpers shared by the models: activation names and default image encoders."""

from typing import List, Optional, Sequence, Tuple

_ACTIVATIONS = {
    "tanh": "tanh",
    "relu": "relu",
    "elu": "elu",
    "swish": "silu",
    "silu": "silu",
    "linear": None,
    None: None,
}

# Default image encoders by image size [H, W] (any channel count): conv layers
# `[out_channels, [kh, kw], stride(, padding)]`, then dense layers (activation:
# `conv_activation`). The one source of the defaults `conv_filters=None` picks.
_ENCODERS = {
    # The Nature DQN network (Mnih et al. 2015; SB3's NatureCNN): 84x84 -> 20 -> 9 -> 7,
    # 7 * 7 * 64 = 3136 features -> 512.
    (84, 84): ([[32, [8, 8], 4, "valid"], [64, [4, 4], 2, "valid"], [64, [3, 3], 1, "valid"]],
               [512]),
    # RLlib's: 42x42 -> 21 -> 11 -> 1x1x256.
    (42, 42): ([[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]], []),
    # MinAtar's network (Young & Tian 2019): 10x10 -> 8x8x16 = 1024 features -> 128.
    (10, 10): ([[16, [3, 3], 1, "valid"]], [128]),
}


def get_activation_fn(name: Optional[str] = None, framework: str = "tf") -> Optional[str]:
    """Returns the Keras activation for an RLlib activation name.

    Args:
        name: One of "tanh", "relu", "elu", "swish"/"silu", "linear" or None.
        framework: Only "tf"/"tf2"/"keras" are supported (RLlib's signature).

    Returns:
        A Keras activation identifier, or None for linear.

    Raises:
        ValueError: For an unknown name or framework.

    Example:
        >>> get_activation_fn("swish"), get_activation_fn("linear")
        ('silu', None)
    """
    if framework not in ("tf", "tf2", "keras"):
        raise ValueError(
            f"Unsupported framework. Received: framework={framework!r}. Expected 'tf'."
        )
    if callable(name):
        return name
    if name not in _ACTIVATIONS:
        valid = sorted(k for k in _ACTIVATIONS if k is not None)
        raise ValueError(
            f"Unknown activation. Received: {name!r}. Expected one of {valid} or None."
        )
    return _ACTIVATIONS[name]


def get_filter_config(shape: Sequence[int]) -> List[list]:
    """Returns the default conv filters for an image observation shape `[H, W, C]`.

    Args:
        shape: The image shape (channels-last).

    Returns:
        A list of `[out_channels, [kh, kw], stride(, padding)]` (copies, safe to modify).

    Raises:
        ValueError: If there is no default for the image size.

    Example:
        >>> get_filter_config((42, 42, 3))[0]
        [16, [4, 4], 2]
        >>> get_filter_config((84, 84, 4))[0]
        [32, [8, 8], 4, 'valid']
    """
    return get_default_encoder(shape)[0]


def get_default_encoder(shape: Sequence[int]) -> Tuple[List[list], List[int]]:
    """Returns `(conv_filters, dense_hiddens)`: the default image encoder for `[H, W, C]`.

    84x84 images get the Nature DQN network, 10x10 images (MinAtar) MinAtar's network,
    42x42 images RLlib's conv stack.

    Raises:
        ValueError: If there is no default for the image size.

    Example:
        >>> get_default_encoder((10, 10, 4))
        ([[16, [3, 3], 1, 'valid']], [128])
    """
    key = tuple(int(s) for s in shape[:2])
    if len(shape) != 3 or key not in _ENCODERS:
        raise ValueError(
            f"No default conv_filters for image observations of shape {tuple(shape)}. "
            f"Defaults exist for [H, W] in {sorted(_ENCODERS)} (any channel count). Set "
            "model_config['conv_filters'] = [[out_channels, [kh, kw], stride], ...] or "
            "resize the observations."
        )
    filters, hiddens = _ENCODERS[key]
    return [[c, list(k), *rest] for c, k, *rest in filters], list(hiddens)
