"""TFModelV2: RLlib's custom-model API (`forward` + `value_function`) on Keras 3.

RLlib custom models subclass `TFModelV2`, build Keras layers in `__init__`, return
`(model_out, state)` from `forward(input_dict, state, seq_lens)` and the last forward
pass's values from `value_function()`. tfrl's `TFModelV2` is a `keras.Model` whose
`call(obs)` runs exactly that and returns `(dist_inputs [B, N], value [B])`, so such a
model plugs into `ModelCatalog` (via `custom_model`) unchanged. `input_dict["obs"]` and
`input_dict["obs_flat"]` both hold the preprocessed observation batch.

Example:
    >>> import gymnasium as gym, keras, numpy as np, tensorflow as tf
    >>> class MyModel(TFModelV2):
    ...     def __init__(self, obs_space, action_space, num_outputs, model_config, name):
    ...         super().__init__(obs_space, action_space, num_outputs, model_config, name)
    ...         self.pi = keras.layers.Dense(num_outputs)
    ...         self.vf = keras.layers.Dense(1)
    ...     def forward(self, input_dict, state, seq_lens):
    ...         self._value_out = self.vf(input_dict["obs"])
    ...         return self.pi(input_dict["obs"]), state
    ...     def value_function(self):
    ...         return tf.reshape(self._value_out, [-1])
    >>> model = MyModel(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2), 2, {}, "my")
    >>> [tuple(t.shape) for t in model(np.zeros((4, 3), np.float32))]
    [(4, 2), (4,)]
"""

from typing import Any, Dict, List, Tuple

import tensorflow as tf

from tfrl.models.tf.tf_model import TFModel, to_float


class TFModelV2(TFModel):
    """Base class for RLlib-style custom models (feed-forward).

    Args:
        obs_space: The observation space.
        action_space: The action space.
        num_outputs: Size of the `model_out` that `forward` must return.
        model_config: The model config.
        name: The Keras model name.
    """

    def forward(
        self, input_dict: Dict[str, Any], state: List[Any], seq_lens: Any
    ) -> Tuple[tf.Tensor, List[Any]]:
        """Returns `(model_out [B, num_outputs], state)`; override this."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward().")

    def value_function(self) -> tf.Tensor:
        """Returns the values `[B]` of the last `forward` call; override this."""
        raise NotImplementedError(
            f"{type(self).__name__} has no value_function(); override it to return the "
            "value estimates [B] of the last forward() call."
        )

    def call(self, obs, training=False):
        obs = to_float(obs)  # [B, *obs_shape]
        input_dict = {
            "obs": obs,
            "obs_flat": tf.reshape(obs, [tf.shape(obs)[0], -1]),
            "is_training": training,
        }
        model_out, _ = self.forward(input_dict, [], None)  # [B, num_outputs]
        value = tf.reshape(self.value_function(), [-1])  # [B]
        return model_out, value
