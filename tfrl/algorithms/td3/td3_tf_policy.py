"""TD3TFPolicy: a deterministic actor, one or two critics and their target networks.

The model (`ActorCriticModel`) holds the actor `mu` (`DeterministicActor`: tanh-squashed
into the policy's action bounds, `actor_hiddens`) and the critics (`TwinQNetwork` with `twin_q`,
else one `QNetwork`; `critic_hiddens`); called on observations it returns
`(mu(s), Q_1(s, mu(s)))`, the distribution inputs of a `Deterministic` distribution and
the value estimate (`vf_preds`), so acting, `value()` and the exported SavedModel take
TFPolicy's paths unchanged. Acting runs in numpy on a copy of the actor's and first
critic's weights (one small MLP each; `config["inference"]`: "auto" or "numpy"), or in
one compiled call ("tf"). `compute_actions` adds the exploration noise in numpy, drawn
from the policy's seeded `sampling_rng` (`exploration_config`, RLlib's two noises):

- both: uniform random actions in the bounds for the first `random_timesteps` steps;
- "GaussianNoise" (TD3): `a = clip(mu(s) + scale_t * N(0, stddev^2), low, high)`;
- "OrnsteinUhlenbeckNoise" (DDPG): one OU process over the action dimensions,
  `x += -ou_theta * x + ou_sigma * N(0, 1)` per call, `a = clip(mu(s) + scale_t *
  ou_base_scale * x * (high - low), low, high)`;

with `scale_t` moving linearly from `initial_scale` to `final_scale` over
`scale_timesteps` steps. `explore=False` gives `mu(s)`. `low`/`high` are the policy's
action bounds (`policy_action_space`): `[-1, 1]` with `normalize_actions` (the default;
the sampler unsquashes the actions into the env's bounds, and the noise, its clipping and
the target smoothing act in that normalized space, as in RLlib and Stable-Baselines3),
the env's bounds without it.

Learning (`td3_loss`): each gradient step of a learning phase regresses the critics on
`y = R + gamma^k (1 - terminated) min_i Q'_i(s', a')` with the target actor's smoothed
action `a'` (`smooth_target_policy`: clipped Gaussian noise drawn in the graph from the
policy's `target_noise_seed` and its update counter, so a restored policy and every
replica draw the same) and, every `policy_delay`-th step, moves the actor along
`dQ_1/da * dmu/dtheta` (the deterministic policy gradient of `-mean Q_1(s, mu(s))`,
with `Q_1` called on frozen weights, `call_frozen`, so that this term never reaches the
critics' weights; which steps update the actor is `update_groups`, which the loss reads
as `train_batch.update_groups` and `apply_update` as `groups`) and then the target networks by `tau` (`soft_update`,
`after_optimizer_step`). All of a phase's steps, their optimizer updates (`actor_lr`,
`critic_lr`: a `MultiOptimizer`) and target updates run in one compiled `learn_on_batch`
call. The targets
move only there: `update_target()` exists for RLlib's API (a soft update by `tau`), the
TD3 algorithm does not call it.
"""

from typing import Any, ClassVar, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.policy_checks import (check_box_actions, check_no_recurrent_model,
                                           policy_action_space)
from tfrl.algorithms.td3.td3_config import EXPLORATION_NOISES, TD3Config
from tfrl.algorithms.td3.td3_loss import (l2_penalty, smoothed_target_action,
                                          td3_actor_loss, td3_critic_loss, td3_q_target)
from tfrl.algorithms.td_math import td_error
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import N_STEP
from tfrl.models.tf.actor_critic_nets import (DeterministicActor, QNetwork, TwinQNetwork,
                                              call_frozen)
from tfrl.models.tf.target_update import assign_weights, hard_update, soft_update
from tfrl.models.tf.tf_action_dist import Deterministic
from tfrl.policy import numpy_inference, space_specs
from tfrl.policy.numpy_inference import (DenseParams, WeightReader, activation_problem,
                                         dense_params, mlp_forward)
from tfrl.policy.optimizers import FusedAdam, MultiOptimizer
from tfrl.policy.tf_policy import TFPolicy
from tfrl.utils.schedules import LinearSchedule

# Learner stat: the fraction of a phase's gradient steps that updated the actor.
ACTOR_STEPS = "actor_steps"
# The actor's stats, evaluated on actor update steps only (see `loss_and_stats`).
ACTOR_STATS = ("actor_loss", "mean_q_pi")

TARGET_WEIGHTS = "target_weights"
EXPLORATION_STATE = "exploration_state"


class ActorCriticModel(keras.Model):
    """The actor `mu` and the critics: `call(obs) -> (mu(obs) [B, A], Q_1(obs, mu(obs))
    [B])`; `q_values(obs, actions) -> (Q_1, Q_2 or None)`.

    Args:
        obs_space, action_space: The spaces (a bounded Box action space).
        config: The policy config (`actor_hiddens`, `actor_hidden_activation`,
            `critic_hiddens`, `critic_hidden_activation`, `twin_q`).
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, config: Any,
                 name: str = "td3_model"):
        super().__init__(name=name)
        self.actor = DeterministicActor(obs_space, action_space, config["actor_hiddens"],
                                        config["actor_hidden_activation"], name="mu")
        hiddens, activation = config["critic_hiddens"], config["critic_hidden_activation"]
        self.twin_q = bool(config["twin_q"])
        self.critic = (TwinQNetwork(obs_space, action_space, hiddens, activation)
                       if self.twin_q else
                       QNetwork(obs_space, action_space, hiddens, activation, name="q1"))
        self.built = True  # the networks build their layers when created

    @property
    def q1(self) -> QNetwork:
        """The first critic."""
        return self.critic.q1 if self.twin_q else self.critic

    def q_values(self, obs: Any, actions: Any, training: bool = False
                 ) -> Tuple[tf.Tensor, Optional[tf.Tensor]]:
        """`(Q_1(s, a), Q_2(s, a))`, `[B]` each (`Q_2` None without `twin_q`)."""
        if self.twin_q:
            return self.critic(obs, actions, training=training)
        return self.critic(obs, actions, training=training), None

    def call(self, obs, training=False):
        actions = self.actor(obs, training=training)  # [B, A]
        return actions, self.q1(obs, actions, training=training)


class _NumpyActorCritic:
    """`mu(s)` and `Q_1(s, mu(s))` in numpy on a copy of the weights, refreshed when the
    policy's `weights_version` changes (the interface of `NumpyInference`)."""

    def __init__(self, policy: "TD3TFPolicy"):
        self._policy = policy
        self._version: Optional[int] = None
        self._reader: Optional[WeightReader] = None
        self._actor: List[DenseParams] = []
        self._critic: List[DenseParams] = []
        space = policy_action_space(policy.action_space, policy.config)
        self._low = space.low.reshape(-1).astype(np.float32)
        self._half_range = ((space.high - space.low) / 2.0).reshape(-1).astype(np.float32)

    @staticmethod
    def unsupported_reason(policy: "TD3TFPolicy") -> Optional[str]:
        if not isinstance(policy.observation_space, gym.spaces.Box):
            return f"the observation space {policy.observation_space} is not a Box"
        model = policy.model
        problem = activation_problem(list(model.actor.mlp.hidden_layers)
                                     + list(model.q1.mlp.hidden_layers))
        if problem is not None:
            return problem
        if any(v.dtype != "float32" for v in model.weights):
            return "the model's variables are not all float32"
        return None

    def _refresh(self) -> None:
        model = self._policy.model
        nets = (model.actor.mlp, model.q1.mlp)
        if self._reader is None:  # one compiled read of both networks' weights
            self._reader = WeightReader([w for mlp in nets
                                         for layer in list(mlp.hidden_layers) + [mlp.out]
                                         for w in (layer.kernel, layer.bias)])
        values = iter(self._reader.read())

        def layers(mlp):
            return [dense_params(values, layer, activation=layer is not mlp.out)
                    for layer in list(mlp.hidden_layers) + [mlp.out]]

        self._actor = layers(model.actor.mlp)
        self._critic = layers(model.q1.mlp)
        self._version = self._policy.weights_version

    def _forward(self, obs: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        if self._version != self._policy.weights_version:
            self._refresh()
        x = obs.reshape(len(obs), -1).astype(np.float32, copy=False)  # [B, obs_dim]
        unit = np.tanh(mlp_forward(x, self._actor))  # [B, A]
        actions = self._low + (unit + 1.0) * self._half_range
        q = mlp_forward(np.concatenate([x, actions], axis=-1), self._critic)[:, 0]  # [B]
        return actions.astype(np.float32, copy=False), q

    def value(self, obs: np.ndarray) -> np.ndarray:
        return self._forward(obs)[1]

    def compute_actions(self, obs: np.ndarray, explore: bool
                        ) -> Tuple[np.ndarray, List[np.ndarray], Dict[str, np.ndarray]]:
        actions, q = self._forward(obs)
        rows = len(actions)
        return actions.reshape((rows,) + self._policy.action_space.shape), [], {
            Columns.ACTION_DIST_INPUTS: actions,
            Columns.ACTION_LOGP: np.zeros(rows, np.float32),
            Columns.ACTION_PROB: np.ones(rows, np.float32),
            Columns.VF_PREDS: q,
        }


class TD3TFPolicy(TFPolicy):
    """TD3's (and DDPG's) policy (config: `TD3Config`'s fields); see the module docstring.

    Raises:
        ValueError: For an action space that is not a bounded Box (naming SAC's discrete
            variant for a Discrete one), a recurrent model, `use_state_preprocessor`, or
            an unknown exploration noise.
    """

    config_class: ClassVar[type] = TD3Config
    # The action spaces it accepts and no recurrent models (read by the conformance suite).
    action_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Box,)
    supports_recurrent_models: ClassVar[bool] = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        owner = type(self).__name__
        given = dict(config or {})
        check_no_recurrent_model(given, owner)
        check_box_actions(action_space, owner)
        if given.get("use_state_preprocessor"):
            raise ValueError(f"{owner}: use_state_preprocessor=True is not supported; the "
                             "actor and critics read the (flattened) observations. Set it to "
                             "False.")
        super().__init__(observation_space, action_space, config, strategy=strategy)
        # A partial `exploration_config` without "type" takes this algorithm's (DDPG:
        # Ornstein-Uhlenbeck, TD3: Gaussian). Noise and clipping act in the policy's space
        # ([-1, 1] with normalize_actions).
        default_type = self.default_config()["exploration_config"]["type"]
        self._exploration = _Exploration(self.config["exploration_config"],
                                         policy_action_space(action_space, self.config),
                                         owner, default_type)
        seed = self.config["seed"]
        noise_seed = int(np.random.SeedSequence(seed).spawn(3)[2].generate_state(1)[0]) \
            if seed is not None else int(np.random.default_rng().integers(2**31))
        with self.strategy.scope():
            self.target_model = self.make_model()
            self.target_model.trainable = False
            # Seeds the target policy smoothing noise (with the update counter).
            self.target_noise_seed = tf.Variable(noise_seed, dtype=tf.int64, trainable=False,
                                                 name="target_noise_seed")
        hard_update(self.target_model.variables, self.model.variables)
        actor_ids = {id(v) for v in self.model.actor.trainable_variables}
        variables = self.model.trainable_variables
        self._actor_index = [i for i, v in enumerate(variables) if id(v) in actor_ids]
        self._critic_index = [i for i, v in enumerate(variables) if id(v) not in actor_ids]
        self._td_error_fn: Optional[Any] = None

    # ------------------------------------------------------------- building

    def make_model(self) -> keras.Model:
        """The `ActorCriticModel` of the config's networks."""
        return ActorCriticModel(self.observation_space,
                                policy_action_space(self.action_space, self.config), self.config)

    def make_action_distribution(self) -> Tuple[type, int]:
        """`Deterministic` over the flattened action."""
        return Deterministic, int(np.prod(self.action_space.shape))

    def make_optimizer(self) -> Any:
        """Adam(`actor_lr`) for the actor and Adam(`critic_lr`) for the critics
        (`FusedAdam`s in a `MultiOptimizer`, in that order)."""
        model = self.model
        critic = [v for v in model.trainable_variables
                  if id(v) not in {id(a) for a in model.actor.trainable_variables}]
        return MultiOptimizer([
            (FusedAdam(self.config["actor_lr"]), model.actor.trainable_variables),
            (FusedAdam(self.config["critic_lr"]), critic)])

    def _make_numpy_inference(self) -> Optional[Any]:
        return numpy_inference.choose(self, self.config["inference"],
                                      lambda: _NumpyActorCritic.unsupported_reason(self),
                                      lambda: _NumpyActorCritic(self))

    # --------------------------------------------------------------- acting

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """`mu(s)` (numpy or one compiled call) plus the exploration noise at `timestep`
        (default: the policy's `global_timestep`) when exploring."""
        step = self.global_timestep if timestep is None else int(timestep)
        actions, state_outs, extras = super().compute_actions(
            obs_batch, state_batches, prev_action_batch, prev_reward_batch, info_batch,
            episodes, explore=False, timestep=timestep, **kwargs)
        if self.config["explore"] if explore is None else explore:
            actions = self._exploration.apply(actions, step, self.sampling_rng)
        return actions, state_outs, extras

    # ------------------------------------------------------------- learning

    def _smoothing_noise(self, shape: tf.Tensor) -> tf.Tensor:
        """Standard normal draws `[B, A]` for this replica's rows: one `[B * replicas, A]`
        draw per update (seeded by `target_noise_seed` and `num_grad_updates`), cut like
        the rows, so that any number of replicas draws what one device does."""
        context = tf.distribute.get_replica_context()
        replicas = 1 if context is None else context.num_replicas_in_sync
        replica = 0 if context is None else context.replica_id_in_sync_group
        rows = shape[0]
        seed = tf.stack([tf.identity(self.target_noise_seed),
                         tf.cast(tf.identity(self.num_grad_updates), tf.int64)])
        noise = tf.random.stateless_normal(tf.stack([rows * replicas, shape[1]]), seed)
        start = tf.cast(replica, tf.int32) * rows
        return noise[start:start + rows]

    def _target_q(self, train_batch: Dict[str, tf.Tensor], smooth: bool) -> tf.Tensor:
        """`y_t` `[B]` from the target networks (smoothed target actions if `smooth`)."""
        config = self.config
        next_obs = train_batch[Columns.NEXT_OBS]
        target = self.target_model
        a_tp1 = target.actor(next_obs)  # [B, A]
        if smooth:
            space = policy_action_space(self.action_space, self.config)
            a_tp1 = smoothed_target_action(
                a_tp1, self._smoothing_noise(tf.shape(a_tp1)),
                target_noise=config["target_noise"],
                target_noise_clip=config["target_noise_clip"],
                low=space.low.reshape(-1), high=space.high.reshape(-1))
        q1_tp1, q2_tp1 = target.q_values(next_obs, a_tp1)
        n_step = train_batch.get(N_STEP)
        return td3_q_target(train_batch[Columns.REWARDS], train_batch[Columns.TERMINATEDS],
                            q1_tp1, q2_tp1, gamma=config["gamma"],
                            n_step=1 if n_step is None else n_step)

    def _actions(self, train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        actions = tf.cast(train_batch[Columns.ACTIONS], tf.float32)
        return tf.reshape(actions, [tf.shape(actions)[0], -1])  # [B, A]

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The critics' loss plus the actor's `-mean Q_1(s, mu(s))` (`Q_1` on frozen
        weights: its gradient reaches the actor only)."""
        config = self.config
        obs = train_batch[Columns.OBS]
        targets = self._target_q(train_batch, bool(config["smooth_target_policy"]))
        q1_t, q2_t = model.q_values(obs, self._actions(train_batch), training=True)
        critic, stats = td3_critic_loss(
            q1_t, q2_t, targets, train_batch.get(WEIGHTS),
            huber_delta=config["huber_threshold"] if config["use_huber"] else None)
        # The actor: Q_1(s, mu(s)) with the critic's weights held constant. With
        # `policy_delay` > 1 only every `policy_delay`-th step evaluates and
        # differentiates it (the other steps' actor gradients would be dropped by
        # `apply_update`): a `tf.cond` whose other branch gives zeros (no actor or
        # Q_1(s, mu(s)) pass at all: ~6 % of a phase's compute at [400, 300]). Its
        # stats are 0 on those steps; `ACTOR_STEPS` (1 on actor steps) lets
        # `learn_on_batch` report them as means over the actor steps. The loss (a mean
        # over every replica's rows: a synchronization point, not allowed inside a
        # cond) is taken outside.
        def q_pi() -> tf.Tensor:
            return call_frozen(model.q1, obs, model.actor(obs, training=True))  # [B]

        groups = getattr(train_batch, "update_groups", None) or self.update_groups(True)
        if groups["actor"] is True:
            q_t, actor_step = q_pi(), tf.constant(1.0)
        else:
            q_t = tf.cond(groups["actor"], q_pi, lambda: tf.zeros_like(q1_t))
            actor_step = tf.cast(groups["actor"], tf.float32)
        actor, actor_stats = td3_actor_loss(q_t)
        actor_stats[ACTOR_STEPS] = actor_step
        if config["l2_reg"]:
            # Each replica adds its share: the optimizer sums the replicas' gradients.
            replicas = self.strategy.num_replicas_in_sync
            critic += l2_penalty(model.critic.trainable_variables, config["l2_reg"]) / replicas
            actor += l2_penalty(model.actor.trainable_variables, config["l2_reg"]) / replicas
        # min_q / max_q are one replica's extremes: report the means only.
        stats = {k: v for k, v in stats.items() if k not in ("min_q", "max_q")}
        stats.update(actor_stats)
        return critic + actor, stats

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, Any]:
        """TFPolicy's `learn_on_batch`; the actor's stats (`actor_loss`, `mean_q_pi`)
        are means over the phase's actor update steps (every `policy_delay`-th; left
        out for a phase without one), `actor_steps` the fraction of steps that updated
        the actor."""
        info = super().learn_on_batch(samples, num_sgd_iter=num_sgd_iter,
                                      sgd_minibatch_size=sgd_minibatch_size,
                                      shuffle_sequences=shuffle_sequences)
        stats = info["learner_stats"]
        fraction = float(stats[ACTOR_STEPS])
        for key in ACTOR_STATS:
            if fraction > 0:
                stats[key] = float(stats[key]) / fraction
            else:
                del stats[key]
        return info

    def update_groups(self, learning: bool) -> Dict[str, Any]:
        """The critics every step; the actor (and, in `after_optimizer_step`, the
        targets) every `policy_delay`-th step of the learning loop, and in
        `compute_gradients` (`learning=False`) on every call: delaying is the loop's
        business."""
        if not learning or int(self.config["policy_delay"]) == 1:
            return {"critic": True, "actor": True}
        return {"critic": True, "actor": self._actor_step()}

    def _actor_step(self) -> tf.Tensor:
        """Whether this step updates the actor and the targets: every `policy_delay`-th
        (`num_grad_updates` counts the steps before it)."""
        return (self.num_grad_updates + 1) % int(self.config["policy_delay"]) == 0

    def apply_update(self, grads: List[Any], variables: List[Any],
                     groups: Dict[str, Any]) -> None:
        """The critics' update, and the actor's where `groups["actor"]` (inside the
        compiled learning call, in cross-replica context)."""
        strategy, optimizer = self.strategy, self.optimizer
        index = {id(v): i for i, v in enumerate(self.model.trainable_variables)}
        actor = [j for j, v in enumerate(variables) if index[id(v)] in self._actor_index]
        critic = [j for j, v in enumerate(variables) if index[id(v)] in self._critic_index]

        def apply(rows: List[int]) -> tf.Tensor:
            if rows:
                strategy.run(lambda g: optimizer.apply_gradients(
                    [(g[j], variables[j]) for j in rows]), args=(grads,))
            return tf.constant(True)

        apply(critic)
        if groups["actor"] is True:
            apply(actor)
        else:
            tf.cond(groups["actor"], lambda: apply(actor), lambda: tf.constant(False))

    def after_optimizer_step(self) -> None:
        """Every `policy_delay`-th step: the target networks move `tau` of the way to the
        online ones (`soft_update`)."""
        def move() -> tf.Tensor:
            soft_update(self.target_model.variables, self.model.variables,
                        tf.constant(self.config["tau"], tf.float32))
            return tf.constant(True)

        if int(self.config["policy_delay"]) == 1:
            move()
        else:
            tf.cond(self._actor_step(), move, lambda: tf.constant(False))

    def compute_td_error(self, obs_t: Any, act_t: Any, rew_t: Any, obs_tp1: Any,
                         terminateds_mask: Any, n_step: Any = None) -> np.ndarray:
        """Per-row TD errors `|Q_1(s, a) - y|` (twin critics: the mean of both critics')
        `[B]` with the current weights and unsmoothed target actions, in one compiled call
        (for prioritized replay)."""
        rows = len(rew_t)
        if self._td_error_fn is None:
            obs_spec = space_specs.batch_spec(self.observation_space)
            vector = tf.TensorSpec((None,), tf.float32)
            actions = tf.TensorSpec((None, int(np.prod(self.action_space.shape))), tf.float32)
            self._td_error_fn = tf.function(self._td_error_graph, input_signature=[
                obs_spec, actions, vector, obs_spec, vector, vector], autograph=False)
        steps = np.ones(rows, np.float32) if n_step is None else n_step
        return self._td_error_fn(
            self._acting.check_obs(obs_t),
            np.asarray(act_t, np.float32).reshape(rows, -1),
            np.asarray(rew_t, np.float32), self._acting.check_obs(obs_tp1),
            np.asarray(terminateds_mask, np.float32), np.asarray(steps, np.float32)).numpy()

    def td_errors(self, batch: Any) -> np.ndarray:
        """`compute_td_error` on a batch's columns."""
        return self.compute_td_error(
            batch[Columns.OBS], batch[Columns.ACTIONS], batch[Columns.REWARDS],
            batch[Columns.NEXT_OBS], batch[Columns.TERMINATEDS], batch.get(N_STEP))

    def _td_error_graph(self, obs, actions, rewards, next_obs, terminateds, n_step):
        self.num_traces["compute_td_error"] = self.num_traces.get("compute_td_error", 0) + 1
        targets = self._target_q({Columns.NEXT_OBS: next_obs, Columns.REWARDS: rewards,
                                  Columns.TERMINATEDS: terminateds, N_STEP: n_step},
                                 smooth=False)
        q1_t, q2_t = self.model.q_values(obs, actions)
        return td_error(q1_t, q2_t, targets)

    def update_target(self, tau: Optional[float] = None) -> None:
        """Moves the target networks `tau` (default `config["tau"]`) of the way to the
        online ones (RLlib's method; TD3's learning call does this itself)."""
        soft_update(self.target_model.variables, self.model.variables,
                    self.config["tau"] if tau is None else float(tau))

    # ---------------------------------------------------------------- state

    def get_state(self) -> Dict[str, Any]:
        """TFPolicy's state plus the target networks' weights, the smoothing noise's
        seed and the exploration noise's state."""
        state = super().get_state()
        state[TARGET_WEIGHTS] = [np.array(v.numpy()) for v in self.target_model.weights]
        state[EXPLORATION_STATE] = {
            "target_noise_seed": int(self.target_noise_seed.numpy()),
            "ou_state": self._exploration.ou_state.copy()}
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result (a state without target weights copies the
        restored weights into the targets)."""
        super().set_state(state)
        target = state.get(TARGET_WEIGHTS)
        variables = self.target_model.weights
        if target is None:
            hard_update(self.target_model.variables, self.model.variables)
        else:
            assign_weights(variables, target, f"set_state(): '{TARGET_WEIGHTS}'")
        exploration = state.get(EXPLORATION_STATE)
        if exploration is not None:
            self.target_noise_seed.assign(int(exploration["target_noise_seed"]))
            self._exploration.ou_state[...] = exploration["ou_state"]


class _Exploration:
    """The exploration noise of `exploration_config` (see the module docstring), in
    numpy; `ou_state` is the Ornstein-Uhlenbeck process (zeros for Gaussian noise)."""

    def __init__(self, config: Dict[str, Any], action_space: gym.spaces.Box, owner: str,
                 default_type: str):
        kind = config.get("type", default_type)
        if kind not in EXPLORATION_NOISES:
            raise ValueError(f"{owner}: exploration_config['type'] must be one of "
                             f"{sorted(EXPLORATION_NOISES)}; received {kind!r}.")
        defaults = EXPLORATION_NOISES[kind]()
        unknown = sorted(set(config) - set(defaults))
        if unknown:
            raise ValueError(f"{owner}: unknown exploration_config keys {unknown} for "
                             f"{kind}; its keys are {sorted(defaults)}.")
        self.config = {**defaults, **config}
        self.kind = kind
        self.low = action_space.low.astype(np.float32)
        self.high = action_space.high.astype(np.float32)
        self.scale = LinearSchedule(max(1, int(self.config["scale_timesteps"])),
                                    self.config["final_scale"],
                                    initial_p=self.config["initial_scale"])
        self.ou_state = np.zeros(action_space.shape, np.float32)

    def apply(self, actions: np.ndarray, step: int, rng: np.random.Generator) -> np.ndarray:
        """The exploring actions for the deterministic `actions` `[B, *A]` at `step`."""
        config = self.config
        if step < config["random_timesteps"]:
            return rng.uniform(self.low, self.high, actions.shape).astype(np.float32)
        scale = self.scale.value(step)
        if self.kind == "GaussianNoise":
            noise = scale * config["stddev"] * rng.standard_normal(actions.shape,
                                                                   dtype=np.float32)
        else:
            self.ou_state += (-config["ou_theta"] * self.ou_state + config["ou_sigma"]
                              * rng.standard_normal(self.ou_state.shape, dtype=np.float32))
            noise = scale * config["ou_base_scale"] * self.ou_state * (self.high - self.low)
        return np.clip(actions + noise, self.low, self.high).astype(np.float32)
