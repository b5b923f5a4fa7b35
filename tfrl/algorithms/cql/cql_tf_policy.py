"""CQLTFPolicy: SAC's policy (Box actions) with CQL's conservative critic loss.

Networks, optimizers, target critics, the reparameterization noise column and the
temperature are SAC's (`SACTFPolicy`). The learning step differs in three places
(`cql_loss`):

- the critics regress (squared error) toward `y_t = R_t + gamma^k (1 - terminated_t)
  min(Q'_1, Q'_2)(s_{t+k}, a')` with `deterministic_backup` (no entropy term; RLlib's
  CQL), else SAC's soft target, and add the conservative penalty: a logsumexp over
  `num_actions` uniform actions and `num_actions` policy actions at `s_t` and at
  `s_{t+1}` (all evaluated at `s_t`, the policy's actions held constant) minus the
  Q-value of the logged action, weighted by `min_q_weight` (and, with `lagrangian`, by
  a learnt `alpha'`, the model's `log_alpha_prime`, with its own Adam at the critics'
  learning rate);
- the actor clones the logged actions for its first `bc_iters` gradient steps
  (`num_grad_updates` < `bc_iters`, decided inside the compiled call);
- the uniform actions and the policy samples' standard-normal noise are drawn in numpy
  from the policy's seeded generator and travel with the batch (column `cql_noise`,
  `[B, num_actions, 3, A]`), as SAC's `sac_noise`.

File input must hold `obs`, `new_obs`, `actions`, `rewards` and `terminateds`
(`offline_input_columns`; the JSON reader names the file and line of a record without).
Its `actions` are the policy's (as the sampler records them): normalized into [-1, 1]
with `normalize_actions` (the default; uniform actions are drawn there too), in the
env's units without it.
"""

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.cql.cql_config import CQLConfig
from tfrl.algorithms.cql.cql_loss import cql_actor_loss, cql_loss, uniform_log_density
from tfrl.algorithms.policy_checks import check_no_recurrent_model, policy_action_space
from tfrl.algorithms.sac.sac_loss import sac_alpha_loss
from tfrl.algorithms.sac.sac_tf_policy import NOISE, SACTFPolicy, critic_values
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer_rows import N_STEP
from tfrl.policy.optimizers import FusedAdam, MultiOptimizer

__all__ = ["CQL_NOISE", "CQLTFPolicy"]

# The column of the CQL penalty's random numbers: [B, num_actions, 3, A]; [..., 0, :]
# uniform in [0, 1) (the random actions), [..., 1, :] and [..., 2, :] standard normal
# (the policy's actions at s_t and s_{t+1}).
CQL_NOISE = "cql_noise"


class CQLTFPolicy(SACTFPolicy):
    """CQL's policy (config: `CQLConfig`'s fields); see the
    module docstring.

    Raises:
        ValueError: For an action space other than a bounded 1-D Box (discrete CQL is
            `CQLDQNTFPolicy`), and as `SACTFPolicy`.
    """

    config_class = CQLConfig
    action_space_types = (gym.spaces.Box,)
    # Columns a file input must hold for this policy (checked by JsonReader).
    offline_input_columns = (Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
                             Columns.TERMINATEDS)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        check_no_recurrent_model(config or {}, type(self).__name__)
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(
                f"{type(self).__name__} (CQL on SAC) needs a Box action space; received "
                f"{action_space!r}. For Discrete actions use discrete CQL on DQN: "
                "tfrl.algorithms.cql_dqn.CQLDQNTFPolicy (the CQL algorithm builds it for "
                "a Discrete action space).")
        super().__init__(observation_space, action_space, config, strategy=strategy)
        # Random actions are drawn in the policy's space ([-1, 1] with normalize_actions).
        space = policy_action_space(action_space, self.config)
        self.random_log_density = uniform_log_density(space.low, space.high)
        self._low = np.asarray(space.low, np.float32)
        self._high = np.asarray(space.high, np.float32)

    # ------------------------------------------------------------- building

    def make_model(self) -> keras.Model:
        """SAC's model, plus `log_alpha_prime` (0: `alpha' = 1`) with `lagrangian`."""
        model = super().make_model()
        if self.config["lagrangian"]:
            model.log_alpha_prime = model.add_weight(
                shape=(), initializer="zeros", name="log_alpha_prime")
        return model

    def make_optimizer(self) -> Any:
        """SAC's three Adams, plus one for `log_alpha_prime` at the critics' learning
        rate with `lagrangian`."""
        rates = self.config["optimization"]
        model = self.model
        groups = [
            (FusedAdam(rates["actor_learning_rate"]), model.actor.trainable_variables),
            (FusedAdam(rates["critic_learning_rate"]), model.twin_q.trainable_variables),
            (FusedAdam(rates["entropy_learning_rate"]), [model.log_alpha]),
        ]
        if self.config["lagrangian"]:
            groups.append((FusedAdam(rates["critic_learning_rate"]), [model.log_alpha_prime]))
        return MultiOptimizer(groups)

    # ------------------------------------------------------------- learning

    def train_batch(self, samples: Any) -> Any:
        """SAC's batch plus the `cql_noise` column (drawn from the policy's seeded
        generator)."""
        batch = super().train_batch(samples)
        if not isinstance(batch, dict) or CQL_NOISE in batch:
            return batch
        batch = dict(batch)
        rows = len(batch[Columns.REWARDS])
        size = int(np.prod(self.action_space.shape))
        shape = (rows, int(self.config["num_actions"]), 1, size)
        gen = self._np_random
        batch[CQL_NOISE] = np.concatenate([
            gen.random(shape, dtype=np.float32),
            gen.standard_normal((shape[0], shape[1], 2, size), dtype=np.float32)], axis=2)
        return batch

    def _targets(self, actor_next: tf.Tensor, next_obs: Any, rewards: tf.Tensor,
                 terminateds: tf.Tensor, n_step: Any, noise_tp1: Optional[tf.Tensor],
                 alpha: tf.Tensor) -> tf.Tensor:
        """SAC's targets, without the entropy term with `deterministic_backup`."""
        if self.config["deterministic_backup"]:
            alpha = tf.zeros_like(alpha)
        return super()._targets(actor_next, next_obs, rewards, terminateds, n_step,
                                noise_tp1, alpha)

    def _policy_samples(self, model: keras.Model, dist_class: type, dist_inputs: tf.Tensor,
                        normals: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """`num_actions` actions per row `[B * N, A]` and their `log pi` `[B, N]`, both
        held constant (the penalty trains the critics only)."""
        num = int(self.config["num_actions"])
        size = int(np.prod(self.action_space.shape))
        repeated = tf.repeat(dist_inputs, num, axis=0)  # [B * N, 2A]
        actions, logp = dist_class(repeated, model.actor).sample_from_noise(
            tf.reshape(normals, [-1, size]))
        return tf.stop_gradient(actions), tf.stop_gradient(tf.reshape(logp, [-1, num]))

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The critics' CQL loss, the actor's (BC, then SAC) and the temperature's loss
        summed (see the module docstring), and their statistics."""
        obs, next_obs = train_batch[Columns.OBS], train_batch[Columns.NEXT_OBS]
        actions = train_batch[Columns.ACTIONS]
        rewards = train_batch[Columns.REWARDS]
        n_step = train_batch.get(N_STEP)
        n_step = 1 if n_step is None else n_step
        rows = tf.shape(rewards)[0]
        num = int(self.config["num_actions"])
        size = int(np.prod(self.action_space.shape))
        both, _ = model.actor(tf.concat([obs, next_obs], axis=0), training=True)
        actor_t, actor_tp1 = both[:rows], both[rows:]
        log_alpha = model.log_alpha
        alpha = tf.exp(log_alpha)
        noise = train_batch[NOISE]  # [B, 2, A]
        targets = self._targets(actor_tp1, next_obs, rewards,
                                train_batch[Columns.TERMINATEDS], n_step, noise[:, 1], alpha)
        q1_t, q2_t, _ = self._replayed_q(obs, actions)
        # The penalty's actions: uniform, the policy's at s_t and at s_{t+1}; all at s_t.
        cql_noise = train_batch[CQL_NOISE]  # [B, N, 3, A]
        random_actions = self._low + cql_noise[:, :, 0] * (self._high - self._low)
        a_curr, logp_curr = self._policy_samples(model, dist_class, actor_t,
                                                 cql_noise[:, :, 1])
        a_next, logp_next = self._policy_samples(model, dist_class, actor_tp1,
                                                 cql_noise[:, :, 2])
        obs_repeated = tf.repeat(obs, num, axis=0)  # [B * N, ...]
        q1_all, q2_all = critic_values(
            model.twin_q, tf.concat([obs_repeated] * 3, axis=0),
            tf.concat([tf.reshape(random_actions, [-1, size]), a_curr, a_next], axis=0))

        def by_proposal(q):  # [3 B N] -> three [B, N]
            return None if q is None else tuple(tf.reshape(part, [-1, num])
                                                for part in tf.split(q, 3))

        lagrangian = bool(self.config["lagrangian"])
        critic_loss, critic_stats = cql_loss(
            q1_t, q2_t, targets, by_proposal(q1_all), by_proposal(q2_all), logp_curr,
            logp_next, random_log_density=self.random_log_density,
            temperature=float(self.config["temperature"]),
            min_q_weight=float(self.config["min_q_weight"]),
            log_alpha_prime=model.log_alpha_prime if lagrangian else None,
            lagrangian_thresh=float(self.config["lagrangian_thresh"]))
        # The actor: SAC's loss, behaviour cloning for the first bc_iters steps.
        dist_t = dist_class(actor_t, model.actor)
        a_t, logp_t = dist_t.sample_from_noise(noise[:, 0])
        q1_pi, q2_pi = critic_values(model.twin_q, obs, a_t, frozen=True)
        bc_phase = self.num_grad_updates < int(self.config["bc_iters"])
        actor_loss, actor_stats = cql_actor_loss(logp_t, q1_pi, q2_pi, dist_t.logp(actions),
                                                 alpha=alpha, bc_phase=bc_phase)
        alpha_loss, alpha_stats = sac_alpha_loss(log_alpha, logp_t,
                                                 target_entropy=self.target_entropy)
        stats = {**critic_stats, **actor_stats, **alpha_stats}
        stats = {k: tf.cast(v, tf.float32) for k, v in stats.items()}
        return critic_loss + actor_loss + alpha_loss, stats
