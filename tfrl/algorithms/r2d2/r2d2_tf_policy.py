"""R2D2TFPolicy: DQN's policy learning on replayed sequences of a recurrent Q network.

The Q network is DQN's (the catalog model with `hiddens` appended, dueling heads), here
usually wrapped in the catalog's LSTM (`model["use_lstm"]`); acting is DQN's epsilon-greedy
`compute_actions`, carrying the recurrent state as every tfrl policy does.

Learning (`r2d2_loss.r2d2_loss`): a train batch of rows is cut into sequences of
`replay_sequence_length` steps (`train_batch`; the replay buffer hands over sequences
already), each starting from a zero state with `zero_init_states` or else from the state
stored with its first step. The online and the target network unroll over each
sequence with the last real step's `new_obs` appended (`T + 1` states), so that every
real step has a state to bootstrap its n-step double-Q target from; the loss skips the
first `replay_burn_in` steps and the padding.

With a feed-forward model R2D2 learns on single transitions: each row is a sequence of
one step whose bootstrap state is its `new_obs` (DQN with value rescaling; `n_step` must
then be 1).
"""

from typing import Any, Dict, List, Tuple

import keras
import numpy as np
import tensorflow as tf
import tree

from tfrl.algorithms.dqn.dqn_loss import dueling_q_values
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.r2d2.r2d2_config import (R2D2Config, replay_burn_in,
                                              replay_sequence_length)
from tfrl.algorithms.r2d2.r2d2_loss import r2d2_loss
from tfrl.algorithms.sequencing import add_sequences
from tfrl.core.columns import Columns
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.models.tf.recurrent_net import sequences_at_most
from tfrl.policy import space_specs


class R2D2TFPolicy(DQNTFPolicy):
    """R2D2 policy (config: `R2D2Config`'s fields); see the module docstring.

    Raises:
        ValueError: For an action space that is not `Discrete`, or `n_step > 1` with a
            feed-forward model.
    """

    config_class = R2D2Config
    supports_recurrent_models = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if not self.is_recurrent() and self.config["n_step"] != 1:
            raise ValueError(
                f"{type(self).__name__}: with a feed-forward model R2D2 learns on single "
                f"transitions, so n_step must be 1; received n_step="
                f"{self.config['n_step']}. Set model['use_lstm']=True to learn on "
                "sequences with n-step targets, or n_step=1.")

    def q_model_config(self) -> Dict[str, Any]:
        """DQN's Q-network config; an LSTM unrolls `replay_sequence_length + 1` steps
        in the loss (the sequence and its appended bootstrap state), so it is built to
        unroll that many (the catalog's LSTM unrolls `max_seq_len` steps)."""
        model_config = super().q_model_config()
        if model_config.get("use_lstm"):
            model_config["max_seq_len"] = replay_sequence_length(self.config) + 1
        return model_config

    def make_target_model(self) -> keras.Model:
        """The target network (`make_model()`'s architecture), built on one step of one
        sequence for a recurrent model."""
        if not self.is_recurrent():
            return super().make_target_model()
        model = self.make_model()
        obs = space_specs.zeros_batch(self.observation_space, 1)
        model((tree.map_structure(lambda o: o[:, None], obs),
               [s[None] for s in self.get_initial_state()], np.ones(1, np.int32)))
        return model

    # ------------------------------------------------------------- learning

    def train_batch(self, samples: Any) -> Any:
        """A recurrent policy's train batch: rows cut into sequences of
        `replay_sequence_length` (`add_sequences`; a batch with `seq_lens` stays as it
        is), with zero `state_in_*` under `zero_init_states`. Feed-forward: unchanged."""
        if not self.is_recurrent() or not isinstance(samples, dict):
            return samples
        length = replay_sequence_length(self.config)
        if Columns.SEQ_LENS not in samples:
            samples = add_sequences(samples, length)
        longest = int(np.max(samples[Columns.SEQ_LENS], initial=0))
        if longest > length:
            raise ValueError(
                f"{type(self).__name__}.learn_on_batch(): received a sequence of {longest} "
                f"steps; R2D2 learns on sequences of at most replay_sequence_length = "
                f"model['max_seq_len'] + replay_burn_in = {length}. Pass rows (they are cut "
                "into sequences) or shorter sequences.")
        if self.config["zero_init_states"]:
            samples = samples.copy() if hasattr(samples, "copy") else dict(samples)
            num_seqs = len(samples[Columns.SEQ_LENS])
            for i, state in enumerate(self.get_initial_state()):
                samples[f"state_in_{i}"] = np.zeros((num_seqs,) + state.shape, state.dtype)
        return samples

    def sequence_q_values(self, model: keras.Model, obs: Any, state_in: List[tf.Tensor],
                          seq_lens: tf.Tensor, training: bool = False) -> tf.Tensor:
        """`Q(s, .)` `[B, T, num_actions]` of a recurrent `model` (the policy's or the
        target) unrolled over padded sequences `obs` `[B, T, ...]` from `state_in`."""
        outputs, value, _ = model((obs, list(state_in), seq_lens), training=training)
        if not self.config["dueling"]:
            return outputs
        shape = tf.shape(outputs)  # [B, T, A]
        q = dueling_q_values(tf.reshape(value, [-1]),
                             tf.reshape(outputs, [-1, outputs.shape[-1]]))
        return tf.reshape(q, shape)

    def extended_q_values(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                      ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The online and target Q-values `[B, T + 1, num_actions]` of each sequence's
        states with its last real step's `new_obs` appended (feed-forward: `T = 1`, the
        row's `obs` and `new_obs`)."""
        obs, next_obs = train_batch[Columns.OBS], train_batch[Columns.NEXT_OBS]
        if not self.is_recurrent():
            both = tree.map_structure(lambda o, n: tf.concat([o, n], 0), obs, next_obs)
            rows = tf.shape(train_batch[Columns.REWARDS])[0]
            q_online = self.q_values(model, both, training=True)  # [2N, A]
            q_target = self.q_values(self.target_model, both)
            return (tf.stack([q_online[:rows], q_online[rows:]], axis=1),
                    tf.stack([q_target[:rows], q_target[rows:]], axis=1))
        seq_lens = train_batch[Columns.SEQ_LENS]  # [B]
        last = tf.maximum(seq_lens - 1, 0)
        at_end = tf.one_hot(seq_lens, tf.shape(train_batch[Columns.REWARDS])[1] + 1,
                            on_value=True, off_value=False)  # [B, T + 1]

        def extend(o, n):  # [B, T, ...] -> [B, T + 1, ...], new_obs[L - 1] at L
            final = tf.gather(n, last, axis=1, batch_dims=1)  # [B, ...]
            padded = tf.concat([o, tf.zeros_like(o[:, :1])], axis=1)
            mask = tf.reshape(at_end, tf.concat([tf.shape(at_end),
                                                 tf.ones([o.shape.rank - 2], tf.int32)], 0))
            return tf.where(mask, tf.expand_dims(final, 1), padded)

        obs_ext = tree.map_structure(extend, obs, next_obs)
        state_in = [train_batch[f"state_in_{i}"] for i in range(self.num_state_tensors())]
        # Sequences of at most replay_sequence_length steps (`train_batch`), plus one.
        with sequences_at_most(replay_sequence_length(self.config) + 1):
            q_online = self.sequence_q_values(model, obs_ext, state_in, seq_lens + 1,
                                              training=True)
            q_target = self.sequence_q_values(self.target_model, obs_ext, state_in,
                                              seq_lens + 1)
        return q_online, q_target

    @tf.autograph.experimental.do_not_convert
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`r2d2_loss` on the online and target Q-values of the minibatch's sequences."""
        config = self.config
        q_online, q_target = self.extended_q_values(model, train_batch)
        columns = {key: train_batch[key] for key in (
            Columns.ACTIONS, Columns.REWARDS, Columns.TERMINATEDS)}
        weights = train_batch.get(WEIGHTS)
        if self.is_recurrent():
            seq_lens = train_batch[Columns.SEQ_LENS]
        else:  # rows: sequences of one step
            columns = {key: value[:, None] for key, value in columns.items()}
            seq_lens = tf.ones_like(columns[Columns.REWARDS][:, 0], tf.int32)
            weights = None if weights is None else weights[:, None]
        loss, stats = r2d2_loss(
            q_online, q_target, columns[Columns.ACTIONS], columns[Columns.REWARDS],
            columns[Columns.TERMINATEDS], seq_lens, weights, gamma=config["gamma"],
            n_step=config["n_step"],
            burn_in=replay_burn_in(config) if self.is_recurrent() else 0,
            h_epsilon=config["h_function_epsilon"] if config["use_h_function"] else None,
            double_q=config["double_q"],
            huber_delta=1.0 if config["td_error_loss_fn"] == "huber" else None)
        stats["cur_lr"] = tf.cast(self.optimizer.learning_rate, tf.float32)
        return loss, stats

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """R2D2's loss alone (RLlib's signature)."""
        return R2D2TFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    def td_errors(self, batch: Any) -> np.ndarray:
        """Not implemented: R2D2 replays uniformly (prioritized replay of sequences is
        not implemented)."""
        raise NotImplementedError(
            f"{type(self).__name__}.td_errors(): prioritized replay of sequences is not "
            "implemented; R2D2 replays uniformly.")
