"""DistributionalQTFModel: DQN's Q network with distributional and noisy heads (Rainbow's
parts; RLlib's `ray.rllib.algorithms.dqn.distributional_q_tf_model`).

The trunk is the catalog's for the observation: dense layers (`fcnet_hiddens` +
`post_fcnet_hiddens`, `fcnet_activation`) over flattened observations, or the conv
encoder (`conv_stack`) and `post_fcnet_hiddens` for images. On it sit, as in RLlib, an
advantage stream (`q_hiddens` ReLU layers, then `num_actions * num_atoms` outputs) and
with `dueling` a value stream of the same hidden sizes (`num_atoms` outputs); with
`use_noisy` every layer of both streams is a `NoisyLayer`. Per action the streams give
`num_atoms` numbers, combined as `V + A - mean_a A` with dueling:

- `distributional="c51"`: logits of a categorical distribution on the support
  `z = linspace(v_min, v_max, num_atoms)`; `Q(s, a) = sum_i softmax(logits)_i z_i`.
- `distributional="quantile"`: the values of `num_atoms` quantiles (QR-DQN);
  `Q(s, a)` is their mean.
- `num_atoms=1`: the number is `Q(s, a)` (noisy nets alone).

Call contract of `tfrl.models.tf.tf_model` (so TFPolicy acts on it unchanged; the
greedy action is the argmax of `Q`): `model(obs, training=False, noise_seed=None) ->
(Q(s, .) [B, num_actions], max_a Q(s, a) [B])`. The loss reads `q_distribution`. A
`noise_seed` (`[2]` int tensor) turns the noisy layers' noise on (each layer folds in
its index); None evaluates their means.

`NumpyDistributionalQ` is the same forward pass in numpy on a copy of the weights, the
acting path of a policy whose model has a dense or small conv trunk and no noisy layers
(`TFPolicy`'s `inference`: one TF call per env step costs several times such a network
in numpy).
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.dqn.dqn_loss import categorical_support
from tfrl.models.tf.layers.noisy_layer import NoisyLayer
from tfrl.models.tf.tf_model import TFModel, apply, dense_stack, to_float
from tfrl.models.tf.visionnet import conv_stack
from tfrl.policy.numpy_inference import (NumpyInference, WeightReader, stack_forward,
                                         stack_params, stack_problem, stack_variables)

DISTRIBUTIONAL_KINDS = ("c51", "quantile")


class DistributionalQTFModel(TFModel):
    """DQN's Q network with C51 / quantile / noisy heads (see the module docstring).

    Args:
        obs_space, action_space, num_outputs, model_config, name: As `TFModel`
            (`num_outputs` is the number of actions; `action_space` Discrete).
        q_hiddens: Hidden sizes of each stream (DQN's `hiddens`).
        dueling: Whether to add the value stream (`Q = V + A - mean A`).
        num_atoms: Atoms (C51) or quantiles per action; 1: plain Q-values.
        use_noisy: NoisyLayers in the streams.
        v_min, v_max: The C51 support's ends.
        sigma0: The noisy layers' initial noise scale.
        distributional: "c51" or "quantile" (read when `num_atoms > 1`).
    """

    default_name = "q_func"

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, num_outputs: int,
                 model_config: dict, name: Optional[str] = None, *,
                 q_hiddens: Sequence[int] = (256,), dueling: bool = False,
                 num_atoms: int = 1, use_noisy: bool = False, v_min: float = -10.0,
                 v_max: float = 10.0, sigma0: float = 0.5, distributional: str = "c51"):
        if distributional not in DISTRIBUTIONAL_KINDS:
            raise ValueError(f"DistributionalQTFModel: distributional must be one of "
                             f"{DISTRIBUTIONAL_KINDS}; received {distributional!r}.")
        self._head_options: Dict[str, Any] = dict(
            q_hiddens=[int(h) for h in q_hiddens], dueling=bool(dueling),
            num_atoms=int(num_atoms), use_noisy=bool(use_noisy), v_min=float(v_min),
            v_max=float(v_max), sigma0=float(sigma0), distributional=distributional)
        super().__init__(obs_space, action_space, num_outputs, model_config, name)

    def _build_layers(self) -> None:
        options, config = self._head_options, self.model_config
        self.q_hiddens = options["q_hiddens"]
        self.dueling = options["dueling"]
        self.num_atoms = options["num_atoms"]
        self.use_noisy = options["use_noisy"]
        self.v_min, self.v_max = options["v_min"], options["v_max"]
        self.distributional = options["distributional"] if self.num_atoms > 1 else None
        self.num_actions = self.num_outputs
        if len(self.obs_space.shape) == 3:
            self.trunk = (conv_stack(config, self.obs_space, "q")
                          + dense_stack(config["post_fcnet_hiddens"],
                                        config["post_fcnet_activation"], "q_post_fc"))
        else:
            init = (config.get("fcnet_weights_initializer"),
                    config.get("fcnet_weights_initializer_config"))
            self.trunk = [keras.layers.Flatten()] + dense_stack(
                list(config["fcnet_hiddens"]) + list(config["post_fcnet_hiddens"]),
                config["fcnet_activation"], "q_fc", *init)
        self.advantage_stream = self._stream("action_value", self.num_actions * self.num_atoms)
        self.value_stream = self._stream("state_value", self.num_atoms) if self.dueling else []
        self._noisy_layers = [layer for layer in self.advantage_stream + self.value_stream
                              if isinstance(layer, NoisyLayer)]

    def _stream(self, prefix: str, out_size: int) -> List[keras.layers.Layer]:
        sizes = self.q_hiddens + [out_size]
        activations = ["relu"] * len(self.q_hiddens) + [None]
        names = [f"{prefix}_hidden_{i}" for i in range(len(self.q_hiddens))] + [
            f"{prefix}_out"]
        if self.use_noisy:
            sigma0 = self._head_options["sigma0"]
            return [NoisyLayer(n, size, sigma0, activation=act)
                    for n, size, act in zip(names, sizes, activations)]
        return [keras.layers.Dense(size, activation=act, name=n)
                for n, size, act in zip(names, sizes, activations)]

    def _apply_stream(self, layers: List[keras.layers.Layer], x: tf.Tensor,
                      noise_seed: Optional[tf.Tensor]) -> tf.Tensor:
        for layer in layers:
            if isinstance(layer, NoisyLayer) and noise_seed is not None:
                index = self._noisy_layers.index(layer)
                x = layer(x, noise_seed=tf.random.experimental.stateless_fold_in(
                    tf.cast(noise_seed, tf.int32), index))
            else:
                x = layer(x)
        return x

    def q_distribution(self, obs: Any, training: bool = False,
                       noise_seed: Optional[tf.Tensor] = None
                       ) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(Q(s, .) [B, num_actions], atoms [B, num_actions, num_atoms])`: the atoms are
        C51's logits, the quantile values, or (num_atoms 1) the Q-values themselves."""
        features = apply(self.trunk, to_float(obs))  # [B, F]
        advantages = self._apply_stream(self.advantage_stream, features, noise_seed)
        advantages = tf.reshape(advantages, [-1, self.num_actions, self.num_atoms])
        if self.dueling:
            value = self._apply_stream(self.value_stream, features, noise_seed)  # [B, N]
            atoms = (value[:, None, :] + advantages
                     - tf.reduce_mean(advantages, axis=1, keepdims=True))  # [B, A, N]
        else:
            atoms = advantages
        if self.distributional == "c51":
            z = categorical_support(self.num_atoms, self.v_min, self.v_max, atoms.dtype)
            q = tf.reduce_sum(tf.nn.softmax(atoms) * z, axis=-1)  # [B, A]
        else:  # quantiles, or plain Q-values
            q = tf.reduce_mean(atoms, axis=-1)
        return q, atoms

    def call(self, obs, training=False, noise_seed=None):
        q, _ = self.q_distribution(obs, training=training, noise_seed=noise_seed)
        return q, tf.reduce_max(q, axis=-1)


class NumpyDistributionalQ(NumpyInference):
    """A `DistributionalQTFModel`'s `(Q(s, .), max_a Q(s, a))` in numpy, as
    `NumpyInference` serves the catalog's dense model: the same acting contract (Q as the
    categorical's inputs, max Q as `vf_preds`), weights copied when the policy's
    `weights_version` changes. The trunk may be dense or a small conv encoder
    (`numpy_inference.stack_problem`).

    Args:
        policy: A policy whose `action_model` is a `DistributionalQTFModel` for which
            `unsupported_reason` is None.
    """

    @staticmethod
    def unsupported_reason(policy: Any) -> Optional[str]:
        """Why `policy`'s model cannot act in numpy (None if it can)."""
        model = policy.action_model
        if not isinstance(model, DistributionalQTFModel):
            return f"the model is a {type(model).__name__}, not a DistributionalQTFModel"
        if model.use_noisy:
            return "the model has noisy layers (their noise is drawn in TF)"
        if not isinstance(policy.observation_space, gym.spaces.Box):
            return f"the observation space {policy.observation_space} is not a Box"
        trunk = stack_problem(model.trunk, policy.observation_space.shape)
        if trunk is not None:
            return trunk
        return stack_problem(model.advantage_stream + model.value_stream, (None,))  # [B, F]

    def refresh(self) -> None:
        model = self._policy.action_model
        streams = (model.trunk, model.advantage_stream, model.value_stream)
        if self._reader is None:  # the layers are fixed once the model is built
            self._reader = WeightReader([w for layers in streams
                                         for w in stack_variables(layers)])
        values = iter(self._reader.read())
        self._trunk, self._advantage, self._value = [
            stack_params(values, layers) for layers in streams]
        self._shape = (model.num_actions, model.num_atoms)
        self._support = (np.linspace(model.v_min, model.v_max, model.num_atoms,
                                     dtype=np.float32)
                         if model.distributional == "c51" else None)
        self._version = self._policy.weights_version

    def _forward(self, obs: np.ndarray, with_dist: bool = True):
        if self._version != self._policy.weights_version:
            self.refresh()
        x = obs.astype(np.float32, copy=False)  # [B, *obs_shape], as the model's to_float
        features = stack_forward(x, self._trunk)  # [B, F]
        atoms = stack_forward(features, self._advantage).reshape(
            (len(x),) + self._shape)  # [B, A, N]
        if self._value:  # dueling: V + A - mean_a A
            value = stack_forward(features, self._value)  # [B, N]
            atoms = value[:, None, :] + atoms - atoms.mean(axis=1, keepdims=True)
        if self._support is None:  # quantiles, or plain Q-values
            q = atoms.mean(axis=-1)  # [B, A]
        else:  # C51: the expectation of softmax(logits) on the support
            probs = np.exp(atoms - atoms.max(axis=-1, keepdims=True))
            q = (probs @ self._support) / probs.sum(axis=-1)  # [B, A]
        q = q.astype(np.float32, copy=False)
        return (q if with_dist else None), q.max(axis=-1)
