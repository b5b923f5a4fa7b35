"""Recurrent models: RLlib's `RecurrentNetwork` base class and the built-in LSTM wrapper.

Both follow the recurrent call contract: `model((obs [B, T, ...], state_in, seq_lens
[B])) -> (dist_inputs [B, T, N], value [B, T], state_out)`. The pieces the built-in
recurrent wrappers share (this LSTM and the attention net, `attention_net.GTrXLWrapper`)
live here too: the observation encoder (`obs_encoder`) and the previous-action/-reward
inputs (`encode_actions`, `zero_prev_inputs`, `check_prev_action_space`,
`required_prev`).
"""

import contextlib
import contextvars
import functools
import inspect
from typing import Any, Dict, Iterator, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.ops import control_flow_util  # no public API says "inside XLA"

from tfrl.models.tf.tf_model import (PolicyHead, TFModel, apply, dense_stack, make_initializer,
                                     to_float, value_head)
from tfrl.models.tf.tf_modelv2 import TFModelV2
from tfrl.models.tf.visionnet import conv_stack


class RecurrentNetwork(TFModelV2):
    """Base class for RLlib-style recurrent custom models (`forward_rnn`).

    Subclasses implement `forward_rnn(inputs [B, T, ...], state, seq_lens) ->
    (outputs [B, T, num_outputs], new_state)`, `value_function()` (values of the last
    call, any shape with B*T entries) and `get_initial_state()`. As in RLlib,
    `get_initial_state()` may take no argument and return one item's state (arrays
    without a batch axis); tfrl then stacks it to `get_initial_state(batch_size)`.
    """

    is_recurrent = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("get_initial_state")
        if own is not None and len(inspect.signature(own).parameters) == 1:
            cls.get_initial_state = _batched_initial_state(own)

    def forward_rnn(
        self, inputs: tf.Tensor, state: List[Any], seq_lens: tf.Tensor
    ) -> Tuple[tf.Tensor, List[Any]]:
        """Returns `(outputs [B, T, num_outputs], new_state)`; override this."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward_rnn().")

    def call(self, inputs, training=False):
        obs, state_in, seq_lens = _unpack(inputs)
        outputs, state_out = self.forward_rnn(to_float(obs), list(state_in), seq_lens)
        value = tf.reshape(self.value_function(), tf.shape(outputs)[:2])  # [B, T]
        return outputs, value, list(state_out)


def _batched_initial_state(per_item):
    @functools.wraps(per_item)
    def get_initial_state(self, batch_size: int = 1) -> List[np.ndarray]:
        return [np.stack([np.asarray(s)] * batch_size) for s in per_item(self)]

    return get_initial_state


def _unpack(inputs):
    try:
        obs, state_in, seq_lens = inputs
    except (TypeError, ValueError) as e:
        raise ValueError(
            "A recurrent model is called with (obs, state_in, seq_lens). Received: "
            f"{type(inputs).__name__} {inputs!r:.200}."
        ) from e
    return obs, state_in, seq_lens


class LSTMWrapper(TFModel):
    """A recurrent policy: encoder -> LSTM(`lstm_cell_size`) -> post MLP -> policy and
    value heads.

    The encoder is the conv stack for image observations, else the `fcnet_hiddens` MLP
    (may be empty: the LSTM then reads the observations). The post MLP, dense layers of
    `post_fcnet_hiddens` (`post_fcnet_activation`, the `fcnet_weights_initializer`) on
    the LSTM's outputs, is empty by default (RLlib's LSTM wrapper has none); with
    `fcnet_hiddens: []` and `post_fcnet_hiddens: [64]` the model is SB3-contrib's
    `MlpLstmPolicy` (LSTM first, then `net_arch` per head). The value function's own
    LSTM (see below) has its own post MLP.
    With `vf_share_layers=True` the value head shares the encoder and the LSTM (as
    RLlib's LSTM wrapper does) and the state is `[h, c]`; with `vf_share_layers=False`
    (tfrl's default, as for the feed-forward models) the value function has its own
    encoder and LSTM (as SB3-contrib's `RecurrentPPO` has by default), so the value
    loss does not pull on the policy's memory, and the state is `[h, c, h_vf, c_vf]`.
    Each state tensor is `[B, lstm_cell_size]`. Steps at or after `seq_lens[b]` are
    padding: the LSTM state is not updated there, so valid outputs never depend on
    padded inputs and `state_out` is the state after the last valid step. Constructor
    arguments: those of `TFModel` (default name "lstm").

    With `lstm_use_prev_action` / `lstm_use_prev_reward`, the previous actions
    (one-hot for Discrete/MultiDiscrete, flattened for Box) and rewards are
    concatenated to the encoder's features; they are passed as the call kwargs
    `prev_actions` `[B, T, ...]` and `prev_rewards` `[B, T]` (`prev_input_kwargs`
    gives zero-filled examples with the right shapes and dtypes).

    Call:
        `model((obs [B, T, *obs_shape], state_in, seq_lens [B]), training=False) ->
        (dist_inputs [B, T, num_outputs], value [B, T], state_out)`, the states as
        `get_initial_state` lists them (`[h, c]` or `[h, c, h_vf, c_vf]`).
    """

    is_recurrent = True
    default_name = "lstm"

    def _build_layers(self) -> None:
        obs_space, action_space, model_config = (
            self.obs_space, self.action_space, self.model_config)
        self.use_prev_action = bool(model_config["lstm_use_prev_action"])
        self.use_prev_reward = bool(model_config["lstm_use_prev_reward"])
        if self.use_prev_action:
            check_prev_action_space(action_space, "lstm_use_prev_action=True",
                                    "lstm_use_prev_action=False")
        self.obs_shape = tuple(obs_space.shape)
        self.cell_size = int(model_config["lstm_cell_size"])
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        # Sequences up to this long run unrolled (see run_lstm); longer ones in a loop.
        self.unroll_len = int(model_config["max_seq_len"])
        if self.unroll_len > UNROLL_MAX_LEN:
            self.unroll_len = 0
        self.encoder = self._encoder("enc")
        self.lstm = self._lstm("lstm")
        self.post = self._post_stack("post")
        if not self.vf_share_layers:
            self.vf_encoder = self._encoder("vf_enc")
            self.vf_lstm = self._lstm("vf_lstm")
            self.vf_post = self._post_stack("vf_post")
        self.policy_head = PolicyHead(
            self.num_outputs, bool(model_config["free_log_std"]), name="pi")
        self.value_out = value_head()

    def _lstm(self, name: str) -> keras.layers.LSTM:
        """An LSTM layer; `lstm_weights_initializer` (None: Keras' Glorot-uniform input
        and orthogonal recurrent kernels) sets both kernels, `lstm_bias_initializer`
        (None: zeros with forget-gate bias 1, Keras' `unit_forget_bias`) the bias."""
        config = self.model_config
        weights, bias = config.get("lstm_weights_initializer"), config.get("lstm_bias_initializer")
        kwargs: Dict[str, Any] = {}
        if weights is not None or config.get("lstm_weights_initializer_config"):
            # One initializer object per kernel: a seeded one would draw both alike.
            for arg in ("kernel_initializer", "recurrent_initializer"):
                kwargs[arg] = make_initializer(
                    weights, config.get("lstm_weights_initializer_config"),
                    key="lstm_weights_initializer")
        if bias is not None or config.get("lstm_bias_initializer_config"):
            kwargs["bias_initializer"] = make_initializer(
                bias, config.get("lstm_bias_initializer_config"), key="lstm_bias_initializer")
            kwargs["unit_forget_bias"] = False
        return keras.layers.LSTM(self.cell_size, return_sequences=True, return_state=True,
                                 name=name, **kwargs)

    def _encoder(self, prefix: str) -> List[keras.layers.Layer]:
        return obs_encoder(self.model_config, self.obs_space, prefix)

    def _post_stack(self, prefix: str) -> List[keras.layers.Layer]:
        model_config = self.model_config
        return dense_stack(
            model_config["post_fcnet_hiddens"], model_config["post_fcnet_activation"], prefix,
            model_config.get("fcnet_weights_initializer"),
            model_config.get("fcnet_weights_initializer_config"),
        )

    def get_initial_state(self, batch_size: int = 1) -> List[np.ndarray]:
        """Zeros: `[h, c]`, plus `[h_vf, c_vf]` without `vf_share_layers`."""
        num_states = 2 if self.vf_share_layers else 4
        return [np.zeros((batch_size, self.cell_size), np.float32) for _ in range(num_states)]

    def prev_input_kwargs(self, batch_size: int, max_time: int) -> Dict[str, np.ndarray]:
        """Zero-filled `prev_actions`/`prev_rewards` call kwargs this model needs (or {})."""
        return zero_prev_inputs(self.action_space, self.use_prev_action, self.use_prev_reward,
                                batch_size, max_time)

    def call(self, inputs, training=False, prev_actions=None, prev_rewards=None):
        """Runs the model; `prev_actions` [B, T, ...] and `prev_rewards` [B, T] are
        required when built with `lstm_use_prev_action` / `lstm_use_prev_reward`."""
        obs, state_in, seq_lens = _unpack(inputs)
        obs = to_float(obs)  # [B, T, *obs_shape]
        batch_size, max_time = tf.shape(obs)[0], tf.shape(obs)[1]
        flat_obs = tf.reshape(obs, tf.concat([[batch_size * max_time], self.obs_shape], 0))
        extras = []
        if self.use_prev_action:
            actions = required_prev(prev_actions, "prev_actions", "lstm_use_prev_action=True")
            extras.append(encode_actions(self.action_space, actions))  # [B, T, A]
        if self.use_prev_reward:
            rewards = tf.cast(required_prev(prev_rewards, "prev_rewards",
                                            "lstm_use_prev_reward=True"), tf.float32)
            extras.append(tf.reshape(rewards, [batch_size, max_time, 1]))  # [B, T, 1]
        mask = tf.sequence_mask(seq_lens, maxlen=max_time)  # [B, T]
        state_in = [tf.cast(s, tf.float32) for s in state_in]
        if len(state_in) != len(self.get_initial_state()):
            raise ValueError(
                f"This LSTM model (vf_share_layers={self.vf_share_layers}) takes "
                f"{len(self.get_initial_state())} state tensors; received {len(state_in)}. "
                "Pass the states in get_initial_state()'s layout ([h, c], or "
                "[h, c, h_vf, c_vf] with the value's own LSTM).")

        def run(encoder, lstm, state):
            features = apply(encoder, flat_obs)  # [B*T, F]
            features = tf.reshape(features, [batch_size, max_time, features.shape[-1]])
            features = tf.concat([features] + extras, axis=-1)  # [B, T, F (+ A) (+ 1)]
            out, h_out, c_out = run_lstm(lstm, features, state, mask, training,
                                         self.unroll_len)  # out: [B, T, cell]
            return out, [h_out, c_out]

        out, state_out = run(self.encoder, self.lstm, state_in[:2])
        out = apply(self.post, out)  # [B, T, post_fcnet_hiddens[-1] or cell]
        dist_inputs = self.policy_head(out)  # [B, T, num_outputs]
        if not self.vf_share_layers:
            vf_out, vf_state_out = run(self.vf_encoder, self.vf_lstm, state_in[2:])
            vf_out = apply(self.vf_post, vf_out)
            value = tf.squeeze(self.value_out(vf_out), axis=-1)  # [B, T]
            return dist_inputs, value, state_out + vf_state_out
        value = tf.squeeze(self.value_out(out), axis=-1)  # [B, T]
        return dist_inputs, value, state_out


#: The longest `max_seq_len` LSTMWrapper unrolls (graph size grows with the length).
UNROLL_MAX_LEN = 64

# The bound `sequences_at_most` sets while a graph is traced (None: no bound).
_MAX_TIME: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar(
    "tfrl_sequences_at_most", default=None)


@contextlib.contextmanager
def sequences_at_most(max_time: Optional[int]) -> Iterator[None]:
    """Graphs traced inside the block take sequences of at most `max_time` steps (None:
    any length), though their time axis is unknown when traced.

    `run_lstm` then leaves out the loop for the steps after `unroll_len` when `max_time`
    is at most `unroll_len`: a smaller graph (no `tf.while_loop` and its gradient under a
    `tf.cond`), traced and optimized faster, with the same numbers. The caller keeps the
    promise (the train step traces one function for batches padded to at most the
    model's `max_seq_len` and another, on demand, for longer ones).
    """
    token = _MAX_TIME.set(max_time)
    try:
        yield
    finally:
        _MAX_TIME.reset(token)


def run_lstm(lstm: keras.layers.LSTM, features: tf.Tensor, state: List[tf.Tensor],
             mask: tf.Tensor, training: bool, unroll_len: int
             ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """`lstm(features [B, T, F], initial_state=state, mask=mask [B, T])`, unrolled when
    `T <= unroll_len`: `(outputs [B, T, cell], h, c)`, the same numbers either way.

    Keras' symbolic loop (`tf.while_loop`) costs more than the unrolled graph on CPU in
    training (forward and backward; tracing the unrolled one takes longer, once).
    Unrolling needs a static T: when T is unknown
    at tracing (the learner's batches), the first `unroll_len` steps run unrolled,
    padded with masked steps (which change no state) and cut back to T, and the steps
    after them, if any, in the loop from the state there (under a `tf.cond`: only that
    rarely taken tail, since a whole unrolled body under a `tf.cond` inside the
    learner's loop runs as a function call, no faster than the loop). A known T over
    `unroll_len` (or `unroll_len` 0) takes the loop. Under `sequences_at_most(n)` with
    `n <= unroll_len`, an unknown T has no tail: the head alone (the same numbers).
    """

    def call(x, m, unroll):
        previous, lstm.unroll = lstm.unroll, unroll  # Keras reads it when called
        try:
            return tuple(lstm(x, initial_state=state, mask=m, training=training))
        finally:
            lstm.unroll = previous

    max_time = features.shape[1]
    if max_time is None and _in_xla_cluster():
        # A policy's `jit_compile`: XLA compiles Keras' loop itself (and cannot take the
        # loop nested in the tail's tf.cond below).
        return call(features, mask, False)
    if max_time is not None or not unroll_len:
        return call(features, mask, bool(max_time is not None and max_time <= unroll_len))
    # T unknown: the first unroll_len steps unrolled (padded with masked steps), the
    # rest, if any, in Keras' loop from the state there.
    dynamic_time = tf.shape(features)[1]
    head_time = tf.minimum(dynamic_time, unroll_len)
    pad = unroll_len - head_time
    x = tf.pad(features[:, :unroll_len], [[0, 0], [0, pad], [0, 0]])
    m = tf.pad(mask[:, :unroll_len], [[0, 0], [0, pad]])
    out, h, c = call(tf.ensure_shape(x, [None, unroll_len, features.shape[-1]]),
                     tf.ensure_shape(m, [None, unroll_len]), True)
    bound = _MAX_TIME.get()
    if bound is not None and bound <= unroll_len:  # no step after the head (see above)
        return out[:, :head_time], h, c

    def tail():
        nonlocal state
        state = [h, c]
        return call(features[:, unroll_len:], mask[:, unroll_len:], False)

    def no_tail():
        return out[:, :0], h, c

    tail_out, h, c = tf.cond(dynamic_time > unroll_len, tail, no_tail)
    return tf.concat([out[:, :head_time], tail_out], axis=1), h, c


def _in_xla_cluster() -> bool:
    """Whether the graph being traced is (inside) a `tf.function(jit_compile=True)`."""
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


def obs_encoder(model_config: dict, obs_space: gym.Space, prefix: str
                ) -> List[keras.layers.Layer]:
    """The recurrent wrappers' observation encoder (RLlib's wrapped base model without
    its heads): the conv stack for image observations (`conv_stack`), else flatten and
    the `fcnet_hiddens` dense layers (`fcnet_activation`; none if empty: the flattened
    observations pass through)."""
    if len(obs_space.shape) == 3:
        return conv_stack(model_config, obs_space, prefix)
    return [keras.layers.Flatten()] + dense_stack(
        model_config["fcnet_hiddens"], model_config["fcnet_activation"], prefix,
        model_config.get("fcnet_weights_initializer"),
        model_config.get("fcnet_weights_initializer_config"),
    )


def check_prev_action_space(space: gym.Space, setting: str, fix: str) -> None:
    """Raises a `ValueError` unless `space` is Discrete, MultiDiscrete or Box (the
    action spaces whose previous actions a model can encode)."""
    if not isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box)):
        raise ValueError(
            f"{setting} supports Discrete, MultiDiscrete and Box action spaces. "
            f"Received: {space}. Set {fix}.")


def zero_prev_inputs(action_space: gym.Space, use_prev_action: bool, use_prev_reward: bool,
                     batch_size: int, max_time: int) -> Dict[str, np.ndarray]:
    """Zero-filled `prev_actions` `[B, T, ...]` / `prev_rewards` `[B, T]` call kwargs (the
    ones asked for), in the action space's dtype and float32."""
    kwargs = {}
    if use_prev_action:
        shape = () if isinstance(action_space, gym.spaces.Discrete) else action_space.shape
        kwargs["prev_actions"] = np.zeros((batch_size, max_time) + tuple(shape),
                                          action_space.dtype)
    if use_prev_reward:
        kwargs["prev_rewards"] = np.zeros((batch_size, max_time), np.float32)
    return kwargs


def encode_actions(space: gym.Space, actions: Any) -> tf.Tensor:
    """Actions `[B, T, ...]` as model inputs `[B, T, A]`: one-hot for Discrete (A = n)
    and MultiDiscrete (A = sum(nvec)), flattened floats for Box (A = prod(shape))."""
    actions = tf.convert_to_tensor(actions)
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(actions, tf.int32), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        parts = [
            tf.one_hot(tf.cast(actions[..., i], tf.int32), int(n))
            for i, n in enumerate(space.nvec)
        ]
        return tf.concat(parts, axis=-1)
    lead = tf.shape(actions)[:2]
    return tf.reshape(tf.cast(actions, tf.float32), tf.concat([lead, [-1]], 0))


def required_prev(value: Any, name: str, setting: str) -> Any:
    """`value`, or a `ValueError` naming the call kwarg `name` a model built with
    `setting` needs."""
    if value is None:
        raise ValueError(
            f"This model was built with {setting} and needs {name}. "
            f"Received: {name}=None. Call model((obs, state_in, seq_lens), {name}=...), "
            "with the previous step's values [B, T, ...]."
        )
    return value
