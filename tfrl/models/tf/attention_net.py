"""Attention memory (GTrXL, "Stabilizing Transformers for RL", Parisotto et al. 2019).

Keras 3 layers after the behaviour of RLlib's `GTrXLNet` (`use_attention=True`):

- `relative_position_embedding(n, dim)`: sinusoidal embeddings of distances `0..n-1`.
- `RelativeMultiHeadAttention`: multi-head attention of `T` new steps over `M` memory
  rows plus themselves (causal), with Transformer-XL's relative positions (the `u`/`v`
  biases), on layer-normed inputs.
- `GRUGate`: the gated residual `(1 - z) * x + z * h`, whose update gate starts
  almost closed (bias `attention_init_gru_gate_bias`): the unit starts near identity.
- `GTrXLWrapper`: linear projection -> `attention_num_transformer_units` units (gated
  attention, gated position-wise MLP) -> policy and value heads.

The memory is carried as the LSTM's state is (tfrl's recurrent call contract): one
state tensor `[B, M, attention_dim]` per unit (M = `attention_memory_inference`), the
last M inputs that unit saw. `state_out` holds the M rows ending at each sequence's
last valid step, so padded steps (at or after `seq_lens[b]`) change no state, and by
causality no valid output sees them.
"""

from typing import Any, List, Tuple

import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.recurrent_net import _unpack
from tfrl.models.tf.tf_model import PolicyHead, TFModel, apply, to_float, value_head


def relative_position_embedding(length: Any, dim: int) -> tf.Tensor:
    """Sinusoidal embeddings `[length, dim]` of the distances `0..length-1` (dim even)."""
    if dim % 2:
        raise ValueError(f"attention_dim must be even for the position embedding. Received: {dim}.")
    inv_freq = 1.0 / (10000.0 ** (tf.range(0, dim, 2, dtype=tf.float32) / float(dim)))
    pos = tf.cast(tf.range(length), tf.float32)
    angles = pos[:, None] * inv_freq[None, :]  # [length, dim/2]
    return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)


class RelativeMultiHeadAttention(keras.layers.Layer):
    """`(inputs [B, T, D], memory [B, M, D]) -> [B, T, out_dim]`.

    Query step i (at position M + i of `[memory; inputs]`) attends to positions
    `i <= j <= M + i` (itself and the M positions before it: a sliding window, so a
    sequence run in one call gives the same outputs as one step at a time with the
    memory carried); its score is `((q_i + u) . k_j + (q_i + v) . R_{M+i-j}) / sqrt(head_dim)`
    with R the projected sinusoidal embedding of the distance. Masked scores are set to
    the dtype's minimum (no inf arithmetic).
    """

    def __init__(self, out_dim: int, num_heads: int, head_dim: int, **kwargs):
        super().__init__(**kwargs)
        self.out_dim, self.num_heads, self.head_dim = int(out_dim), int(num_heads), int(head_dim)
        inner = self.num_heads * self.head_dim
        self.norm = keras.layers.LayerNormalization(axis=-1, name="ln")
        self.qkv = keras.layers.Dense(3 * inner, use_bias=False, name="qkv")
        self.pos = keras.layers.Dense(inner, use_bias=False, name="pos")
        self.out = keras.layers.Dense(self.out_dim, use_bias=False, name="out")

    def build(self, input_shape):
        dim = int(input_shape[-1])
        self.u = self.add_weight(shape=(self.num_heads, self.head_dim), initializer="zeros",
                                 name="u")
        self.v = self.add_weight(shape=(self.num_heads, self.head_dim), initializer="zeros",
                                 name="v")
        self.norm.build((None, None, dim))
        self.qkv.build((None, None, dim))
        self.pos.build((None, dim))
        self.out.build((None, None, self.num_heads * self.head_dim))
        self._dim = dim

    def call(self, inputs, memory):
        heads, hd = self.num_heads, self.head_dim
        batch, steps = tf.shape(inputs)[0], tf.shape(inputs)[1]
        mem_len = tf.shape(memory)[1]
        total = mem_len + steps
        full = self.norm(tf.concat([tf.cast(memory, inputs.dtype), inputs], axis=1))
        qkv = tf.reshape(self.qkv(full), [batch, total, 3, heads, hd])
        q, k, v = qkv[:, -steps:, 0], qkv[:, :, 1], qkv[:, :, 2]  # q: [B, T, H, d]
        rel = tf.reshape(self.pos(relative_position_embedding(total, self._dim)),
                         [total, heads, hd])  # [K=M+T, H, d], by distance
        content = tf.einsum("bihd,bjhd->bijh", q + self.u, k)  # [B, T, M+T, H]
        by_dist = tf.einsum("bihd,khd->bikh", q + self.v, rel)  # [B, T, K, H]
        # distance of query i to key j: M + i - j (negative: a future key, masked)
        dist = mem_len + tf.range(steps)[:, None] - tf.range(total)[None, :]  # [T, M+T]
        # A sliding window: each step sees exactly the M steps before it and itself, as
        # when sampling one step at a time, so training on a sequence reproduces sampling.
        allowed = (dist >= 0) & (dist <= mem_len)
        idx = tf.clip_by_value(dist, 0, total - 1)
        position = tf.gather(tf.transpose(by_dist, [1, 2, 0, 3]), idx, axis=1, batch_dims=1)
        position = tf.transpose(position, [2, 0, 1, 3])  # [B, T, M+T, H]
        score = (content + position) / np.sqrt(hd).astype(np.float32)
        score = tf.where(allowed[None, :, :, None], score, score.dtype.min)
        probs = tf.nn.softmax(score, axis=2)
        attended = tf.einsum("bijh,bjhd->bihd", probs, v)
        return self.out(tf.reshape(attended, [batch, steps, heads * hd]))


class GRUGate(keras.layers.Layer):
    """`(x, y) -> (1 - z) * x + z * h`, with `r = sigmoid(W_r y + U_r x)`,
    `z = sigmoid(W_z y + U_z x - init_bias)`, `h = tanh(W_h y + U_h (r * x))`.
    x is the residual stream, y the sublayer's output (same width)."""

    def __init__(self, init_bias: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.init_bias = float(init_bias)

    def build(self, input_shape):
        dim = int(input_shape[-1])

        def kernel(name):
            return self.add_weight(shape=(dim, dim), initializer="glorot_uniform", name=name)

        self.w_r, self.w_z, self.w_h = kernel("w_r"), kernel("w_z"), kernel("w_h")
        self.u_r, self.u_z, self.u_h = kernel("u_r"), kernel("u_z"), kernel("u_h")
        self.bias_z = self.add_weight(
            shape=(dim,), initializer=keras.initializers.Constant(self.init_bias), name="bias_z")

    def call(self, x, y):
        r = tf.sigmoid(tf.matmul(y, self.w_r) + tf.matmul(x, self.u_r))
        z = tf.sigmoid(tf.matmul(y, self.w_z) + tf.matmul(x, self.u_z) - self.bias_z)
        h = tf.tanh(tf.matmul(y, self.w_h) + tf.matmul(r * x, self.u_h))
        return (1.0 - z) * x + z * h


class GTrXLUnit(keras.layers.Layer):
    """One transformer unit: gated relative attention, then a gated position-wise MLP
    (layer norm -> Dense(mlp_dim, relu) -> Dense(dim, relu))."""

    def __init__(self, dim: int, num_heads: int, head_dim: int, mlp_dim: int,
                 init_gru_gate_bias: float, **kwargs):
        super().__init__(**kwargs)
        self.attention = RelativeMultiHeadAttention(dim, num_heads, head_dim, name="mha")
        self.gate1 = GRUGate(init_gru_gate_bias, name="gate1")
        self.mlp = [keras.layers.LayerNormalization(axis=-1, name="mlp_ln"),
                    keras.layers.Dense(mlp_dim, activation="relu", name="mlp_0"),
                    keras.layers.Dense(dim, activation="relu", name="mlp_1")]
        self.gate2 = GRUGate(init_gru_gate_bias, name="gate2")

    def call(self, inputs, memory):
        x = self.gate1(inputs, tf.nn.relu(self.attention(inputs, memory)))
        return self.gate2(x, apply(self.mlp, x))


def shift_memory(memory: tf.Tensor, inputs: tf.Tensor, seq_lens: tf.Tensor) -> tf.Tensor:
    """The M rows of `[memory; inputs]` ending at each row's last valid step:
    `memory [B, M, D]`, `inputs [B, T, D]`, `seq_lens [B]` -> `[B, M, D]`."""
    mem_len = memory.shape[1]
    full = tf.concat([tf.cast(memory, inputs.dtype), inputs], axis=1)
    idx = tf.cast(seq_lens, tf.int32)[:, None] + tf.range(mem_len)[None, :]  # [B, M]
    return tf.gather(full, idx, axis=1, batch_dims=1)


class GTrXLWrapper(TFModel):
    """A recurrent policy with GTrXL memory: flatten -> Dense(`attention_dim`) ->
    `attention_num_transformer_units` GTrXL units -> policy and value heads (the value
    head shares the units, as RLlib's attention wrapper does).

    State: one `[B, attention_memory_inference, attention_dim]` tensor per unit (its last
    inputs; zeros at an episode's start). Call as `LSTMWrapper`:
    `model((obs [B, T, *obs_shape], state_in, seq_lens [B]), training=False) ->
    (dist_inputs [B, T, num_outputs], value [B, T], state_out)`.
    """

    is_recurrent = True
    default_name = "gtrxl"

    def _build_layers(self) -> None:
        config = self.model_config
        for key in ("attention_use_n_prev_actions", "attention_use_n_prev_rewards"):
            if int(config.get(key) or 0):
                raise ValueError(
                    f"{key} > 0 is not supported yet. Received: {key}={config[key]}. Set it "
                    "to 0 (the attention memory already sees past observations).")
        if int(config["attention_memory_training"]) != int(config["attention_memory_inference"]):
            raise ValueError(
                "tfrl carries the attention memory as the recurrent state, one length for "
                "sampling and training. Received: attention_memory_training="
                f"{config['attention_memory_training']}, attention_memory_inference="
                f"{config['attention_memory_inference']}. Set both to the same value.")
        self.obs_shape = tuple(self.obs_space.shape)
        self.dim = int(config["attention_dim"])
        self.memory = int(config["attention_memory_inference"])
        self.num_units = int(config["attention_num_transformer_units"])
        if self.memory < 1 or self.num_units < 1:
            raise ValueError(
                "attention_memory_inference and attention_num_transformer_units must be >= 1. "
                f"Received: {self.memory} and {self.num_units}.")
        self.flatten = keras.layers.Flatten()
        self.project = keras.layers.Dense(self.dim, name="project")
        self.units = [
            GTrXLUnit(self.dim, int(config["attention_num_heads"]),
                      int(config["attention_head_dim"]),
                      int(config["attention_position_wise_mlp_dim"]),
                      float(config["attention_init_gru_gate_bias"]), name=f"unit_{i}")
            for i in range(self.num_units)
        ]
        self.policy_head = PolicyHead(
            self.num_outputs, bool(config["free_log_std"]), name="pi")
        self.value_out = value_head()

    def get_initial_state(self, batch_size: int = 1) -> List[np.ndarray]:
        """Zeros: one `[batch_size, memory, attention_dim]` tensor per unit."""
        return [np.zeros((batch_size, self.memory, self.dim), np.float32)
                for _ in range(self.num_units)]

    def call(self, inputs, training=False) -> Tuple[tf.Tensor, tf.Tensor, List[tf.Tensor]]:
        obs, state_in, seq_lens = _unpack(inputs)
        state_in = list(state_in)
        if len(state_in) != self.num_units:
            raise ValueError(
                f"This attention model takes {self.num_units} state tensors (one memory per "
                f"transformer unit); received {len(state_in)}. Pass get_initial_state()'s list.")
        obs = to_float(obs)
        batch_size, max_time = tf.shape(obs)[0], tf.shape(obs)[1]
        flat = self.flatten(tf.reshape(obs, tf.concat([[batch_size * max_time],
                                                       self.obs_shape], 0)))
        x = tf.reshape(self.project(flat), [batch_size, max_time, self.dim])
        state_out = []
        for unit, memory in zip(self.units, state_in):
            memory = tf.cast(memory, tf.float32)
            state_out.append(shift_memory(memory, x, seq_lens))
            x = unit(x, memory)
        dist_inputs = self.policy_head(x)  # [B, T, num_outputs]
        value = tf.squeeze(self.value_out(x), axis=-1)  # [B, T]
        return dist_inputs, value, state_out
