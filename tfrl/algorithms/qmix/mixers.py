"""QMIX's mixers as Keras models (RLlib's `ray.rllib.algorithms.qmix.mixers`): `QMixer`,
the monotonic mixing network whose weights are hypernetworks of the global state, and
`VDNMixer`, the sum. Both map `(agent_qs [B, N], states [B, S])` to `Q_tot [B, 1]`; the
math is `qmix_loss.qmix_mix` / `vdn_mix`.

Example:
    >>> import numpy as np
    >>> mixer = QMixer(n_agents=2, state_dim=3, mixing_embed_dim=4)
    >>> mixer(np.zeros((5, 2), np.float32), np.zeros((5, 3), np.float32)).shape
    TensorShape([5, 1])
"""

from typing import Any

import keras
import tensorflow as tf

from tfrl.algorithms.qmix.qmix_loss import qmix_mix, vdn_mix


class QMixer(keras.Model):
    """The monotonic mixing network (Rashid et al. 2018): from the state `s`, linear
    hypernetworks give the first layer's weights `W1 [N, E]` and bias `b1 [E]` and the
    output weights `w_final [E]`; a two-layer network (ReLU hidden layer of `E`) gives
    the state value `V(s)`; `qmix_mix` makes the weights non-negative and mixes.

    Args:
        n_agents: N, the agents of the group.
        state_dim: S, the size of the (flat) state.
        mixing_embed_dim: E, the mixing layer's width.
    """

    def __init__(self, n_agents: int, state_dim: int, mixing_embed_dim: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.n_agents, self.state_dim, self.embed_dim = n_agents, state_dim, mixing_embed_dim
        self.hyper_w_1 = keras.layers.Dense(mixing_embed_dim * n_agents, name="hyper_w_1")
        self.hyper_w_final = keras.layers.Dense(mixing_embed_dim, name="hyper_w_final")
        self.hyper_b_1 = keras.layers.Dense(mixing_embed_dim, name="hyper_b_1")
        self.v_hidden = keras.layers.Dense(mixing_embed_dim, activation="relu", name="v_hidden")
        self.v_out = keras.layers.Dense(1, name="v_out")
        self(tf.zeros((1, n_agents)), tf.zeros((1, state_dim)))  # builds the weights

    def call(self, agent_qs: Any, states: Any) -> tf.Tensor:
        states = tf.cast(states, tf.float32)  # [B, S]
        w1 = tf.reshape(self.hyper_w_1(states), [-1, self.n_agents, self.embed_dim])
        return qmix_mix(tf.cast(agent_qs, tf.float32), w1, self.hyper_b_1(states),
                        self.hyper_w_final(states), self.v_out(self.v_hidden(states)))


class VDNMixer(keras.Model):
    """VDN's mixer: `Q_tot = sum_i q_i` (no weights; the states are not read)."""

    def call(self, agent_qs: Any, states: Any = None) -> tf.Tensor:
        return vdn_mix(tf.cast(agent_qs, tf.float32))
