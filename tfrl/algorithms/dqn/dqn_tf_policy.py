"""DQNTFPolicy: Q-learning with a target network, double Q, dueling heads, n-step returns.

The Q model is the catalog's model for the observation space (an MLP, or the conv net
for images) with `num_actions` outputs, its trunk extended by `hiddens` and the value
head on the shared trunk: without `dueling` the outputs are `Q(s, .)`; with it they are
the advantages `A(s, .)` and `Q = V + A - mean A` (`dqn_loss.dueling_q_values`). Either
way the greedy action is the argmax of the outputs (adding `V - mean A` changes no
argmax), so acting takes TFPolicy's path unchanged: `compute_actions` takes the greedy
actions from it (numpy inference for dense models, else one compiled call) and replaces
each with a uniform random action with probability epsilon, drawn from the policy's
seeded `sampling_rng`; epsilon falls linearly from `initial_epsilon` to `final_epsilon`
over `epsilon_timesteps` of the policy's timestep. (The exported SavedModel's
`deterministic_action` is the greedy action; its `stochastic_action` samples
`softmax(outputs)`, not epsilon-greedy.)

The target model has the same architecture; `update_target()` copies the weights, or
with `tau < 1` moves them `tau` of the way (the DQN algorithm calls it every
`target_network_update_freq` sampled steps). The loss is
`dqn_loss.dqn_loss` on the online and target Q-values of a replayed minibatch (the
`n_step` column of n-step transitions gives each row's bootstrap exponent, 1 when
absent; prioritized replay's `weights` column weights the rows). `compute_td_error`
gives the per-row TD errors of a batch in one compiled call, for the new priorities.

Rainbow's parts (`num_atoms > 1`, `noisy`): the model is a `DistributionalQTFModel`
whose outputs are the expected Q-values, so acting, values and the export take the same
paths (numpy inference on a dense or small conv trunk without noisy layers, else
TF). The
loss is `c51_loss` or `qr_dqn_loss` on its atoms (`dqn_loss` on its Q-values for noisy
nets alone), and `compute_td_error` returns the per-row distributional loss, RLlib's
priority. With `noisy`, `compute_actions(explore=True)` takes the greedy actions of the
network under fresh noise (seeded from `sampling_rng`, one compiled call) and applies no
epsilon; without `explore` the noise-free means act. The loss's noise comes from
`noise_key` (part of the state) and the update counter (`loss_noise_seed`).
"""

from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.dqn.distributional_q_tf_model import (DistributionalQTFModel,
                                                           NumpyDistributionalQ)
from tfrl.algorithms.dqn.dqn_config import DQNConfig
from tfrl.algorithms.dqn.dqn_loss import (
    c51_loss, c51_targets, categorical_td_error, dqn_loss, dueling_q_values, q_target,
    qr_dqn_loss, qr_targets, qr_td_error, td_error)
from tfrl.algorithms.policy_checks import check_discrete, check_no_recurrent_model
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import N_STEP
from tfrl.models.action_mask import (ActionMaskModel, action_mask_layout,
                                     apply_action_mask, uniform_allowed_actions)
from tfrl.models.catalog import ModelCatalog, merge_model_config
from tfrl.models.model_defaults import model_setting
from tfrl.models.preprocessors import get_preprocessor
from tfrl.models.tf.target_update import assign_weights
from tfrl.policy import numpy_inference, space_specs
from tfrl.policy.optimizers import FusedAdam
from tfrl.policy.tf_policy import TFPolicy
from tfrl.utils.schedules import LinearSchedule, Schedule, make_schedule

TARGET_WEIGHTS = "target_weights"
NOISE_KEY = "noise_key"
# The loss's forward passes, each with its own noise (noisy nets).
_ONLINE_T, _ONLINE_TP1, _TARGET_TP1 = 0, 1, 2


class DQNTFPolicy(TFPolicy):
    """DQN policy (config: `DQNConfig`'s fields); see the module docstring.

    Raises:
        ValueError: For an action space that is not `Discrete`, or a recurrent model
            (`use_lstm`/`use_attention`: R2D2, `tfrl.algorithms.r2d2`, replays stored
            sequences for them).
    """

    config_class = DQNConfig
    # The action spaces it accepts (read by the conformance suite too).
    action_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Discrete,)
    # Recurrent Q models are refused (read by the conformance suite too).
    supports_recurrent_models: ClassVar[bool] = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        check_discrete(action_space, type(self).__name__)
        if not self.supports_recurrent_models:
            check_no_recurrent_model(
                config or {}, type(self).__name__,
                hint="DQN replays single transitions: set them to False, or stack frames "
                     "into the observation, or use R2D2 (which replays stored sequences).")
        super().__init__(observation_space, action_space, config, strategy=strategy)
        exploration = self.config["exploration_config"]
        # A Schedule: Ape-X's policy sets a constant per-worker epsilon.
        self.epsilon_schedule: Schedule = LinearSchedule(
            exploration["epsilon_timesteps"], exploration["final_epsilon"],
            initial_p=exploration["initial_epsilon"])
        self._lr_schedule = make_schedule(self.config["lr"], self.config["lr_schedule"])
        with self.strategy.scope():
            self.target_model = self.make_target_model()
        self.update_target(tau=1.0)
        self._td_error_fn: Optional[Callable[..., tf.Tensor]] = None
        self._noisy_actions_fn: Optional[Callable[..., tf.Tensor]] = None
        # Noisy nets: the loss's noise is stateless, keyed by this and the update counter
        # (the same on every replica; restored with the state).
        seed = self.config["seed"]
        key = (np.random.SeedSequence(seed).spawn(3)[2] if seed is not None
               else np.random.SeedSequence()).generate_state(2) % (2**31)
        with self.strategy.scope():
            self.noise_key = tf.Variable(key.astype(np.int32), trainable=False,
                                         name="noise_key")

    # ------------------------------------------------------------- building

    @property
    def distributional(self) -> Optional[str]:
        """"c51" or "quantile" with `num_atoms > 1`, else None."""
        return self.config["distributional"] if self.config["num_atoms"] > 1 else None

    def make_model(self) -> keras.Model:
        """The catalog model with `hiddens` appended to its trunk and the value head on
        the shared trunk (the dueling stream `V`); with `num_atoms > 1` or `noisy`, a
        `DistributionalQTFModel` on the catalog's trunk."""
        config = self.config
        if config["num_atoms"] > 1 or config["noisy"]:
            model_config = merge_model_config(config["model"])
            if action_mask_layout(self.observation_space, self.action_space,
                                  model_config) is not None:
                raise ValueError(
                    f"{type(self).__name__}: num_atoms > 1 and noisy=True do not support "
                    "built-in action masking yet (the observation has an "
                    f"{model_config['action_mask_key']!r} entry). Use num_atoms=1 and "
                    "noisy=False, or set model['action_mask_key']=None.")
            model_space = get_preprocessor(self.observation_space)(
                self.observation_space, model_config).observation_space
            model = DistributionalQTFModel(
                model_space, self.action_space, self.num_outputs, model_config,
                q_hiddens=config["hiddens"], dueling=config["dueling"],
                num_atoms=config["num_atoms"], use_noisy=config["noisy"],
                v_min=config["v_min"], v_max=config["v_max"], sigma0=config["sigma0"],
                distributional=config["distributional"])
            model(np.zeros((1,) + tuple(model_space.shape), np.float32))
            return model
        return ModelCatalog.get_model(self.observation_space, self.action_space,
                                      self.num_outputs, self.q_model_config())

    def _make_numpy_inference(self) -> Optional[Any]:
        if not isinstance(self.model, DistributionalQTFModel):
            return super()._make_numpy_inference()
        overridden = self._overridden_action_methods()
        return numpy_inference.choose(
            self, self.config["inference"],
            lambda: (numpy_inference.overrides_reason(self, overridden)
                     or NumpyDistributionalQ.unsupported_reason(self)),
            lambda: NumpyDistributionalQ(self))

    def q_model_config(self) -> Dict[str, Any]:
        """The catalog's model config of the Q network (plain DQN): the config's `model`
        with `hiddens` appended to `post_fcnet_hiddens` and the value head on the shared
        trunk (`vf_share_layers`, the dueling stream `V`)."""
        model_config = dict(self.config["model"])
        model_config["post_fcnet_hiddens"] = (list(model_setting(model_config, "post_fcnet_hiddens"))
                                              + list(self.config["hiddens"]))
        model_config["vf_share_layers"] = True
        return model_config

    def make_target_model(self) -> keras.Model:
        """The target network: `make_model()`'s architecture, built on one zero
        observation (called under the strategy scope)."""
        model = self.make_model()
        model(space_specs.zeros_batch(self.observation_space, 1))
        return model

    def make_optimizer(self) -> keras.optimizers.Optimizer:
        """Adam(`lr`, epsilon=`adam_epsilon`) (`FusedAdam`)."""
        return FusedAdam(learning_rate=self.config["lr"], epsilon=self.config["adam_epsilon"])

    # --------------------------------------------------------------- acting

    @property
    def cur_lr(self) -> float:
        """The optimizer's current learning rate."""
        return float(np.asarray(self.optimizer.learning_rate))

    @property
    def cur_epsilon(self) -> float:
        """Epsilon at the policy's current timestep."""
        return float(self.epsilon_schedule.value(self.global_timestep))

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Greedy actions (TFPolicy's path), each replaced with probability epsilon (at
        `timestep`, default the policy's `global_timestep`) by a uniform random action
        (uniform over the allowed actions with an action mask)."""
        explore = self.config["explore"] if explore is None else explore
        if self.config["noisy"]:  # the noise explores (no epsilon); the means exploit
            if explore:
                return self._noisy_actions(obs_batch)
            return super().compute_actions(
                obs_batch, state_batches, prev_action_batch, prev_reward_batch, info_batch,
                episodes, explore=False, timestep=timestep, **kwargs)
        step = self.global_timestep if timestep is None else int(timestep)
        actions, state_outs, extras = super().compute_actions(
            obs_batch, state_batches, prev_action_batch, prev_reward_batch, info_batch,
            episodes, explore=False, timestep=timestep, **kwargs)
        if explore:
            epsilon = self.epsilon_schedule.value(step)
            rows = len(actions)
            rng = self.sampling_rng
            explore_rows = rng.random(rows) < epsilon  # [B]
            if isinstance(self.model, ActionMaskModel):  # uniform over the allowed actions
                obs = self._acting.check_obs(obs_batch)
                allowed = obs[:, self.model.mask_start:self.model.mask_stop] > 0.5  # [B, n]
                random_actions = uniform_allowed_actions(allowed, rng)  # [B]
            else:
                random_actions = rng.integers(self.action_space.n, size=rows)  # [B]
            actions = np.where(explore_rows, random_actions, actions).astype(actions.dtype)
        return actions, state_outs, extras

    def _noisy_actions(self, obs_batch: Any
                       ) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Greedy actions of the noisy network with fresh noise (one compiled call; the
        noise seed drawn from `sampling_rng`, part of the policy's state)."""
        obs = self._acting.check_obs(obs_batch)
        fn = self._noisy_actions_fn
        if fn is None:
            fn = self._noisy_actions_fn = tf.function(
                self._noisy_actions_graph, autograph=False, input_signature=[
                    space_specs.batch_spec(self.observation_space),
                    tf.TensorSpec((2,), tf.int32)])
        seed = self.sampling_rng.integers(2**31, size=2).astype(np.int32)
        q = fn(tf.constant(obs), tf.constant(seed)).numpy()  # [B, num_actions]
        rows = len(q)
        self.global_timestep += rows
        actions = q.argmax(axis=-1).astype(self.action_space.dtype)
        return actions, [], {Columns.ACTION_DIST_INPUTS: q,
                             Columns.ACTION_LOGP: np.zeros(rows, np.float32),
                             Columns.ACTION_PROB: np.ones(rows, np.float32),
                             Columns.VF_PREDS: q.max(axis=-1)}

    def _noisy_actions_graph(self, obs, seed):
        self.num_traces["noisy_actions"] = self.num_traces.get("noisy_actions", 0) + 1
        return self.q_values(self.model, obs, noise_seed=seed)

    # ------------------------------------------------------------- learning

    def loss_noise_seed(self, forward_pass: int) -> Optional[tf.Tensor]:
        """The noise seed (`[2]` int32) of one of the loss's forward passes at the
        current update (None without noisy nets): from `noise_key` and
        `num_grad_updates`, so each update draws new noise and replicas agree."""
        if not self.config["noisy"]:
            return None
        step = tf.cast(self.num_grad_updates % (2**31), tf.int32)
        seed = tf.random.experimental.stateless_fold_in(tf.identity(self.noise_key), step)
        return tf.random.experimental.stateless_fold_in(seed, forward_pass)

    def q_values(self, model: keras.Model, obs: Any, training: bool = False,
                 noise_seed: Optional[tf.Tensor] = None) -> tf.Tensor:
        """`Q(s, .)` `[B, num_actions]` of `model` (the policy's or the target model).

        With an action mask (the catalog's `ActionMaskModel`) the dueling mean runs over
        the unmasked advantages and the mask applies to `Q` (masked actions at
        `masked_value`, never chosen by the argmax or max of the targets). A
        `DistributionalQTFModel` gives its expected Q-values (`noise_seed`: its noise)."""
        if isinstance(model, DistributionalQTFModel):
            return model.q_distribution(obs, training=training, noise_seed=noise_seed)[0]
        if self.config["dueling"] and isinstance(model, ActionMaskModel):
            outputs, value, mask = model.unmasked(obs, training=training)
            return apply_action_mask(dueling_q_values(value, outputs), mask)
        outputs, value = model(obs, training=training)
        return dueling_q_values(value, outputs) if self.config["dueling"] else outputs

    def loss_q_values(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                      ) -> Tuple[tf.Tensor, tf.Tensor, Optional[tf.Tensor]]:
        """The loss's Q-values `(Q(s_t, .), Q_target(s_{t+k}, .), Q_online(s_{t+k}, .))`,
        each `[B, num_actions]`; the last (double Q only, else None) without gradient."""
        obs, next_obs = train_batch[Columns.OBS], train_batch[Columns.NEXT_OBS]
        q_t = self.q_values(model, obs, training=True)
        q_tp1_online = None
        if self.config["double_q"]:
            # Only picks the next action (an argmax): no gradient, so the backward pass
            # covers the B rows of s_t alone (cheaper than one pass over [s_t; s_{t+n}]).
            q_tp1_online = tf.stop_gradient(self.q_values(model, next_obs, training=True))
        return q_t, self.q_values(self.target_model, next_obs), q_tp1_online

    def td_loss_function(self) -> Tuple[Callable[..., Any], Dict[str, Any]]:
        """`(loss function, its keyword arguments beyond dqn_loss's)`: `dqn_loss` here; a
        subclass with a penalised TD loss (discrete CQL) returns its own."""
        return dqn_loss, {}

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`td_loss_function()` (`dqn_loss`) on the online and target Q-values of the
        minibatch."""
        config = self.config
        if isinstance(model, DistributionalQTFModel):
            loss, stats = self._distributional_loss(model, train_batch)
            stats["cur_lr"] = tf.cast(self.optimizer.learning_rate, tf.float32)
            return loss, stats
        q_t, q_tp1_target, q_tp1_online = self.loss_q_values(model, train_batch)
        n_step = train_batch.get(N_STEP)
        loss_fn, extra_kwargs = self.td_loss_function()
        loss, stats = loss_fn(
            q_t, train_batch[Columns.ACTIONS], train_batch[Columns.REWARDS],
            train_batch[Columns.TERMINATEDS], q_tp1_target, q_tp1_online,
            train_batch.get(WEIGHTS), gamma=config["gamma"],
            n_step=1 if n_step is None else n_step,
            huber_delta=1.0 if config["td_error_loss_fn"] == "huber" else None,
            **extra_kwargs)
        # min_q / max_q are extremes of one replica's rows, which averaged over replicas
        # are not the batch's: report the means only.
        stats = {k: v for k, v in stats.items() if k not in ("min_q", "max_q")}
        stats["cur_lr"] = tf.cast(self.optimizer.learning_rate, tf.float32)
        return loss, stats

    def _distributional_loss(self, model: DistributionalQTFModel,
                             train_batch: Dict[str, tf.Tensor]
                             ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The loss of a `DistributionalQTFModel`: `c51_loss`, `qr_dqn_loss`, or
        (`num_atoms=1`, noisy nets alone) `dqn_loss`, each forward pass with its own
        noise."""
        config = self.config
        obs, next_obs = train_batch[Columns.OBS], train_batch[Columns.NEXT_OBS]
        q_t, atoms_t = model.q_distribution(obs, training=True,
                                            noise_seed=self.loss_noise_seed(_ONLINE_T))
        q_tp1_target, atoms_tp1_target = self.target_model.q_distribution(
            next_obs, noise_seed=self.loss_noise_seed(_TARGET_TP1))
        q_tp1_online = None
        if config["double_q"]:
            q_tp1_online = tf.stop_gradient(self.q_values(
                model, next_obs, training=True, noise_seed=self.loss_noise_seed(_ONLINE_TP1)))
        n_step = train_batch.get(N_STEP)
        common = dict(gamma=config["gamma"], n_step=1 if n_step is None else n_step)
        args = (train_batch[Columns.ACTIONS], train_batch[Columns.REWARDS],
                train_batch[Columns.TERMINATEDS])
        weights = train_batch.get(WEIGHTS)
        if self.distributional == "c51":
            return c51_loss(atoms_t, *args, atoms_tp1_target, q_tp1_online, weights,
                            v_min=config["v_min"], v_max=config["v_max"], **common)
        if self.distributional == "quantile":
            return qr_dqn_loss(atoms_t, *args, atoms_tp1_target, q_tp1_online, weights,
                               **common)
        loss, stats = dqn_loss(
            q_t, *args, q_tp1_target, q_tp1_online, weights,
            huber_delta=1.0 if config["td_error_loss_fn"] == "huber" else None, **common)
        return loss, {k: v for k, v in stats.items() if k not in ("min_q", "max_q")}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """DQN's loss alone (RLlib's signature)."""
        return DQNTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    def compute_td_error(self, obs_t: Any, act_t: Any, rew_t: Any, obs_tp1: Any,
                         terminateds_mask: Any, n_step: Any = None) -> np.ndarray:
        """Per-row TD errors `Q(s_t, a_t) - y_t` `[B]` with the current weights, in one
        compiled call (RLlib's signature; `n_step`: the rows' bootstrap exponents,
        default 1). With `num_atoms > 1`, the per-row loss instead (C51's cross-entropy,
        QR-DQN's quantile Huber loss), as RLlib's priorities; noisy layers use their
        means here."""
        rows = len(rew_t)
        td_error_fn = self._td_error_fn
        if td_error_fn is None:
            obs_spec = space_specs.batch_spec(self.observation_space)
            vector = tf.TensorSpec((None,), tf.float32)
            td_error_fn = self._td_error_fn = tf.function(self._td_error_graph, input_signature=[
                obs_spec, tf.TensorSpec((None,), tf.int32), vector, obs_spec, vector, vector],
                autograph=False)
        steps = np.ones(rows, np.float32) if n_step is None else n_step
        return td_error_fn(
            self._acting.check_obs(obs_t), np.asarray(act_t, np.int32),
            np.asarray(rew_t, np.float32), self._acting.check_obs(obs_tp1),
            np.asarray(terminateds_mask, np.float32), np.asarray(steps, np.float32)).numpy()

    def td_errors(self, batch: Any) -> np.ndarray:
        """`compute_td_error` on a batch's columns (`obs`, `actions`, `rewards`,
        `new_obs`, `terminateds`, and `n_step` if present)."""
        return self.compute_td_error(
            batch[Columns.OBS], batch[Columns.ACTIONS], batch[Columns.REWARDS],
            batch[Columns.NEXT_OBS], batch[Columns.TERMINATEDS], batch.get(N_STEP))

    def _td_error_graph(self, obs, actions, rewards, next_obs, terminateds, n_step):
        self.num_traces["compute_td_error"] = self.num_traces.get("compute_td_error", 0) + 1
        rows = tf.shape(rewards)[0]
        if self.distributional is not None:
            q_tp1_online = self.q_values(self.model, next_obs)
            _, atoms_t = self.model.q_distribution(obs)
            _, atoms_tp1 = self.target_model.q_distribution(next_obs)
            online = q_tp1_online if self.config["double_q"] else None
            common = dict(gamma=self.config["gamma"], n_step=n_step)
            if self.distributional == "c51":
                targets = c51_targets(rewards, terminateds, atoms_tp1, online,
                                      v_min=self.config["v_min"], v_max=self.config["v_max"],
                                      **common)
                return categorical_td_error(atoms_t, actions, targets)
            return qr_td_error(atoms_t, actions,
                               qr_targets(rewards, terminateds, atoms_tp1, online, **common))
        both = self.q_values(self.model, tf.concat([obs, next_obs], axis=0))
        q_t, q_tp1_online = both[:rows], both[rows:]
        targets = q_target(rewards, terminateds, self.q_values(self.target_model, next_obs),
                           q_tp1_online if self.config["double_q"] else None,
                           gamma=self.config["gamma"], n_step=n_step)
        return td_error(q_t, actions, targets)

    def update_target(self, tau: Optional[float] = None) -> None:
        """Moves the target model `tau` of the way to the policy's model
        (`target = tau * online + (1 - tau) * target`; default the config's `tau`, 1.0:
        a copy)."""
        tau = float(self.config["tau"] if tau is None else tau)
        for target, source in zip(self.target_model.weights, self.model.weights):
            target.assign(source if tau == 1.0 else tau * source + (1.0 - tau) * target)

    def on_global_var_update(self, global_vars: Dict[str, Any]) -> None:
        """Stores the timestep (epsilon's position) and moves the lr along `lr_schedule`."""
        super().on_global_var_update(global_vars)
        if "timestep" in global_vars:
            self.optimizer.learning_rate = self._lr_schedule.value(int(global_vars["timestep"]))

    # ---------------------------------------------------------------- state

    def get_state(self) -> Dict[str, Any]:
        """TFPolicy's state plus the target model's weights and RLlib's
        `_exploration_state` of its EpsilonGreedy (`cur_epsilon`, `last_timestep`; both
        follow from the global timestep, so `set_state` reads nothing from it)."""
        state = super().get_state()
        state[TARGET_WEIGHTS] = [np.array(v.numpy()) for v in self.target_model.weights]
        state["_exploration_state"] = {"cur_epsilon": self.cur_epsilon,
                                       "last_timestep": self.global_timestep}
        if self.config["noisy"]:
            state[NOISE_KEY] = self.noise_key.numpy()
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result, including the target model's weights (a state
        without them copies the restored weights into the target)."""
        super().set_state(state)
        self.optimizer.learning_rate = self._lr_schedule.value(self.global_timestep)
        if NOISE_KEY in state:
            self.noise_key.assign(np.asarray(state[NOISE_KEY], np.int32))
        target = state.get(TARGET_WEIGHTS)
        if target is None:
            self.update_target(tau=1.0)
            return
        variables = self.target_model.weights
        assign_weights(variables, target, f"set_state(): '{TARGET_WEIGHTS}'")
