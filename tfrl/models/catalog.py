"""ModelCatalog: picks preprocessors, action distributions and Keras models for spaces.

Example:
    >>> import gymnasium as gym
    >>> dist_class, num_outputs = ModelCatalog.get_action_dist(gym.spaces.Discrete(3))
    >>> dist_class.__name__, num_outputs
    ('Categorical', 3)
    >>> model = ModelCatalog.get_model(
    ...     gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3), num_outputs,
    ...     {"fcnet_hiddens": [8]})
    >>> [tuple(t.shape) for t in model(np.zeros((5, 4), np.float32))]
    [(5, 3), (5,)]
"""

import difflib
import functools
from typing import Any, Callable, Dict, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tree

from tfrl.models.action_mask import ActionMaskModel, action_mask_layout, without_mask
from tfrl.models.model_defaults import _INITIALIZER_KEYS, MODEL_DEFAULTS, check_model_keys
from tfrl.models.preprocessors import Preprocessor, get_preprocessor
from tfrl.models.tf import tf_action_dist as dists
from tfrl.models.tf.attention_net import GTrXLWrapper
from tfrl.models.tf.custom_model import adopt_custom_model
from tfrl.models.tf.fcnet import FullyConnectedNetwork
from tfrl.models.tf.recurrent_net import LSTMWrapper
from tfrl.models.tf.visionnet import CONV_COMPUTE_DTYPES, CONV_DATA_FORMATS, VisionNetwork
from tfrl.utils.spaces.space_utils import space_structure


# Implemented: the hidden layers of the fully connected net take any Keras initializer
# (name or identifier dict), e.g. "orthogonal" with {"gain": 1.41} as in SB3/cleanrl.
# The LSTM wrapper's input and recurrent kernels and its bias take them too (e.g.
# PyTorch's LSTM init: "random_uniform" within +-1/sqrt(lstm_cell_size) for both).
_IMPLEMENTED_INITIALIZER_KEYS = ("fcnet_weights_initializer",
                                 "fcnet_weights_initializer_config",
                                 "lstm_weights_initializer", "lstm_weights_initializer_config",
                                 "lstm_bias_initializer", "lstm_bias_initializer_config")

# Keys tfrl accepts but does not implement yet: only their default value is allowed.
_NOT_IMPLEMENTED = (
    "no_final_linear", "_time_major", "custom_preprocessor",
    "encoder_latent_dim", "_disable_preprocessor_api", "_disable_action_flattening",
) + tuple(k for k in _INITIALIZER_KEYS if k not in _IMPLEMENTED_INITIALIZER_KEYS)

_CUSTOM_MODELS: Dict[str, Any] = {}
_CUSTOM_ACTION_DISTS: Dict[str, Any] = {}


def merge_model_config(model_config: Optional[dict] = None) -> dict:
    """Returns `MODEL_DEFAULTS` updated with `model_config`, after validating it.

    Raises:
        ValueError: For an unknown key (naming the closest valid key), a key tfrl does
            not implement set to a non-default value, or malformed hidden sizes.
    """
    model_config = dict(model_config or {})
    check_model_keys(model_config)
    for key in _NOT_IMPLEMENTED:
        if key in model_config and model_config[key] != MODEL_DEFAULTS[key]:
            raise ValueError(
                f"model_config[{key!r}] is not supported by tfrl yet. Received: "
                f"{model_config[key]!r}. Remove the key or set it to {MODEL_DEFAULTS[key]!r}."
            )
    config = {**MODEL_DEFAULTS, **model_config}
    if config["conv_data_format"] not in CONV_DATA_FORMATS:
        raise ValueError(
            f"model_config['conv_data_format'] must be one of {list(CONV_DATA_FORMATS)}. "
            f"Received: {config['conv_data_format']!r}.")
    if config["conv_compute_dtype"] not in CONV_COMPUTE_DTYPES:
        raise ValueError(
            f"model_config['conv_compute_dtype'] must be one of {list(CONV_COMPUTE_DTYPES)}. "
            f"Received: {config['conv_compute_dtype']!r}.")
    if not isinstance(config["normalize_images"], (bool, np.bool_)):
        raise ValueError(
            "model_config['normalize_images'] must be True or False. Received: "
            f"{config['normalize_images']!r}.")
    for key in ("fcnet_hiddens", "post_fcnet_hiddens"):
        sizes = config[key]
        if not isinstance(sizes, (list, tuple)) or not all(
            isinstance(s, (int, np.integer)) and s > 0 for s in sizes
        ):
            raise ValueError(
                f"model_config[{key!r}] must be a list of positive ints. Received: {sizes!r}."
            )
    return config


class ModelCatalog:
    """Registry and factory of preprocessors, action distributions and models."""

    @staticmethod
    def get_action_dist(
        action_space: gym.Space,
        config: Optional[dict] = None,
        dist_type: Any = None,
        framework: str = "tf",
        **kwargs,
    ) -> Tuple[Callable[..., dists.TFActionDistribution], int]:
        """Returns `(dist_class, num_outputs)` for an action space.

        `dist_class(dist_inputs, model)` builds the distribution; for MultiDiscrete,
        bounded-Box squashed and Dict/Tuple spaces it is a `functools.partial` with the
        space's parameters bound, so use the returned `num_outputs`.

        Args:
            action_space: The action space.
            config: The model config (`custom_action_dist` is honoured).
            dist_type: None for the default, "deterministic" for `Deterministic` on Box
                spaces, or a distribution class (e.g. `SquashedGaussian`).
            framework: "tf" (RLlib's signature).
            **kwargs: Ignored (RLlib's signature).

        Raises:
            ValueError: For unsupported spaces or an unknown custom distribution.
        """
        config = merge_model_config(config)
        custom = config["custom_action_dist"]
        if custom is not None:
            cls = _lookup(custom, _CUSTOM_ACTION_DISTS, "custom_action_dist")
            return cls, int(cls.required_model_output_shape(action_space, config))
        if np.any(getattr(action_space, "start", 0) != 0):
            raise ValueError(
                f"Discrete/MultiDiscrete action spaces must start at 0. Received: "
                f"{action_space}. Shift the actions with an env wrapper."
            )
        if isinstance(action_space, gym.spaces.Discrete):
            return dists.Categorical, int(action_space.n)
        if isinstance(action_space, gym.spaces.MultiDiscrete):
            if action_space.nvec.ndim != 1:
                raise ValueError(
                    f"MultiDiscrete action spaces need a 1-D nvec. Received: {action_space}. "
                    "Flatten the action space."
                )
            nvec = [int(n) for n in action_space.nvec]
            return functools.partial(dists.MultiCategorical, input_lens=nvec), sum(nvec)
        if isinstance(action_space, gym.spaces.Box):
            return _box_dist(action_space, config, dist_type)
        if isinstance(action_space, (gym.spaces.Dict, gym.spaces.Tuple)):
            subs = (
                action_space.spaces.values() if isinstance(action_space, gym.spaces.Dict)
                else action_space.spaces
            )
            children, lens = zip(*[ModelCatalog.get_action_dist(s, config) for s in subs])
            dist = functools.partial(
                dists.MultiActionDistribution, action_space=action_space,
                child_distributions=list(children), input_lens=list(lens),
            )
            return dist, int(sum(lens))
        raise ValueError(
            f"Unsupported action space. Received: {action_space}. Expected Discrete, "
            "MultiDiscrete, a 1-D float Box, or a Dict/Tuple of these."
        )

    @staticmethod
    def get_action_shape(
        action_space: gym.Space, framework: str = "tf"
    ) -> Tuple[np.dtype, Tuple[Optional[int], ...]]:
        """Returns `(dtype, shape)` of a batch of actions; the batch axis is None.

        Dict/Tuple actions are flattened (as in `MultiActionDistribution.logp`):
        float32 if any leaf is a Box, else int64.

        Example:
            >>> ModelCatalog.get_action_shape(gym.spaces.MultiDiscrete([2, 3]))
            (dtype('int64'), (None, 2))
        """
        if isinstance(action_space, gym.spaces.Discrete):
            return np.dtype(action_space.dtype), (None,)
        if isinstance(action_space, (gym.spaces.Box, gym.spaces.MultiDiscrete)):
            return np.dtype(action_space.dtype), (None,) + tuple(action_space.shape)
        if isinstance(action_space, (gym.spaces.Dict, gym.spaces.Tuple)):
            leaves = tree.flatten(space_structure(action_space))
            has_float = any(isinstance(s, gym.spaces.Box) for s in leaves)
            dtype = np.dtype(np.float32 if has_float else np.int64)
            return dtype, (None, dists.flat_action_size(action_space))
        raise ValueError(
            f"Unsupported action space. Received: {action_space}. Expected Discrete, "
            "MultiDiscrete, Box, or a Dict/Tuple of these."
        )

    @staticmethod
    def get_preprocessor(env: gym.Env, options: Optional[dict] = None) -> Preprocessor:
        """Returns a preprocessor instance for `env.observation_space`."""
        return ModelCatalog.get_preprocessor_for_space(env.observation_space, options)

    @staticmethod
    def get_preprocessor_for_space(
        obs_space: gym.Space, options: Optional[dict] = None
    ) -> Preprocessor:
        """Returns a preprocessor instance for `obs_space`."""
        return get_preprocessor(obs_space)(obs_space, options)

    @staticmethod
    def get_model(
        obs_space: gym.Space,
        action_space: gym.Space,
        num_outputs: int,
        model_config: Optional[dict] = None,
        name: str = "default_model",
    ) -> keras.Model:
        """Builds a Keras model with tfrl's call contract (see `tfrl.models.tf.tf_model`).

        The model consumes preprocessed observations: `[B, *preprocessor.shape]`.
        `custom_model` may be a registered name, a `keras.Model` class (constructed as
        `cls(obs_space, action_space, num_outputs, model_config, name,
        **custom_model_config)`, RLlib's signature, with the preprocessed `obs_space`
        whose `.original_space` is the raw one) or a `keras.Model` instance. Else
        `use_lstm` gives an `LSTMWrapper`, image observations a `VisionNetwork`, other
        observations a `FullyConnectedNetwork`. The model's weights are built. A Dict
        observation with an action mask entry (`action_mask_key`) and Discrete or
        MultiDiscrete actions gets the default model of the rest of the observation,
        its outputs masked (`tfrl.models.action_mask.ActionMaskModel`); a custom model
        receives the mask in its input and masks for itself.

        Args:
            obs_space: The observation space (raw or preprocessed).
            action_space: The action space.
            num_outputs: Size of `dist_inputs` (from `get_action_dist`).
            model_config: The model config (merged with `MODEL_DEFAULTS`).
            name: The Keras model name.

        Raises:
            ValueError: For bad config values or custom model outputs of the wrong shape.
        """
        config = merge_model_config(model_config)
        if config["custom_model"] is None:
            layout = action_mask_layout(obs_space, action_space, config)
            if layout is not None:
                return _masked_model(obs_space, action_space, num_outputs, config, name, layout)
        # As RLlib, models see the preprocessed space (`.original_space` is the raw one).
        model_space = get_preprocessor(obs_space)(obs_space, config).observation_space
        obs_shape = tuple(model_space.shape)
        if config["custom_model"] is not None:
            if config["use_lstm"]:
                raise ValueError(
                    "use_lstm=True with a custom_model is not supported yet. Make the "
                    "custom model recurrent itself (is_recurrent=True) or drop use_lstm."
                )
            if config["use_attention"]:
                raise ValueError(
                    "use_attention=True with a custom_model is not supported. Received "
                    f"custom_model={config['custom_model']!r}. Drop use_attention or make the "
                    "custom model recurrent itself (is_recurrent=True).")
            model = _lookup(config["custom_model"], _CUSTOM_MODELS, "custom_model")
            if isinstance(model, type):
                model = _construct(model, model_space, action_space, num_outputs, config, name)
            return adopt_custom_model(
                model, obs_shape, model_space, action_space, num_outputs, config
            )
        if config["use_attention"]:
            if config["use_lstm"]:
                raise ValueError(
                    "use_attention=True and use_lstm=True together are not supported. "
                    "Received both. Set one of them to False.")
            model = GTrXLWrapper(model_space, action_space, num_outputs, config, name)
            model((np.zeros((1, 1) + obs_shape, np.float32), model.get_initial_state(1),
                   np.ones((1,), np.int32)), **model.prev_input_kwargs(1, 1))
            return model
        if config["use_lstm"]:
            model = LSTMWrapper(model_space, action_space, num_outputs, config, name)
            state = model.get_initial_state(1)
            model(
                (np.zeros((1, 1) + obs_shape, np.float32), state, np.ones((1,), np.int32)),
                **model.prev_input_kwargs(1, 1),
            )
            return model
        cls = VisionNetwork if len(obs_shape) == 3 else FullyConnectedNetwork
        model = cls(model_space, action_space, num_outputs, config, name)
        model(np.zeros((1,) + obs_shape, np.float32))
        return model

    @staticmethod
    def get_model_v2(obs_space: gym.Space, action_space: gym.Space, num_outputs: int,
                     model_config: Optional[dict] = None, framework: str = "tf",
                     name: str = "default_model", **kwargs: Any) -> keras.Model:
        """RLlib's name for `get_model` (only framework="tf"; extra kwargs ignored)."""
        if framework not in ("tf", "tf2"):
            raise ValueError(f"tfrl builds Keras models only. Received: framework={framework!r}.")
        return ModelCatalog.get_model(obs_space, action_space, num_outputs, model_config, name)

    @staticmethod
    def register_custom_model(model_name: str, model_class: Any) -> None:
        """Registers a `keras.Model` class (or instance) under `model_name`."""
        _CUSTOM_MODELS[model_name] = model_class

    @staticmethod
    def register_custom_action_dist(action_dist_name: str, action_dist_class: Any) -> None:
        """Registers a `TFActionDistribution` subclass under `action_dist_name`."""
        _CUSTOM_ACTION_DISTS[action_dist_name] = action_dist_class


def _masked_model(obs_space: gym.Space, action_space: gym.Space, num_outputs: int,
                  config: dict, name: str, layout: Tuple[int, int]) -> keras.Model:
    """The default model of the observation without its mask, wrapped to mask outputs."""
    start, stop = layout
    key = config["action_mask_key"]
    if num_outputs != stop - start:
        raise ValueError(
            f"Action masking needs one model output per action. Received: num_outputs="
            f"{num_outputs} for a mask {key!r} of {stop - start} entries. Set model_config"
            "['action_mask_key']=None to turn built-in masking off (and mask in a custom "
            "model).")
    for recurrent_key in ("use_lstm", "use_attention"):
        if config[recurrent_key]:
            raise ValueError(
                f"Built-in action masking (the observation's {config['action_mask_key']!r} "
                f"entry) does not support {recurrent_key}=True yet. Received: "
                f"{recurrent_key}=True. Use a feed-forward model, or set "
                "model_config['action_mask_key']=None and mask in a custom recurrent model.")
    inner_space = without_mask(obs_space, config)
    inner = ModelCatalog.get_model(inner_space, action_space, num_outputs,
                                   {**config, "action_mask_key": None}, name)
    model = ActionMaskModel(inner, start, stop, name=f"{name}_masked")
    width = get_preprocessor(obs_space)(obs_space, config).size
    model(np.zeros((1, width), np.float32))
    return model


def _box_dist(space: gym.spaces.Box, config: dict, dist_type: Any):
    if not np.issubdtype(space.dtype, np.floating) or len(space.shape) != 1:
        raise ValueError(
            f"Box action spaces must be 1-D float. Received: {space}. Reshape the action "
            "space to one dimension, or use MultiDiscrete for integer actions."
        )
    if dist_type is None:
        return dists.DiagGaussian, dists.DiagGaussian.required_model_output_shape(space, config)
    if dist_type == "deterministic":
        dist_type = dists.Deterministic
    if dist_type is dists.SquashedGaussian:
        if not (space.is_bounded("both")):
            raise ValueError(
                f"SquashedGaussian needs a bounded Box. Received: {space}. Use DiagGaussian."
            )
        dist = functools.partial(dists.SquashedGaussian, low=space.low, high=space.high)
        return dist, dists.SquashedGaussian.required_model_output_shape(space, config)
    if isinstance(dist_type, type) and issubclass(dist_type, dists.TFActionDistribution):
        return dist_type, int(dist_type.required_model_output_shape(space, config))
    raise ValueError(
        f"Unknown dist_type. Received: {dist_type!r}. Expected None, 'deterministic' or a "
        "TFActionDistribution subclass."
    )


def _construct(cls, obs_space, action_space, num_outputs, config, name) -> Any:
    try:
        return cls(
            obs_space, action_space, num_outputs, config, name, **config["custom_model_config"]
        )
    except TypeError as e:
        raise TypeError(
            f"Could not construct custom_model {cls.__name__}: {e}. A custom model class "
            "is called as cls(obs_space, action_space, num_outputs, model_config, name, "
            "**custom_model_config) (RLlib's ModelV2 signature); or pass a built "
            "keras.Model instance as custom_model."
        ) from e


def _lookup(value: Any, registry: Dict[str, Any], key: str) -> Any:
    if not isinstance(value, str):
        return value
    if value not in registry:
        close = difflib.get_close_matches(value, list(registry), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"No {key} registered under {value!r}. Registered: {sorted(registry)}.{hint} "
            f"Register it with ModelCatalog.register_{key}(name, cls), or pass the class "
            "itself (tfrl's command line takes 'package.module:ClassName')."
        )
    return registry[value]
