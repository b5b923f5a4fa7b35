"""Attention memory (GTrXL, "Stabilizing Transformers for RL", Parisotto et al. 2019).

Keras 3 layers after the behaviour of RLlib's `GTrXLNet` (`use_attention=True`):

- `relative_position_embedding(n, dim)`: sinusoidal embeddings of distances `0..n-1`.
- `RelativeMultiHeadAttention`: multi-head attention of `T` new steps over `M` memory
  rows plus themselves (causal), with Transformer-XL's relative positions (the `u`/`v`
  biases), on layer-normed inputs.
- `GRUGate`: the gated residual `(1 - z) * x + z * h`, whose update gate starts
  almost closed (bias `attention_init_gru_gate_bias`): the unit starts near identity.
- `GTrXLWrapper`: RLlib's `AttentionWrapper` around its default base model: the
  observation encoder (the `fcnet_hiddens` stack, or the conv stack for images), the
  previous n actions and rewards if asked for, a linear projection to `attention_dim`,
  `attention_num_transformer_units` units (gated attention, gated position-wise MLP),
  then policy and value heads.

The memory is carried as the LSTM's state is (tfrl's recurrent call contract): one
state tensor `[B, M, attention_dim]` per unit (M = `attention_memory_inference`), the
last M inputs that unit saw. `state_out` holds the M rows ending at each sequence's
last valid step, so padded steps (at or after `seq_lens[b]`) change no state, and by
causality no valid output sees them. The previous n actions/rewards
(`attention_use_n_prev_actions` / `_rewards`, RLlib's `"-n:-1"` views) are built the
same way from the one-step `prev_actions` / `prev_rewards` columns the samplers already
record: the n - 1 before the sequence's first step are carried as two more state
tensors.
"""

from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.recurrent_net import (_unpack, check_prev_action_space, encode_actions,
                                          obs_encoder, required_prev, zero_prev_inputs)
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


def prev_window(values: tf.Tensor, memory: tf.Tensor, seq_lens: tf.Tensor
                ) -> Tuple[List[tf.Tensor], tf.Tensor]:
    """The last n values up to each step, from one value per step and the n - 1 before.

    `values [B, T, D]` holds each step's previous action (or reward), `memory
    [B, n - 1, D]` the n - 1 values before the sequence's first step (zeros at an
    episode's start, as RLlib pads a `"-n:-1"` view). Returns `(window, memory_out)`:
    `window` a list of n `[B, T, D]` tensors, oldest first (entry j at step t is
    `values[t - n + 1 + j]`, the last is `values[t]`), and `memory_out [B, n - 1, D]`
    the n - 1 values ending at each row's last valid step (`shift_memory`).
    """
    steps = tf.shape(values)[1]
    full = tf.concat([tf.cast(memory, values.dtype), values], axis=1)  # [B, n - 1 + T, D]
    window = [full[:, j:j + steps] for j in range(memory.shape[1] + 1)]
    return window, shift_memory(memory, values, seq_lens)


class GTrXLWrapper(TFModel):
    """A recurrent policy with GTrXL memory, after RLlib's `AttentionWrapper` around the
    default model (`use_attention=True`).

    The observation goes through the encoder RLlib's wrapped base model is: the
    `fcnet_hiddens` dense layers (`fcnet_activation`) on the flattened observation,
    or the conv stack for image observations (with `fcnet_hiddens: []` the flattened
    observation itself). With `attention_use_n_prev_actions` n > 0 the previous n
    actions (one-hot for Discrete/MultiDiscrete, flattened for Box; oldest first) and
    with `attention_use_n_prev_rewards` m > 0 the previous m rewards are concatenated to
    the features, zeros before an episode's first step. A linear layer projects them to
    `attention_dim`, `attention_num_transformer_units` GTrXL units follow, and the
    policy and value heads read the last unit's output (the value head shares the whole
    network, as in RLlib's wrapper; `vf_share_layers` is not read).

    State: one `[B, attention_memory_inference, attention_dim]` tensor per unit (its last
    inputs), then `[B, n - 1, A]` previous actions if n > 1 (A: 1 for Discrete, the
    number of components for MultiDiscrete, the flat size for Box; the raw actions, as
    floats) and `[B, m - 1, 1]` previous rewards if m > 1; zeros at an episode's start.
    The samplers, batches, learners and the SavedModel carry them like any state and
    feed the model the one-step `prev_actions` / `prev_rewards` columns (as for
    `lstm_use_prev_action`), from which it builds the windows (`prev_window`).
    Constructor arguments: those of `TFModel` (default name "gtrxl").

    Call:
        `model((obs [B, T, *obs_shape], state_in, seq_lens [B]), training=False,
        prev_actions=None, prev_rewards=None) -> (dist_inputs [B, T, num_outputs],
        value [B, T], state_out)`; `prev_actions [B, T, ...]` / `prev_rewards [B, T]` are
        required with n / m > 0 (`prev_input_kwargs` gives zero-filled examples).
    """

    is_recurrent = True
    default_name = "gtrxl"
    #: The settings behind `use_prev_action` / `use_prev_reward`, for error messages.
    prev_settings = ("attention_use_n_prev_actions > 0", "attention_use_n_prev_rewards > 0")

    def _build_layers(self) -> None:
        config = self.model_config
        self.num_prev_actions = _count(config, "attention_use_n_prev_actions")
        self.num_prev_rewards = _count(config, "attention_use_n_prev_rewards")
        # The flags the policy reads to feed (and the samplers to record) prev columns.
        self.use_prev_action = self.num_prev_actions > 0
        self.use_prev_reward = self.num_prev_rewards > 0
        if self.use_prev_action:
            check_prev_action_space(self.action_space, "attention_use_n_prev_actions > 0",
                                    "attention_use_n_prev_actions=0")
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
        self.encoder = obs_encoder(config, self.obs_space, "enc")
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

    def _action_width(self) -> int:
        """The width of one raw previous action in the state (see the class docstring)."""
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            return 1
        return int(np.prod(space.shape))

    def get_initial_state(self, batch_size: int = 1) -> List[np.ndarray]:
        """Zeros: one `[batch_size, memory, attention_dim]` tensor per unit, then the
        previous-action and -reward windows (see the class docstring)."""
        state = [np.zeros((batch_size, self.memory, self.dim), np.float32)
                 for _ in range(self.num_units)]
        if self.num_prev_actions > 1:
            state.append(np.zeros((batch_size, self.num_prev_actions - 1, self._action_width()),
                                  np.float32))
        if self.num_prev_rewards > 1:
            state.append(np.zeros((batch_size, self.num_prev_rewards - 1, 1), np.float32))
        return state

    def prev_input_kwargs(self, batch_size: int, max_time: int) -> Dict[str, np.ndarray]:
        """Zero-filled `prev_actions`/`prev_rewards` call kwargs this model needs (or {})."""
        return zero_prev_inputs(self.action_space, self.use_prev_action, self.use_prev_reward,
                                batch_size, max_time)

    def call(self, inputs, training=False, prev_actions=None, prev_rewards=None
             ) -> Tuple[tf.Tensor, tf.Tensor, List[tf.Tensor]]:
        obs, state_in, seq_lens = _unpack(inputs)
        state_in = list(state_in)
        num_states = len(self.get_initial_state())
        if len(state_in) != num_states:
            raise ValueError(
                f"This attention model takes {num_states} state tensors (one memory per "
                "transformer unit, then the previous-action and -reward windows longer than "
                f"one step); received {len(state_in)}. Pass get_initial_state()'s list.")
        obs = to_float(obs)
        batch_size, max_time = tf.shape(obs)[0], tf.shape(obs)[1]
        flat = tf.reshape(obs, tf.concat([[batch_size * max_time], self.obs_shape], 0))
        features = apply(self.encoder, flat)  # [B*T, F]
        features = [tf.reshape(features, [batch_size, max_time, features.shape[-1]])]
        action_memory, reward_memory = self._window_states(state_in)
        window_out = []
        if self.use_prev_action:
            actions = required_prev(prev_actions, "prev_actions", self.prev_settings[0])
            raw = tf.reshape(tf.cast(actions, tf.float32),
                             [batch_size, max_time, self._action_width()])  # [B, T, A]
            steps, carried = _window(raw, action_memory, seq_lens)
            window_out += carried
            features += [encode_actions(self.action_space, self._unflatten_action(step))
                         for step in steps]  # n x [B, T, one-hot or flat width]
        if self.use_prev_reward:
            rewards = required_prev(prev_rewards, "prev_rewards", self.prev_settings[1])
            raw = tf.reshape(tf.cast(rewards, tf.float32), [batch_size, max_time, 1])
            steps, carried = _window(raw, reward_memory, seq_lens)
            window_out += carried
            features += steps  # m x [B, T, 1]
        x = self.project(tf.concat(features, axis=-1))  # [B, T, attention_dim]
        state_out = []
        for unit, memory in zip(self.units, state_in[:self.num_units]):
            memory = tf.cast(memory, tf.float32)
            state_out.append(shift_memory(memory, x, seq_lens))
            x = unit(x, memory)
        dist_inputs = self.policy_head(x)  # [B, T, num_outputs]
        value = tf.squeeze(self.value_out(x), axis=-1)  # [B, T]
        return dist_inputs, value, state_out + window_out

    def _window_states(self, state_in: List[Any]) -> Tuple[Optional[Any], Optional[Any]]:
        """The previous-action and -reward window states in `state_in` (None: no
        state, a window of one step)."""
        windows = iter(state_in[self.num_units:])
        actions = next(windows) if self.num_prev_actions > 1 else None
        rewards = next(windows) if self.num_prev_rewards > 1 else None
        return actions, rewards

    def _unflatten_action(self, raw: tf.Tensor) -> tf.Tensor:
        """One step of the raw action window `[B, T, A]` in `encode_actions`' layout."""
        if isinstance(self.action_space, gym.spaces.Discrete):
            return raw[..., 0]  # [B, T]
        return raw  # MultiDiscrete [B, T, k]; Box: flattened again by encode_actions


def _window(raw: tf.Tensor, memory: Optional[Any], seq_lens: tf.Tensor
            ) -> Tuple[List[tf.Tensor], List[tf.Tensor]]:
    """`prev_window(raw [B, T, D], memory)` as `(steps, [memory_out])`; with no memory
    (a window of one step) `([raw], [])`."""
    if memory is None:
        return [raw], []
    steps, memory_out = prev_window(raw, tf.cast(memory, tf.float32), seq_lens)
    return steps, [memory_out]


def _count(config: Dict[str, Any], key: str) -> int:
    """A non-negative int setting, or a clear error."""
    value = config.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(
            f"{key} must be a non-negative int (how many previous steps to feed the "
            f"attention net). Received: {key}={value!r}. Use 0 to leave them out.")
    return int(value)
