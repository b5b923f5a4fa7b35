"""The networks of the off-policy actor-critics (SAC, TD3, DDPG) as Keras 3 models.

- `QNetwork`: `Q(s, a)` for Box actions, `(obs [B, *obs_shape], actions [B, *act_shape])
  -> [B]`: the flattened observation and action concatenated into an MLP.
- `DiscreteQNetwork`: `Q(s, .)` for Discrete(n) actions, `obs -> [B, n]`.
- `TwinQNetwork`: two Q-networks of either kind with separate weights, called together
  (`-> (q1, q2)`).
- `SquashedGaussianActor`: `obs -> dist_inputs [B, 2A]` (mean and log-std, the log-std
  clipped to `[MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT]`) for `SquashedGaussian` within
  the action bounds (SAC); `distribution(dist_inputs)` builds it.
- `CategoricalActor`: `obs -> logits [B, n]` for `Categorical` (discrete SAC).
- `DeterministicActor`: `obs -> actions [B, A]`, tanh-squashed into the action bounds
  (TD3, DDPG).

Hidden layers are Dense layers of `hiddens` sizes with `activation` (RLlib's names:
"relu", "tanh", ...) and Keras' default (Glorot-uniform) kernels. The layers are built
from the spaces when the model is created, in call order, so that a seed set before
(`keras.utils.set_random_seed`) gives the same weights. The target networks are copies
built the same way and synchronized with `tfrl.models.tf.target_update`.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> obs_space, act_space = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (2,))
    >>> q = QNetwork(obs_space, act_space, hiddens=[16])
    >>> q(np.zeros((4, 3), np.float32), np.zeros((4, 2), np.float32)).shape
    TensorShape([4])
"""

from typing import Any, Optional, Sequence, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.models.tf.tf_action_dist import (MAX_LOG_NN_OUTPUT, MIN_LOG_NN_OUTPUT, Categorical,
                                           SquashedGaussian)
from tfrl.models.tf.tf_model import apply, dense_stack, to_float

__all__ = ["CategoricalActor", "DeterministicActor", "DiscreteQNetwork", "QNetwork",
           "SquashedGaussianActor", "TwinQNetwork", "call_frozen"]

_DISCRETE_HINT = ("For Discrete actions use DiscreteQNetwork/CategoricalActor (SAC's "
                  "discrete variant) or DQN.")


def _flat_size(space: gym.Space) -> int:
    return int(np.prod(space.shape))


def _check_box(owner: str, action_space: Any, bounded: bool = False) -> gym.spaces.Box:
    if isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"{owner} needs a Box action space; received {action_space}. "
                         f"{_DISCRETE_HINT}")
    if not isinstance(action_space, gym.spaces.Box):
        raise ValueError(f"{owner} needs a Box action space; received {action_space!r}. Give "
                         "the env a Box action space (e.g. flatten the space with an action "
                         f"wrapper). {_DISCRETE_HINT}")
    if bounded and not (np.all(np.isfinite(action_space.low))
                        and np.all(np.isfinite(action_space.high))):
        raise ValueError(f"{owner} squashes actions into the action space's bounds, which "
                         f"must be finite; received {action_space}.")
    return action_space


def _check_discrete(owner: str, action_space: Any) -> int:
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"{owner} needs a Discrete action space; received {action_space!r}. "
                         "For Box actions use QNetwork/SquashedGaussianActor (SAC) or "
                         "DeterministicActor (TD3, DDPG).")
    return int(action_space.n)


class _MLP(keras.Model):
    """Flattened float inputs -> Dense `hiddens` -> a linear Dense of `num_outputs`."""

    def __init__(self, input_size: int, num_outputs: int, hiddens: Sequence[int],
                 activation: Optional[str], name: str):
        super().__init__(name=name)
        self.input_size = int(input_size)
        # Layer names carry the owner's (e.g. "q1_hidden_1") so that variable paths are
        # unique across the twin and target networks.
        self.hidden_layers = dense_stack(hiddens, activation, f"{name}_hidden",
                                         "glorot_uniform")
        self.out = keras.layers.Dense(int(num_outputs), name=f"{name}_out")
        shape: Tuple[Optional[int], int] = (None, self.input_size)
        for layer in self.hidden_layers:
            layer.build(shape)
            shape = (None, layer.units)
        self.out.build(shape)
        self.built = True

    def call(self, x):
        return self.out(apply(self.hidden_layers, x))


def _flatten(x: Any) -> tf.Tensor:
    x = to_float(x)
    return tf.reshape(x, [tf.shape(x)[0], -1])


class QNetwork(keras.Model):
    """`Q(s, a)` for Box actions: `call(obs, actions) -> [B]`.

    Args:
        obs_space: The (preprocessed) observation space.
        action_space: A Box action space.
        hiddens: Hidden layer sizes (RLlib's `critic_hiddens` / `fcnet_hiddens`).
        activation: Their activation.
        name: The Keras model name.

    Raises:
        ValueError: For an action space that is not a Box (naming the discrete variant).
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (256, 256), activation: Optional[str] = "relu",
                 name: str = "q"):
        super().__init__(name=name)
        _check_box("QNetwork", action_space)
        self.obs_space, self.action_space = obs_space, action_space
        self.mlp = _MLP(_flat_size(obs_space) + _flat_size(action_space), 1, hiddens,
                        activation, name)
        self.built = True  # its layers are built: stateless_call works

    def call(self, obs, actions):
        x = tf.concat([_flatten(obs), _flatten(actions)], axis=-1)  # [B, obs + act]
        return tf.squeeze(self.mlp(x), axis=-1)  # [B]


class _PerActionNet(keras.Model):
    """An MLP from the flattened observation to one output per Discrete action."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int], activation: Optional[str], name: str):
        super().__init__(name=name)
        n = _check_discrete(type(self).__name__, action_space)
        self.obs_space, self.action_space = obs_space, action_space
        self.mlp = _MLP(_flat_size(obs_space), n, hiddens, activation, name)
        self.built = True  # its layers are built: stateless_call works

    def call(self, obs, actions=None):
        return self.mlp(_flatten(obs))  # [B, n]


class DiscreteQNetwork(_PerActionNet):
    """`Q(s, .)` for Discrete(n) actions: `call(obs) -> [B, n]`.

    Args:
        obs_space, hiddens, activation, name: As for `QNetwork`.
        action_space: A Discrete action space.

    Raises:
        ValueError: For an action space that is not Discrete.
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (256, 256), activation: Optional[str] = "relu",
                 name: str = "q"):
        super().__init__(obs_space, action_space, hiddens, activation, name)


class TwinQNetwork(keras.Model):
    """Two Q-networks with separate weights: `call(obs, actions) -> (q1, q2)` for Box
    actions (`[B]` each), `call(obs) -> (q1, q2)` for Discrete ones (`[B, n]` each).

    Args:
        obs_space, action_space, hiddens, activation: As for `QNetwork` (a Discrete
            action space gives two `DiscreteQNetwork`s).
        name: The Keras model name; the nets are `q1` and `q2` (`.q1`, `.q2`).
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (256, 256), activation: Optional[str] = "relu",
                 name: str = "twin_q"):
        super().__init__(name=name)
        net = (DiscreteQNetwork if isinstance(action_space, gym.spaces.Discrete)
               else QNetwork)
        self.q1 = net(obs_space, action_space, hiddens, activation, name="q1")
        self.q2 = net(obs_space, action_space, hiddens, activation, name="q2")
        self.built = True

    def call(self, obs, actions=None):
        return self.q1(obs, actions), self.q2(obs, actions)


class SquashedGaussianActor(keras.Model):
    """SAC's policy for Box actions: `call(obs) -> dist_inputs [B, 2A]` (mean, then the
    log-std clipped to `[MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT]`).

    Args:
        obs_space, hiddens, activation, name: As for `QNetwork`.
        action_space: A Box action space with finite bounds.

    Raises:
        ValueError: For an action space that is not a bounded Box.
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (256, 256), activation: Optional[str] = "relu",
                 name: str = "pi"):
        super().__init__(name=name)
        self.action_space = _check_box("SquashedGaussianActor", action_space, bounded=True)
        self.obs_space = obs_space
        self.mlp = _MLP(_flat_size(obs_space), 2 * _flat_size(action_space), hiddens,
                        activation, name)
        self.built = True  # its layers are built: stateless_call works

    def call(self, obs):
        mean, log_std = tf.split(self.mlp(_flatten(obs)), 2, axis=-1)  # [B, A] each
        log_std = tf.clip_by_value(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT)
        return tf.concat([mean, log_std], axis=-1)

    def distribution(self, dist_inputs: tf.Tensor) -> SquashedGaussian:
        """The squashed Gaussian over the action space's bounds for `dist_inputs`."""
        low = self.action_space.low.reshape(-1)
        high = self.action_space.high.reshape(-1)
        return SquashedGaussian(dist_inputs, self, low=low, high=high)


class CategoricalActor(_PerActionNet):
    """Discrete SAC's policy: `call(obs) -> logits [B, n]`.

    Args:
        obs_space, hiddens, activation, name: As for `QNetwork`.
        action_space: A Discrete action space.

    Raises:
        ValueError: For an action space that is not Discrete.
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (256, 256), activation: Optional[str] = "relu",
                 name: str = "pi"):
        super().__init__(obs_space, action_space, hiddens, activation, name)

    def distribution(self, logits: tf.Tensor) -> Categorical:
        """The categorical distribution of `logits`."""
        return Categorical(logits, self)


class DeterministicActor(keras.Model):
    """TD3's and DDPG's actor `mu`: `call(obs) -> actions [B, A]` within the bounds,
    `low + (tanh(x) + 1) / 2 * (high - low)` of the MLP's output `x`.

    Args:
        obs_space, hiddens, activation, name: As for `QNetwork` (RLlib's
            `actor_hiddens`, `actor_hidden_activation`).
        action_space: A Box action space with finite bounds.

    Raises:
        ValueError: For an action space that is not a bounded Box (naming the discrete
            variant for a Discrete one).
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space,
                 hiddens: Sequence[int] = (400, 300), activation: Optional[str] = "relu",
                 name: str = "mu"):
        super().__init__(name=name)
        self.action_space = _check_box("DeterministicActor", action_space, bounded=True)
        self.obs_space = obs_space
        self.low = tf.constant(action_space.low.reshape(-1), tf.float32)
        self.high = tf.constant(action_space.high.reshape(-1), tf.float32)
        self.mlp = _MLP(_flat_size(obs_space), _flat_size(action_space), hiddens,
                        activation, name)
        self.built = True  # its layers are built: stateless_call works

    def call(self, obs):
        unit = tf.tanh(self.mlp(_flatten(obs)))  # [B, A] in (-1, 1)
        return self.low + (unit + 1.0) / 2.0 * (self.high - self.low)


def call_frozen(model: keras.Model, *args: Any) -> Any:
    """`model(*args)` with the gradient stopped at `model`'s weights (not at `args`).

    The actor losses of SAC and TD3 differentiate `Q(s, pi(s))` with respect to the
    actor through the action; summed with the critics' loss into one total loss, the
    critics' weights must get no gradient from that term. (`model` must be built.)

    Example:
        >>> import gymnasium as gym, numpy as np, tensorflow as tf
        >>> q = QNetwork(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Box(-1, 1, (1,)), [4])
        >>> obs, act = tf.ones((3, 2)), tf.Variable(tf.ones((3, 1)))
        >>> with tf.GradientTape() as tape:
        ...     loss = tf.reduce_sum(call_frozen(q, obs, act))
        >>> grads = tape.gradient(loss, q.trainable_variables + [act])
        >>> [g is None for g in grads[:-1]], grads[-1].shape
        ([True, True, True, True], TensorShape([3, 1]))
    """
    trainable = [tf.stop_gradient(v.value) for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    outputs, _ = model.stateless_call(trainable, non_trainable, *args)
    return outputs
