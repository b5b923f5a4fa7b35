"""Adapting user-supplied Keras models to tfrl's model call contract.

A feed-forward user model may return `dist_inputs` alone (then the value is zeros and
a warning says value-based losses will not learn) or `(dist_inputs, value)` with value
`[B]` or `[B, 1]`. Shapes are checked on a dummy batch when the model is adopted.
"""

import warnings
from typing import Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.tf_model import TFModel, to_float


class KerasModelWrapper(TFModel):
    """Wraps a user `keras.Model` so it returns `(dist_inputs [B, N], value [B])`.

    Args:
        base_model: The user's model, called as `base_model(obs, training=...)`.
        obs_space: Observation space (the model consumes its preprocessed shape).
        action_space: Action space.
        num_outputs: Size of `dist_inputs`.
        model_config: The model config.
        has_value: Whether `base_model` returns `(dist_inputs, value)`.
        name: The Keras model name.
    """

    def __init__(
        self,
        base_model: keras.Model,
        obs_space: gym.Space,
        action_space: gym.Space,
        num_outputs: int,
        model_config: dict,
        has_value: bool,
        name: str = "wrapped",
    ):
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        self.base_model = base_model
        self.has_value = has_value

    def call(self, obs, training=False):
        out = self.base_model(to_float(obs), training=training)  # float32, as checked
        if not self.has_value:
            dist_inputs = tf.convert_to_tensor(out)  # [B, N]
            return dist_inputs, tf.zeros(tf.shape(dist_inputs)[:1], dist_inputs.dtype)
        dist_inputs, value = out
        value = tf.reshape(value, tf.shape(value)[:1])  # [B] or [B, 1] -> [B]
        return dist_inputs, value


def adopt_custom_model(
    model: keras.Model,
    obs_shape: Tuple[int, ...],
    obs_space: gym.Space,
    action_space: gym.Space,
    num_outputs: int,
    model_config: dict,
) -> keras.Model:
    """Checks a user model on a dummy batch and wraps it if needed.

    Args:
        model: A feed-forward `keras.Model` taking `[B, *obs_shape]` observations.
        obs_shape: The preprocessed observation shape.
        obs_space: The observation space.
        action_space: The action space.
        num_outputs: The expected size of `dist_inputs`.
        model_config: The model config.

    A recurrent user model (`is_recurrent = True`) must implement the recurrent
    contract itself (`get_initial_state`, `(obs, state_in, seq_lens)` call); it is
    checked and used as is.

    Returns:
        `model` itself if it already returns `(dist_inputs [B, N], value [B])` and has
        `is_recurrent`, `num_outputs` and `get_initial_state`; else a `KerasModelWrapper`.

    Raises:
        TypeError: If `model` is not a `keras.Model`.
        ValueError: If its outputs have the wrong structure or shapes.
    """
    if not isinstance(model, keras.Model):
        raise TypeError(
            f"custom_model must be a keras.Model (instance, class or registered name). "
            f"Received: {type(model).__name__}."
        )
    if getattr(model, "is_recurrent", False):
        _check_recurrent(model, obs_shape, num_outputs)
        return model
    batch = 2
    out = model(np.zeros((batch,) + tuple(obs_shape), np.float32), training=False)
    where = f"custom model {model.name!r} on a dummy batch of shape {(batch,) + tuple(obs_shape)}"
    if isinstance(out, (tuple, list)):
        if len(out) != 2:
            raise ValueError(
                f"The {where} returned {len(out)} outputs. Expected dist_inputs "
                f"[B, {num_outputs}] or a pair (dist_inputs, value [B])."
            )
        dist_inputs, value = out
        value_shape = tuple(value.shape)
        if value_shape not in ((batch,), (batch, 1)):
            raise ValueError(
                f"The {where} returned a value of shape {value_shape}. Expected "
                f"[B] or [B, 1], i.e. {(batch,)}."
            )
        has_value = True
    else:
        dist_inputs, value_shape, has_value = out, None, False
    if tuple(dist_inputs.shape) != (batch, num_outputs):
        raise ValueError(
            f"The {where} returned dist_inputs of shape {tuple(dist_inputs.shape)}. "
            f"Expected [B, num_outputs] = {(batch, num_outputs)}; num_outputs comes from "
            "the action distribution (ModelCatalog.get_action_dist). Change the model's "
            "last layer to Dense(num_outputs)."
        )
    if not has_value:
        warnings.warn(
            f"The {where} returns only dist_inputs; its value output is zeros, so "
            "value-based losses (critic, GAE baselines) will not learn. Return "
            "(dist_inputs, value) to fix.",
            stacklevel=3,
        )
    complete = all(hasattr(model, a) for a in ("num_outputs", "get_initial_state"))
    if has_value and value_shape == (batch,) and complete:
        return model
    return KerasModelWrapper(
        model, obs_space, action_space, num_outputs, model_config, has_value,
        name=f"{model.name}_wrapped",
    )


def _check_recurrent(model: keras.Model, obs_shape: Tuple[int, ...], num_outputs: int) -> None:
    """Calls a recurrent user model on a dummy `[2, 3, *obs_shape]` batch and checks it."""
    batch, max_time = 2, 3
    if not callable(getattr(model, "get_initial_state", None)):
        raise ValueError(
            f"The recurrent custom model {model.name!r} has no get_initial_state(batch_size) "
            "method. Add one returning the list of initial state arrays, each [B, ...]."
        )
    state = model.get_initial_state(batch)
    obs = np.zeros((batch, max_time) + tuple(obs_shape), np.float32)
    out = model((obs, state, np.full((batch,), max_time, np.int32)), training=False)
    where = f"recurrent custom model {model.name!r} on a dummy batch of shape {obs.shape}"
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError(
            f"The {where} returned {type(out).__name__}. Expected a triple "
            f"(dist_inputs [B, T, {num_outputs}], value [B, T], state_out list)."
        )
    dist_inputs, value, state_out = out
    if tuple(dist_inputs.shape) != (batch, max_time, num_outputs) or tuple(value.shape) != (
        batch, max_time
    ):
        raise ValueError(
            f"The {where} returned dist_inputs of shape {tuple(dist_inputs.shape)} and value "
            f"of shape {tuple(value.shape)}. Expected {(batch, max_time, num_outputs)} and "
            f"{(batch, max_time)}."
        )
    if len(state_out) != len(state):
        raise ValueError(
            f"The {where} returned {len(state_out)} state tensors but get_initial_state "
            f"returned {len(state)}. Expected the same number."
        )
