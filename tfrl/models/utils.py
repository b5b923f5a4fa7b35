"""Small helpers shared by the models: activation names and default conv filters."""

from typing import List, Optional, Sequence

_ACTIVATIONS = {
    "tanh": "tanh",
    "relu": "relu",
    "elu": "elu",
    "swish": "silu",
    "silu": "silu",
    "linear": None,
    None: None,
}

# Default conv stacks ([out_channels, kernel, stride] per layer) by image size (as RLlib).
_FILTERS = {
    (84, 84): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
    (42, 42): [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]],
    (10, 10): [[16, [5, 5], 2], [32, [5, 5], 2]],
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
        shape: The image shape.

    Returns:
        A list of `[out_channels, [kh, kw], stride]` (copies, safe to modify).

    Raises:
        ValueError: If there is no default for the image size.

    Example:
        >>> get_filter_config((42, 42, 3))[0]
        [16, [4, 4], 2]
    """
    key = tuple(int(s) for s in shape[:2])
    if len(shape) != 3 or key not in _FILTERS:
        raise ValueError(
            f"No default conv_filters for image observations of shape {tuple(shape)}. "
            f"Defaults exist for [H, W] in {sorted(_FILTERS)} (any channel count). Set "
            "model_config['conv_filters'] = [[out_channels, [kh, kw], stride], ...] or "
            "resize the observations."
        )
    return [[c, list(k), s] for c, k, s in _FILTERS[key]]
