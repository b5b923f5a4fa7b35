"""The fully connected model for flat (or flattened) observations."""

import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.tf_model import PolicyHead, TFModel, apply, dense_stack, to_float, value_head


class FullyConnectedNetwork(TFModel):
    """An MLP policy with a separate or shared value branch.

    Hidden layers are `fcnet_hiddens + post_fcnet_hiddens` with `fcnet_activation`.
    With `vf_share_layers=False` the value function has its own MLP of the same sizes;
    otherwise its head sits on the last shared hidden layer. Observations of rank > 1
    are flattened. Constructor arguments: those of `TFModel` (default name "fc").

    Call:
        `model(obs, training=False) -> (dist_inputs [B, num_outputs], value [B])`.
    """

    default_name = "fc"

    def _build_layers(self) -> None:
        model_config, num_outputs = self.model_config, self.num_outputs
        hiddens = list(model_config["fcnet_hiddens"]) + list(model_config["post_fcnet_hiddens"])
        activation = model_config["fcnet_activation"]
        self.flatten = keras.layers.Flatten()
        init = (model_config.get("fcnet_weights_initializer"),
                model_config.get("fcnet_weights_initializer_config"))
        self.hidden_layers = dense_stack(hiddens, activation, "fc", *init)
        self.policy_head = PolicyHead(num_outputs, bool(model_config["free_log_std"]), name="pi")
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.value_layers = (
            [] if self.vf_share_layers else dense_stack(hiddens, activation, "fc_value", *init)
        )
        self.value_out = value_head()

    def build(self, input_shape):
        # The layers' shapes follow from the observation shape: build them directly, in
        # `call`'s order (so a seed gives the same weights), rather than letting Keras
        # trace `call` symbolically to find them (~0.25 s of start-up).
        flat = (None, int(np.prod(input_shape[1:])))
        shape = _build_stack(self.hidden_layers, flat)
        self.policy_head.build(shape)
        self.value_out.build(shape if self.vf_share_layers
                             else _build_stack(self.value_layers, flat))

    def call(self, obs, training=False):
        x = self.flatten(to_float(obs))  # [B, obs_dim]
        features = apply(self.hidden_layers, x)  # [B, H]
        dist_inputs = self.policy_head(features)  # [B, num_outputs]
        value_features = features if self.vf_share_layers else apply(self.value_layers, x)
        value = tf.squeeze(self.value_out(value_features), axis=-1)  # [B]
        return dist_inputs, value


def _build_stack(layers, shape):
    """Builds Dense `layers` in order from input `shape`; returns the output shape."""
    for layer in layers:
        layer.build(shape)
        shape = (None, layer.units)
    return shape
