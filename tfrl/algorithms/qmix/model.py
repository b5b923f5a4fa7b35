"""QMIX's agent networks (RLlib's `ray.rllib.algorithms.qmix.model`): one network shared by
all agents of a group, from an agent's observation features to its Q-values.

- `AgentGRU` (`agent_network="gru"`, the default; RLlib's `RNNModel`): a dense layer of
  `model["lstm_cell_size"]` units with ReLU, a GRU cell of the same size and a linear
  layer of one output per action. The GRU's hidden state is each agent's memory of its
  episode: carried from step to step while acting (zeros at an episode's start) and
  unrolled over replayed sequences when learning. `gru_step_numpy` is its step in numpy
  (acting without a TensorFlow call per step).
- `agent_q_network` (`agent_network="fcnet"`): feed-forward, the dense layers of
  `model["fcnet_hiddens"]` with `fcnet_activation`, then the linear output layer.

Example:
    >>> import numpy as np
    >>> net = agent_q_network(obs_size=6, num_actions=2, model_config={"fcnet_hiddens": [8]})
    >>> net(np.zeros((3, 6), np.float32)).shape
    TensorShape([3, 2])
    >>> gru = AgentGRU(obs_size=6, num_actions=2, hidden_size=4)
    >>> q, h = gru.step(np.zeros((3, 6), np.float32), np.zeros((3, 4), np.float32))
    >>> q.shape, h.shape
    (TensorShape([3, 2]), TensorShape([3, 4]))
"""

from typing import Any, Dict, Optional, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from tfrl.models.model_defaults import model_setting
from tfrl.policy.numpy_inference import sigmoid


def agent_q_network(obs_size: int, num_actions: int,
                    model_config: Optional[Dict[str, Any]] = None) -> keras.Model:
    """The feed-forward agent network `[B, obs_size] -> [B, num_actions]` (see the module
    docstring)."""
    model_config = model_config or {}
    activation = model_setting(model_config, "fcnet_activation")
    inputs = keras.Input((obs_size,), name="agent_obs")
    x = inputs
    for i, size in enumerate(model_setting(model_config, "fcnet_hiddens")):
        x = keras.layers.Dense(int(size), activation=activation, name=f"fc_{i}")(x)
    outputs = keras.layers.Dense(num_actions, name="q_values")(x)
    return keras.Model(inputs, outputs, name="qmix_agent")


class AgentGRU(keras.Model):
    """The recurrent agent network: `q, h' = fc2(GRU(relu(fc1(o)), h))`.

    Args:
        obs_size: An agent's observation features.
        num_actions: Its actions (one Q-value each).
        hidden_size: The width of the dense layer and the GRU's state
            (`model["lstm_cell_size"]`).
    """

    def __init__(self, obs_size: int, num_actions: int, hidden_size: int, **kwargs: Any):
        super().__init__(name=kwargs.pop("name", "qmix_agent_gru"), **kwargs)
        self.obs_size, self.num_actions, self.hidden_size = obs_size, num_actions, hidden_size
        self.fc1 = keras.layers.Dense(hidden_size, activation="relu", name="fc1")
        # reset_after=True (Keras' default) is torch's GRUCell: the reset gate scales the
        # recurrent part after its matmul, with separate input and recurrent biases.
        self.rnn = keras.layers.GRUCell(hidden_size, name="gru")
        self.fc2 = keras.layers.Dense(num_actions, name="q_values")
        self.step(tf.zeros((1, obs_size)), tf.zeros((1, hidden_size)))  # builds the weights

    def step(self, obs: Any, h: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        """One step: `obs [M, obs_size]`, `h [M, H]` -> `(q [M, A], h' [M, H])`."""
        h_next, _ = self.rnn(self.fc1(tf.cast(obs, tf.float32)), tf.cast(h, tf.float32))
        return self.fc2(h_next), h_next

    def call(self, inputs: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        obs, h = inputs
        return self.step(obs, h)

    def unroll(self, obs: tf.Tensor, h0: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """Steps through sequences: `obs [B, T, M, obs_size]` from `h0 [B, M, H]` ->
        `(q [B, T, M, A], h [B, T, M, H])`, `h[:, t]` the state after step `t` (the one
        step `t + 1` starts from)."""
        shape = tf.shape(obs)
        b, m = shape[0], shape[2]
        x = self.fc1(tf.reshape(tf.cast(obs, tf.float32), [-1, self.obs_size]))
        x = tf.transpose(tf.reshape(x, [b, shape[1], m, self.hidden_size]),
                         [1, 0, 2, 3])  # [T, B, M, H]
        x = tf.reshape(x, [shape[1], b * m, self.hidden_size])  # [T, B * M, H]

        def cell(h: tf.Tensor, x_t: tf.Tensor) -> tf.Tensor:
            return self.rnn(x_t, h)[0]

        h_seq = tf.scan(cell, x, initializer=tf.reshape(tf.cast(h0, tf.float32),
                                                        [b * m, self.hidden_size]))
        h_seq = tf.transpose(tf.reshape(h_seq, [shape[1], b, m, self.hidden_size]),
                             [1, 0, 2, 3])  # [B, T, M, H]
        q = tf.reshape(self.fc2(tf.reshape(h_seq, [-1, self.hidden_size])),
                       [b, shape[1], m, self.num_actions])
        return q, h_seq


def gru_step_numpy(weights: Sequence[np.ndarray], obs: np.ndarray, h: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """`AgentGRU.step` in numpy: `obs [M, obs_size]`, `h [M, H]` -> `(q [M, A], h' [M, H])`.

    With `x = relu(obs W1 + b1)`, Keras' GRU cell (`reset_after`, torch's `GRUCell`):
    `z = sigmoid(x Wz + bz + h Uz + cz)`, `r = sigmoid(x Wr + br + h Ur + cr)`,
    `n = tanh(x Wn + bn + r (h Un + cn))`, `h' = z h + (1 - z) n`; then `q = h' W2 + b2`.

    Args:
        weights: The values of `AgentGRU.weights`, in their order.
    """
    w1, b1, kernel, recurrent_kernel, bias, w2, b2 = weights
    size = h.shape[-1]
    x = np.maximum(obs @ w1 + b1, 0.0)
    gates_x = x @ kernel + bias[0]  # [M, 3H]: z, r, n
    gates_h = h @ recurrent_kernel + bias[1]

    z = sigmoid(gates_x[:, :size] + gates_h[:, :size])
    r = sigmoid(gates_x[:, size:2 * size] + gates_h[:, size:2 * size])
    n = np.tanh(gates_x[:, 2 * size:] + r * gates_h[:, 2 * size:])
    h_next = (z * h + (1.0 - z) * n).astype(np.float32)
    return (h_next @ w2 + b2).astype(np.float32), h_next


def make_agent_network(obs_size: int, num_actions: int, agent_network: str,
                       model_config: Optional[Dict[str, Any]] = None) -> keras.Model:
    """The agent network `agent_network` names ("gru" or "fcnet")."""
    if agent_network == "gru":
        return AgentGRU(obs_size, num_actions,
                        int(model_setting(model_config or {}, "lstm_cell_size")))
    return agent_q_network(obs_size, num_actions, model_config)
