"""SACTFPolicy: soft actor-critic for Box actions and its discrete variant for Discrete ones.

Networks (`SACModel`, the policy's `model`): the actor is the catalog's fully connected
network over `policy_model_config` (so acting takes the numpy inference path), giving
`[mean, log_std]` of a `SquashedGaussian` for a Box (within [-1, 1] with
`normalize_actions`, the default, and the sampler unsquashes into the env's bounds, as in
RLlib; within the env's bounds without it: `policy_action_space`), or the logits of a
`Categorical` for a Discrete; twin critics (`TwinQNetwork` over
`q_model_config`: `Q(s, a)` for a Box, `Q(s, .)` for a Discrete; one critic without
`twin_q`); and the temperature's `log_alpha`. The actor's value head is held at zero
(SAC has no state-value estimate: `vf_preds` are 0). The target critics (`target_model`)
are a copy of the critics.

Learning: one replayed minibatch per gradient step, three losses from `sac_loss` (the
critics' soft Bellman regression, the actor's loss, the temperature's loss toward
`target_entropy`) summed into one total whose gradients reach each group of variables
from its own loss only (the actor's loss evaluates the critics with `call_frozen`; the
other cross terms are stopped in `sac_loss`), applied by three Adam optimizers
(`optimization`: actor, critic, entropy learning rates; a `MultiOptimizer`). With
`target_network_update_freq=0` (the default) the target critics move `tau` toward the
critics after each applied step inside the same compiled call (`after_optimizer_step`),
so a learning phase of K steps is one call; with a positive value the algorithm calls
`update_target()` (a move by `tau`) every that many sampled env steps instead. The Gaussian
noise of the reparameterized samples (at `s_t` for the actor and temperature, at
`s_{t+k}` for the target) is drawn in numpy from the policy's seeded generator and
travels with the batch (column `sac_noise`, `[B, 2, A]`): a batch's update is the same
under any number of replicas, and a restored policy draws the same noise.

Discrete actions (Christodoulou 2019): the expectations over actions are exact sums over
the action probabilities; no noise. `compute_td_error` / `td_errors` give the per-row TD
errors for prioritized replay in one compiled call.
"""

import math
from typing import Any, ClassVar, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.policy_checks import check_no_recurrent_model, policy_action_space
from tfrl.algorithms.sac.sac_config import SACConfig
from tfrl.algorithms.sac.sac_loss import (
    discrete_sac_actor_loss, discrete_sac_alpha_loss, discrete_soft_q_target,
    resolve_target_entropy, sac_actor_loss, sac_alpha_loss, sac_critic_loss, soft_q_target)
from tfrl.algorithms.td_math import td_error
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import N_STEP
from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.actor_critic_nets import (DiscreteQNetwork, QNetwork, TwinQNetwork,
                                               call_frozen)
from tfrl.models.tf.target_update import assign_weights, hard_update, soft_update
from tfrl.models.tf.tf_action_dist import SquashedGaussian
from tfrl.policy import space_specs
from tfrl.policy.optimizers import FusedAdam, MultiOptimizer
from tfrl.policy.tf_policy import TFPolicy

TARGET_WEIGHTS = "target_weights"
# The column of standard-normal noise for the reparameterized samples at s_t and s_{t+k}.
NOISE = "sac_noise"


def check_sac_spaces(observation_space: gym.Space, action_space: gym.Space,
                     owner: str = "SAC") -> None:
    """Raises a `ValueError` unless the action space is a bounded 1-D Box or a Discrete
    and the observation space a Box."""
    if isinstance(action_space, gym.spaces.Box):
        if len(action_space.shape) != 1 or not (np.all(np.isfinite(action_space.low))
                                                and np.all(np.isfinite(action_space.high))):
            raise ValueError(
                f"{owner} needs a Box action space of shape (A,) with finite bounds (its "
                f"squashed Gaussian maps into them); received {action_space}. Rescale the "
                "actions into finite bounds (e.g. gymnasium.wrappers.RescaleAction) or "
                "flatten them.")
    elif not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"{owner} needs a Box action space (continuous SAC) or a Discrete one (discrete "
            f"SAC, Christodoulou 2019); received {action_space!r}. Flatten tuple/dict "
            "actions or use PPO.")
    if not isinstance(observation_space, gym.spaces.Box):
        raise ValueError(
            f"{owner}'s networks take flat Box observations; received observation space "
            f"{observation_space!r}. Flatten the observations (gymnasium.wrappers."
            "FlattenObservation).")


class SACModel(keras.Model):
    """SAC's networks: `actor` (the catalog model acting: `call(obs) -> (dist_inputs,
    value)`), `twin_q` (`q1`, `q2`; without twin critics `q2` is None) and `log_alpha`.

    Args:
        actor: The built actor (catalog model).
        twin_q: The critics (a `TwinQNetwork`, or one `QNetwork` / `DiscreteQNetwork`).
        initial_alpha: The temperature at the start (> 0).
    """

    def __init__(self, actor: keras.Model, twin_q: keras.Model, initial_alpha: float):
        super().__init__(name="sac")
        self.actor = actor
        self.twin_q = twin_q
        self.log_alpha = self.add_weight(
            shape=(), initializer=keras.initializers.Constant(math.log(initial_alpha)),
            name="log_alpha")
        self.built = True

    def call(self, obs, training=False):
        return self.actor(obs, training=training)


def critic_values(critics: keras.Model, obs: Any, actions: Any = None,
                  frozen: bool = False) -> Tuple[tf.Tensor, Optional[tf.Tensor]]:
    """`(Q_1, Q_2)` of twin critics (`Q_2` None for one critic); `frozen`: through
    `call_frozen` (no gradient to the critics' weights)."""
    args = (obs,) if actions is None else (obs, actions)
    out = call_frozen(critics, *args) if frozen else critics(*args)
    if isinstance(critics, TwinQNetwork):
        return out[0], out[1]
    return out, None


class SACTFPolicy(TFPolicy):
    """SAC's policy (config: `SACConfig`'s fields); see the module docstring.

    Raises:
        ValueError: For an action space that is neither a bounded 1-D Box nor a Discrete,
            a non-Box observation space, a recurrent model, or a custom critic model.
    """

    config_class = SACConfig
    # The action spaces it accepts (read by the conformance suite too).
    action_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Box, gym.spaces.Discrete)
    supports_recurrent_models: ClassVar[bool] = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        name = type(self).__name__
        check_sac_spaces(observation_space, action_space, name)
        given = config or {}
        check_no_recurrent_model(given, name)
        custom_q = (given.get("q_model_config") or {}).get("custom_model")
        if custom_q:
            raise ValueError(
                f"{name}: q_model_config['custom_model'] is not supported (the critics are "
                f"tfrl's QNetworks); received {custom_q!r}. Set fcnet_hiddens / "
                "fcnet_activation instead.")
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        super().__init__(observation_space, action_space, config, strategy=strategy)
        self.target_entropy = resolve_target_entropy(self.config["target_entropy"],
                                                     action_space)
        self.tau = float(self.config["tau"])
        # Targets move inside the learning call (else through update_target()).
        self.target_updates_in_graph = self.config["target_network_update_freq"] == 0
        with self.strategy.scope():
            self.target_model = self._make_critics("target_")
        hard_update(self.target_model.variables, self.model.twin_q.variables)
        self._td_error_fn: Optional[Any] = None

    # ------------------------------------------------------------- building

    def _make_critics(self, prefix: str = "") -> keras.Model:
        q_config = self.config["q_model_config"]
        hiddens = list(q_config["fcnet_hiddens"]) + list(q_config["post_fcnet_hiddens"])
        activation = q_config["fcnet_activation"]
        if self.config["twin_q"]:
            return TwinQNetwork(self.observation_space, self.action_space, hiddens,
                                activation, name=f"{prefix}twin_q")
        net = DiscreteQNetwork if self.discrete else QNetwork
        return net(self.observation_space, self.action_space, hiddens, activation,
                   name=f"{prefix}q1")

    def make_action_distribution(self) -> Tuple[type, int]:
        """`Categorical` for Discrete actions, `SquashedGaussian` for Box: within [-1, 1]
        with `normalize_actions` (the sampler unsquashes), else within the bounds."""
        dist_class, num_outputs = ModelCatalog.get_action_dist(
            policy_action_space(self.action_space, self.config), self.config["model"],
            dist_type=None if self.discrete else SquashedGaussian)
        return dist_class, num_outputs  # type: ignore[return-value]  # a partial for Box

    def make_model(self) -> keras.Model:
        """`SACModel`: the catalog actor over `policy_model_config` (value head held at 0),
        the critics over `q_model_config`, and `log_alpha`."""
        actor_config = {**dict(self.config["model"]), **dict(self.config["policy_model_config"]),
                        "vf_share_layers": True}
        actor = ModelCatalog.get_model(self.observation_space, self.action_space,
                                       self.num_outputs, actor_config)
        actor(space_specs.zeros_batch(self.observation_space, 1))
        value_out = getattr(getattr(actor, "inner", actor), "value_out", None)  # masked: inner
        if value_out is not None:
            for weight in value_out.weights:
                weight.assign(tf.zeros_like(weight))
            value_out.trainable = False
        return SACModel(actor, self._make_critics(), float(self.config["initial_alpha"]))

    def make_optimizer(self) -> Any:
        """Adam for the actor, the critics and `log_alpha`, each at its `optimization`
        learning rate (a `MultiOptimizer`)."""
        rates = self.config["optimization"]
        model = self.model
        return MultiOptimizer([
            (FusedAdam(rates["actor_learning_rate"]), model.actor.trainable_variables),
            (FusedAdam(rates["critic_learning_rate"]), model.twin_q.trainable_variables),
            (FusedAdam(rates["entropy_learning_rate"]), [model.log_alpha]),
        ])

    @property
    def action_model(self) -> keras.Model:
        """The actor (the catalog model the numpy inference path evaluates)."""
        return self.model.actor

    @property
    def alpha(self) -> float:
        """The current entropy temperature."""
        return float(np.exp(self.model.log_alpha.numpy()))

    # ------------------------------------------------------------- learning

    def _noise(self, rows: int) -> np.ndarray:
        size = int(np.prod(self.action_space.shape))
        return self._np_random.standard_normal((rows, 2, size), dtype=np.float32)

    def train_batch(self, samples: Any) -> Any:
        """The batch plus the `sac_noise` column (continuous actions; drawn from the
        policy's seeded generator)."""
        if self.discrete or not isinstance(samples, dict) or NOISE in samples:
            return samples
        batch = dict(samples)
        batch[NOISE] = self._noise(len(samples[Columns.REWARDS]))
        return batch

    def _targets(self, actor_next: tf.Tensor, next_obs: Any, rewards: tf.Tensor,
                 terminateds: tf.Tensor, n_step: Any, noise_tp1: Optional[tf.Tensor],
                 alpha: tf.Tensor) -> tf.Tensor:
        """The soft Bellman targets `y_t` `[B]` from the actor's outputs at `s_{t+k}`."""
        gamma = self.config["gamma"]
        if self.discrete:
            log_probs_tp1 = tf.nn.log_softmax(actor_next, axis=-1)
            q1, q2 = critic_values(self.target_model, next_obs)
            return discrete_soft_q_target(rewards, terminateds, q1, log_probs_tp1, q2,
                                          alpha=alpha, gamma=gamma, n_step=n_step)
        a_tp1, logp_tp1 = self.dist_class(actor_next, self.model.actor).sample_from_noise(
            noise_tp1)
        q1, q2 = critic_values(self.target_model, next_obs, a_tp1)
        return soft_q_target(rewards, terminateds, q1, logp_tp1, q2, alpha=alpha,
                             gamma=gamma, n_step=n_step)

    def _replayed_q(self, obs: Any, actions: tf.Tensor
                    ) -> Tuple[tf.Tensor, Optional[tf.Tensor], Any]:
        """`(Q_1, Q_2)(s_t, a_t)` `[B]` of the replayed actions, and for Discrete actions
        `(Q_1, Q_2)(s_t, .)` `[B, n]` (None for Box)."""
        if not self.discrete:
            return (*critic_values(self.model.twin_q, obs, actions), None)
        q_all = critic_values(self.model.twin_q, obs)  # [B, n] each
        actions = tf.cast(actions, tf.int32)
        q1, q2 = (None if q is None else tf.gather(q, actions, batch_dims=1) for q in q_all)
        return q1, q2, q_all

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The critics', actor's and temperature's losses summed (see the module
        docstring), and their statistics."""
        obs, next_obs = train_batch[Columns.OBS], train_batch[Columns.NEXT_OBS]
        rewards = train_batch[Columns.REWARDS]
        terminateds = train_batch[Columns.TERMINATEDS]
        n_step = train_batch.get(N_STEP)
        n_step = 1 if n_step is None else n_step
        weights = train_batch.get(WEIGHTS)
        # The actor at s_{t+k} only feeds the (gradient-stopped) targets: a pass of its
        # own on frozen weights, so that the backward pass runs over the B rows at s_t
        # alone (one pass over both would back-propagate 2B rows, half of them zeros).
        actor_t, _ = model.actor(obs, training=True)
        actor_tp1, _ = call_frozen(model.actor, next_obs)
        log_alpha = model.log_alpha
        alpha = tf.exp(log_alpha)
        noise = None if self.discrete else train_batch[NOISE]  # [B, 2, A]
        targets = self._targets(actor_tp1, next_obs, rewards, terminateds, n_step,
                                None if noise is None else noise[:, 1], alpha)
        q1_t, q2_t, q_all = self._replayed_q(obs, train_batch[Columns.ACTIONS])
        critic_loss, critic_stats = sac_critic_loss(q1_t, q2_t, targets, weights)
        if self.discrete:
            log_probs_t = tf.nn.log_softmax(actor_t, axis=-1)
            # The discrete actor loss holds the Q-values constant (no critic gradient).
            actor_loss, actor_stats = discrete_sac_actor_loss(log_probs_t, *q_all,
                                                              alpha=alpha)
            alpha_loss, alpha_stats = discrete_sac_alpha_loss(
                log_alpha, log_probs_t, target_entropy=self.target_entropy)
        else:
            a_t, logp_t = dist_class(actor_t, model.actor).sample_from_noise(
                train_batch[NOISE][:, 0])
            q1_pi, q2_pi = critic_values(model.twin_q, obs, a_t, frozen=True)
            actor_loss, actor_stats = sac_actor_loss(logp_t, q1_pi, q2_pi, alpha=alpha)
            alpha_loss, alpha_stats = sac_alpha_loss(log_alpha, logp_t,
                                                     target_entropy=self.target_entropy)
        stats = {**critic_stats, **actor_stats, **alpha_stats}
        # min_q / max_q are one replica's extremes, not the batch's: report means only.
        stats = {k: tf.cast(v, tf.float32) for k, v in stats.items()
                 if k not in ("min_q", "max_q")}
        return critic_loss + actor_loss + alpha_loss, stats

    def after_optimizer_step(self) -> None:
        """Moves the target critics `tau` of the way toward the critics (with
        `target_network_update_freq=0`)."""
        if self.target_updates_in_graph:
            soft_update(self.target_model.variables, self.model.twin_q.variables,
                        self.tau)

    def update_target(self, tau: Optional[float] = None) -> None:
        """Moves the target critics `tau` (default: config `tau`) toward the critics
        (RLlib's signature; with `target_network_update_freq=0` the learning call does
        this after every gradient step already)."""
        soft_update(self.target_model.variables, self.model.twin_q.variables,
                    self.tau if tau is None else float(tau))

    # --------------------------------------------------------- TD errors

    def compute_td_error(self, obs_t: Any, act_t: Any, rew_t: Any, obs_tp1: Any,
                         terminateds_mask: Any, importance_weights: Any = None,
                         n_step: Any = None) -> np.ndarray:
        """Per-row TD errors `[B]` (the mean over the twin critics of `|Q_i - y|`) with
        the current weights, in one compiled call (target noise drawn from the
        policy's generator). RLlib's signature: `importance_weights` do not enter TD
        errors; `n_step`: the rows' bootstrap exponents (default 1)."""
        rows = len(rew_t)
        fn = self._td_error_fn
        if fn is None:
            obs_spec = space_specs.batch_spec(self.observation_space)
            vector = tf.TensorSpec((None,), tf.float32)
            action_spec = (tf.TensorSpec((None,), tf.int32) if self.discrete else
                           tf.TensorSpec((None,) + self.action_space.shape, tf.float32))
            noise_spec = tf.TensorSpec((None, 2, int(np.prod(self.action_space.shape))),
                                       tf.float32)
            fn = self._td_error_fn = tf.function(self._td_error_graph, input_signature=[
                obs_spec, action_spec, vector, obs_spec, vector, vector, noise_spec],
                autograph=False)
        steps = np.ones(rows, np.float32) if n_step is None else n_step
        noise = (np.zeros((rows, 2, 1), np.float32) if self.discrete  # unused
                 else self._noise(rows))
        actions = np.asarray(act_t, np.int32 if self.discrete else np.float32)
        return fn(self._acting.check_obs(obs_t), actions, np.asarray(rew_t, np.float32),
                  self._acting.check_obs(obs_tp1), np.asarray(terminateds_mask, np.float32),
                  np.asarray(steps, np.float32), noise).numpy()

    def td_errors(self, batch: Any) -> np.ndarray:
        """`compute_td_error` on a batch's columns."""
        return self.compute_td_error(
            batch[Columns.OBS], batch[Columns.ACTIONS], batch[Columns.REWARDS],
            batch[Columns.NEXT_OBS], batch[Columns.TERMINATEDS], n_step=batch.get(N_STEP))

    def _td_error_graph(self, obs, actions, rewards, next_obs, terminateds, n_step, noise):
        self.num_traces["compute_td_error"] = self.num_traces.get("compute_td_error", 0) + 1
        actor_tp1, _ = self.model.actor(next_obs)
        alpha = tf.exp(self.model.log_alpha)
        targets = self._targets(actor_tp1, next_obs, rewards, terminateds, n_step,
                                None if self.discrete else noise[:, 1], alpha)
        q1, q2, _ = self._replayed_q(obs, actions)
        return td_error(q1, q2, targets)

    # ---------------------------------------------------------------- state

    def get_state(self) -> Dict[str, Any]:
        """TFPolicy's state (the actor, critics, `log_alpha` and the three optimizers'
        slots) plus the target critics' weights."""
        state = super().get_state()
        state[TARGET_WEIGHTS] = [np.array(v.numpy()) for v in self.target_model.variables]
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result, including the target critics (a state without
        them copies the restored critics into the targets)."""
        super().set_state(state)
        target = state.get(TARGET_WEIGHTS)
        variables = self.target_model.variables
        if target is None:
            hard_update(variables, self.model.twin_q.variables)
            return
        assign_weights(variables, target, f"set_state(): '{TARGET_WEIGHTS}'")


__all__ = ["SACModel", "SACTFPolicy", "check_no_recurrent_model", "check_sac_spaces",
           "critic_values"]
