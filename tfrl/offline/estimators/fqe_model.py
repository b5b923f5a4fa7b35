"""Fitted Q-evaluation (FQE): Q^pi of a target policy learnt from logged transitions.

Le, Voloshin, Yue, "Batch Policy Learning under Constraints", ICML 2019. A Q network is
regressed onto `r_t + gamma * (1 - terminated_t) * sum_a pi(a | s_{t+1}) Q'(s_{t+1}, a)`
with `Q'` a target copy moved towards `Q` after every pass (`tau`; 1.0 copies). The
direct method and doubly robust estimators (RLlib's `DirectMethod`, `DoublyRobust`)
use it through `estimate_q` / `estimate_v`. Discrete action spaces only (as RLlib's
FQE). All passes of one `train` call run in one compiled call.
"""

from typing import Any, Dict, Optional, Sequence

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.offline.estimators.off_policy_estimator import action_probs


class FQEModel:
    """A Q network of the target policy fitted to logged transitions.

    Args:
        policy: The target policy (Discrete action space).
        gamma: The discount factor.
        hiddens: Sizes of the hidden (ReLU) layers.
        n_iters: Passes over the batch per `train` call.
        lr: Adam's learning rate.
        minibatch_size: Rows per gradient step (None: the whole batch).
        tau: Target network update rate after each pass (1.0: copy).
        seed: Seed of the weights and of the minibatch draws.

    Raises:
        ValueError: If the action space is not Discrete.
    """

    def __init__(self, policy: Any, gamma: float, hiddens: Sequence[int] = (64, 64),
                 n_iters: int = 1, lr: float = 1e-3, minibatch_size: Optional[int] = None,
                 tau: float = 1.0, seed: Optional[int] = None):
        space = policy.action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"FQEModel needs a Discrete action space; received {space}.")
        self.policy, self.gamma = policy, float(gamma)
        self.n_actions = int(space.n)
        self.n_iters, self.minibatch_size, self.tau = int(n_iters), minibatch_size, float(tau)
        obs_dim = int(np.prod(policy.observation_space.shape))
        self.q_model = self._build(obs_dim, hiddens, seed)
        self.target_model = self._build(obs_dim, hiddens, seed)
        self.target_model.set_weights(self.q_model.get_weights())
        self.optimizer = keras.optimizers.Adam(learning_rate=lr)
        self.optimizer.build(self.q_model.trainable_variables)
        self._seed = tf.Variable(0 if seed is None else int(seed), dtype=tf.int64,
                                 trainable=False)
        self._fit = tf.function(self._fit_graph, reduce_retracing=True)

    def _build(self, obs_dim: int, hiddens: Sequence[int], seed: Optional[int]) -> keras.Model:
        init = keras.initializers.GlorotUniform(seed=seed)
        layers = [keras.Input((obs_dim,))]
        layers += [keras.layers.Dense(h, activation="relu", kernel_initializer=init)
                   for h in hiddens]
        layers.append(keras.layers.Dense(self.n_actions, kernel_initializer=init))
        return keras.Sequential(layers)

    def _flat(self, obs: Any) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        return obs.reshape(len(obs), -1)

    def _fit_graph(self, obs: tf.Tensor, actions: tf.Tensor, rewards: tf.Tensor,
                   next_obs: tf.Tensor, not_terminated: tf.Tensor, next_probs: tf.Tensor,
                   minibatch: tf.Tensor, n_iters: tf.Tensor) -> tf.Tensor:
        n = tf.shape(obs)[0]
        num_minibatches = tf.maximum(n // minibatch, 1)
        loss = tf.constant(0.0)
        for it in tf.range(n_iters):
            # [B] targets from the target network, fixed during one pass.
            next_v = tf.reduce_sum(next_probs * self.target_model(next_obs), axis=-1)
            target = rewards + self.gamma * not_terminated * next_v
            perm = tf.random.experimental.stateless_shuffle(
                tf.range(n), seed=tf.stack([self._seed, tf.cast(it, tf.int64)]))
            for m in tf.range(num_minibatches):
                idx = perm[m * minibatch:(m + 1) * minibatch]
                with tf.GradientTape() as tape:
                    q = self.q_model(tf.gather(obs, idx))  # [b, n_actions]
                    q_a = tf.gather(q, tf.gather(actions, idx), batch_dims=1)  # [b]
                    loss = tf.reduce_mean(tf.square(tf.gather(target, idx) - q_a))
                grads = tape.gradient(loss, self.q_model.trainable_variables)
                grads, _ = tf.clip_by_global_norm(grads, 100.0)
                self.optimizer.apply_gradients(zip(grads, self.q_model.trainable_variables))
            for w, tw in zip(self.q_model.weights, self.target_model.weights):
                tw.assign(self.tau * w + (1.0 - self.tau) * tw)
        self._seed.assign_add(1)
        return loss

    def train(self, batch: SampleBatch, n_iters: Optional[int] = None) -> Dict[str, float]:
        """Runs `n_iters` (default: the constructor's) passes over `batch`; returns
        `{"loss": the last minibatch's squared TD error}`.

        Raises:
            ValueError: If `batch` lacks `new_obs` (or `terminateds`/`dones`).
        """
        done_key = Columns.TERMINATEDS if Columns.TERMINATEDS in batch else Columns.DONES
        missing = [c for c in (Columns.OBS, Columns.ACTIONS, Columns.REWARDS, Columns.NEXT_OBS,
                               done_key) if c not in batch]
        if missing:
            raise ValueError(f"FQEModel.train needs the columns {missing}; the batch has "
                             f"{sorted(batch.keys())}.")
        next_obs = batch[Columns.NEXT_OBS]
        minibatch = self.minibatch_size or len(batch)
        loss = self._fit(
            tf.constant(self._flat(batch[Columns.OBS])),
            tf.constant(np.asarray(batch[Columns.ACTIONS]).astype(np.int32)),
            tf.constant(np.asarray(batch[Columns.REWARDS], np.float32)),
            tf.constant(self._flat(next_obs)),
            tf.constant(1.0 - np.asarray(batch[done_key], np.float32)),
            tf.constant(action_probs(self.policy, next_obs).astype(np.float32)),
            tf.constant(int(minibatch)), tf.constant(int(n_iters or self.n_iters)))
        return {"loss": float(loss)}

    def estimate_q(self, obs: Any, actions: Any) -> np.ndarray:
        """`Q(s_t, a_t)`, `[B]`."""
        q = self.q_model(self._flat(obs)).numpy()
        return q[np.arange(len(q)), np.asarray(actions).astype(np.int64)]

    def estimate_v(self, obs: Any) -> np.ndarray:
        """`V(s_t) = sum_a pi(a | s_t) Q(s_t, a)`, `[B]`."""
        q = self.q_model(self._flat(obs)).numpy()
        return np.sum(action_probs(self.policy, obs) * q, axis=-1)
