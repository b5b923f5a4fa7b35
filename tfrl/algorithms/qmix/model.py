"""QMIX's agent network (RLlib's `ray.rllib.algorithms.qmix.model`): one network shared by
all agents of a group, from an agent's observation features to its Q-values.

tfrl's is feed-forward: the dense layers of `model["fcnet_hiddens"]` with
`fcnet_activation`, then a linear layer of one output per action. (RLlib's `RNNModel` is
a dense layer, a GRU cell and the output layer; recurrent agent networks are not
implemented here.)

Example:
    >>> import numpy as np
    >>> net = agent_q_network(obs_size=6, num_actions=2, model_config={"fcnet_hiddens": [8]})
    >>> net(np.zeros((3, 6), np.float32)).shape
    TensorShape([3, 2])
"""

from typing import Any, Dict, Optional

import keras

from tfrl.models.model_defaults import model_setting


def agent_q_network(obs_size: int, num_actions: int,
                    model_config: Optional[Dict[str, Any]] = None) -> keras.Model:
    """The agent network `[B, obs_size] -> [B, num_actions]` (see the module docstring)."""
    model_config = model_config or {}
    activation = model_setting(model_config, "fcnet_activation")
    inputs = keras.Input((obs_size,), name="agent_obs")
    x = inputs
    for i, size in enumerate(model_setting(model_config, "fcnet_hiddens")):
        x = keras.layers.Dense(int(size), activation=activation, name=f"fc_{i}")(x)
    outputs = keras.layers.Dense(num_actions, name="q_values")(x)
    return keras.Model(inputs, outputs, name="qmix_agent")
