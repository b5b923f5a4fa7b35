"""ImpalaTFPolicy: IMPALA's policy, V-trace targets computed inside the compiled train step.

The loss is IMPALA's (Espeholt et al. 2018, section 4.2; `impala_loss`): V-trace value
targets `vs` and policy-gradient advantages `pg_adv` for the batch, then per step

    -log pi(a_t | x_t) * pg_adv_t + vf_loss_coeff * 0.5 * (V(x_t) - vs_t) ** 2
    - entropy_coeff * H[pi(. | x_t)]

averaged over the global batch. The batch arrives as sampled (rows in time order,
fragments of several workers and episodes concatenated); `vtrace_row_targets` lays it
out time-major in the graph, one column per contiguous piece of one episode
(`vtrace.trajectory_starts` on `eps_id`, `terminateds`, `truncateds` and `t`), and
bootstraps each column that does not end terminated from the value of its last
`new_obs` (so no step is dropped; `vtrace_drop_last_ts=True` gives RLlib's legacy
layout instead). Only those rows' `new_obs` go through the model (`next_values(rows)`):
one forward over `T` rows plus one row per bootstrapped column, not `2T` (inside a
column `V(new_obs_t)` is `V(obs_{t+1})`, which the loss already has).

Under a `MirroredStrategy` each replica holds a contiguous share of the rows, which may
cut an episode's column in two. So that the targets equal one device's, each replica
gathers the (gradient-free) inputs of V-trace from all replicas (`all_gather`),
computes the targets of the whole batch and keeps its own rows; the loss terms and their
gradients stay per replica.

Rows stay in time order: `learn_on_batch` never shuffles (minibatches, if
`sgd_minibatch_size` asks for them, are contiguous pieces of the batch).

Recurrent models (`use_lstm`, `use_attention`) learn on the batch cut into sequences
(`OnPolicyTFPolicy.train_batch`: pieces of one episode of at most `max_seq_len` steps,
each with the sampled state before its first step in `state_in_*`, right-padded to one
length). Each sequence is one time-major column (`vtrace.sequence_vtrace`); padded
steps count in no mean (policy, value, entropy, KL). The bootstrap of a sequence that
does not end terminated is `V(new_obs)` of its last real step, computed with the state
the model reached there (one extra model step per sequence), or, with
`vtrace_drop_last_ts`, RLlib's: the last real step's value, that step then masked out.
Sequences never span replicas, so each replica computes its own rows' targets.
"""

from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple, Union

import keras
import tensorflow as tf
import tree

from tfrl.algorithms.a2c.a2c_loss import a2c_loss
from tfrl.algorithms.impala import vtrace as vt
from tfrl.algorithms.impala.impala_config import ImpalaConfig
from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.core.columns import Columns
from tfrl.evaluation.postprocessing import bootstrap_value, compute_advantages
from tfrl.policy.train_columns import autograph_converted


def _all_rows(x: tf.Tensor) -> tf.Tensor:
    """`x` (this replica's rows, `[n, ...]`) of every replica, in replica order, without
    gradient: `[num_replicas * n, ...]`."""
    x = tf.stop_gradient(tf.convert_to_tensor(x))
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return x
    if x.dtype == tf.bool:  # collectives take numbers only
        return tf.cast(context.all_gather(tf.cast(x, tf.int32), axis=0), tf.bool)
    return context.all_gather(x, axis=0)


def _own_rows(x: tf.Tensor, num_rows: tf.Tensor) -> tf.Tensor:
    """This replica's `num_rows` rows of an `_all_rows` result."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return x
    start = tf.cast(context.replica_id_in_sync_group, tf.int32) * num_rows
    return x[start:start + num_rows]


def vtrace_row_targets(train_batch: Dict[str, tf.Tensor], log_rhos: tf.Tensor,
                       values: tf.Tensor,
                       next_values: Union[tf.Tensor, Callable[[tf.Tensor], tf.Tensor]], *,
                       gamma: float,
                       clip_rho_threshold: float, clip_pg_rho_threshold: float,
                       drop_last_ts: bool = False
                       ) -> Tuple[tf.Tensor, tf.Tensor, Optional[tf.Tensor]]:
    """V-trace targets for this replica's rows of a batch in time order.

    Args:
        train_batch: This replica's rows; reads `eps_id`, `terminateds`, `truncateds`,
            `rewards` and `t`.
        log_rhos: `[n]` `log pi(a_t | x_t) - log mu(a_t | x_t)` (the policy V-trace
            evaluates against the behaviour policy).
        values: `[n]` `V(x_t)`.
        next_values: `[n]` `V(x_{t+1})` (of `new_obs`; only the columns' last rows are
            read), or a function of `rows` (`[n]` bool, this replica's rows that end a
            column without terminating) returning `[n]` values, read at `rows` only (so
            that only those rows' `new_obs` go through the model). Ignored with
            `drop_last_ts`.
        gamma: The discount.
        clip_rho_threshold, clip_pg_rho_threshold: V-trace's clips.
        drop_last_ts: RLlib's `vtrace_drop_last_ts` (see `vtrace.drop_last_step`).

    Returns:
        `(vs [n], pg_advantages [n], mask)`: no gradient flows through the targets;
        `mask` `[n]` bool (the rows that count) with `drop_last_ts`, else None.
    """
    num_rows = tf.shape(values)[0]
    terminateds = _all_rows(tf.cast(train_batch[Columns.TERMINATEDS], tf.bool))
    starts = vt.trajectory_starts(
        _all_rows(train_batch[Columns.EPS_ID]), terminateds,
        _all_rows(tf.cast(train_batch[Columns.TRUNCATEDS], tf.bool)),
        _all_rows(train_batch[Columns.T]))
    index = vt.time_major_index(starts)
    values_tm = vt.to_time_major(_all_rows(values), index)  # [T, B]
    discounts = gamma * (1.0 - tf.cast(terminateds, values.dtype))
    mask = index.mask
    if drop_last_ts:
        bootstrap, mask = vt.drop_last_step(values_tm, vt.to_time_major(terminateds, index),
                                            mask)
    else:
        if callable(next_values):
            # Only the rows that end a column without terminating bootstrap: V(new_obs)
            # of those alone (B rows, not n).
            num_all = tf.shape(terminateds)[0]
            ends = tf.scatter_nd(index.last_rows[:, tf.newaxis],
                                 tf.ones_like(index.last_rows), [num_all]) > 0
            next_values = next_values(_own_rows(
                tf.logical_and(ends, tf.logical_not(terminateds)), num_rows))
        bootstrap = vt.column_bootstrap_value(_all_rows(next_values), terminateds, index)
    vs_tm, pg_adv_tm = vt.vtrace(
        vt.to_time_major(_all_rows(log_rhos), index),
        vt.to_time_major(discounts, index),
        vt.to_time_major(_all_rows(tf.cast(train_batch[Columns.REWARDS], values.dtype)), index),
        values_tm, bootstrap, clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold, mask=mask)
    vs = _own_rows(vt.from_time_major(vs_tm, index), num_rows)
    pg_adv = _own_rows(vt.from_time_major(pg_adv_tm, index), num_rows)
    row_mask = _own_rows(vt.from_time_major(mask, index), num_rows) if drop_last_ts else None
    return vs, pg_adv, row_mask


class ImpalaTFPolicy(OnPolicyTFPolicy):
    """IMPALA's policy (config: `ImpalaConfig`'s fields).

    With `vtrace=False` the targets are n-step returns bootstrapped at the end of each
    trajectory piece (postprocessing, `compute_advantages(use_gae=False)`), and the loss
    is A3C's on them.
    """

    config_class: ClassVar[type] = ImpalaConfig

    def __init__(self, observation_space, action_space, config=None, *, strategy=None):
        config = {**self.default_config(), **(config or {})}
        if config.get("_separate_vf_optimizer"):
            raise ValueError(
                f"{type(self).__name__}: _separate_vf_optimizer=True is not supported; one "
                "optimizer trains policy and value. Set _separate_vf_optimizer=False.")
        super().__init__(observation_space, action_space, config, strategy=strategy)

    def loss_reads_next_obs(self) -> bool:
        """V-trace bootstraps from `V(new_obs)` unless `vtrace_drop_last_ts`."""
        return bool(self.config["vtrace"]) and not self.config["vtrace_drop_last_ts"]

    def make_optimizer(self) -> keras.optimizers.Optimizer:
        """Adam (`opt_type="adam"`, with config `optimizer`'s keyword arguments) or
        RMSProp (`opt_type="rmsprop"`: `decay` as rho, `momentum`, `epsilon`)."""
        if self.config["opt_type"] == "rmsprop":
            return keras.optimizers.RMSprop(
                learning_rate=self.config["lr"], rho=self.config["decay"],
                momentum=self.config["momentum"], epsilon=self.config["epsilon"])
        return super().make_optimizer()

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """With V-trace: the batch unchanged (the targets are computed when learning).
        Without: n-step `value_targets` and `advantages` (A3C's)."""
        if self.config["vtrace"]:
            return sample_batch
        return compute_advantages(sample_batch, bootstrap_value(self, sample_batch),
                                  self.config["gamma"], 1.0, use_gae=False, use_critic=True)

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, Any]:
        """`TFPolicy.learn_on_batch` with the rows kept in time order (V-trace reads
        trajectories): `shuffle_sequences` must be None or False."""
        if shuffle_sequences:
            raise ValueError(
                f"{type(self).__name__}.learn_on_batch(): V-trace needs the rows in time "
                "order; received shuffle_sequences=True. Pass None or False.")
        return super().learn_on_batch(samples, num_sgd_iter=num_sgd_iter,
                                      sgd_minibatch_size=sgd_minibatch_size,
                                      shuffle_sequences=False)

    def next_values(self, train_batch: Dict[str, tf.Tensor],
                    rows: Optional[tf.Tensor] = None) -> tf.Tensor:
        """`[n]` `V(new_obs)` under the current parameters (the bootstrap values).

        Args:
            train_batch: This replica's rows.
            rows: `[n]` bool, the rows whose value is needed (the model then runs on
                their `new_obs` only; the other rows get 0); None: every row.
        """
        next_obs = train_batch[Columns.NEXT_OBS]
        if rows is None:
            _, values, _ = self.call_model(next_obs, [], training=True)
            return values
        where = tf.where(rows)  # [b, 1] int64
        picked = tree.map_structure(lambda x: tf.gather_nd(x, where), next_obs)
        _, values, _ = self.call_model(picked, [], training=True)
        return tf.scatter_nd(where, values, tf.shape(rows, out_type=tf.int64))

    def forward_with_state(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                           ) -> Tuple[tf.Tensor, tf.Tensor, List[tf.Tensor]]:
        """`forward`'s `(dist_inputs, values)` plus the model's state after each
        sequence's last real step (`[]` for feed-forward models)."""
        if not self._recurrent or model is not self.model:
            dist_inputs, values = self.forward(model, train_batch)  # (raises for another model)
            return dist_inputs, values, []
        dist_inputs, values, state_out = self.call_model(
            train_batch[Columns.OBS], self.sequence_state_in(train_batch),
            self.sequence_prev(train_batch), seq_lens=train_batch[Columns.SEQ_LENS],
            training=True)
        return dist_inputs, values, state_out

    def sequence_state_in(self, train_batch: Dict[str, tf.Tensor]) -> List[tf.Tensor]:
        """The `state_in_*` columns of a batch of sequences (`[B, ...]` each)."""
        return [train_batch[f"state_in_{i}"] for i in range(len(self._initial_state))]

    def sequence_prev(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The previous-step columns the model consumes (`prev_actions`, ...)."""
        return {column: train_batch[column] for column in self._acting.prev_columns}

    def sequence_targets(self, train_batch: Dict[str, tf.Tensor], log_rhos: tf.Tensor,
                         values: tf.Tensor, state_out: Optional[List[tf.Tensor]]
                         ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """V-trace's `(vs, pg_advantages, mask)`, `[B, T]` each, of a batch of padded
        sequences (`vtrace.sequence_vtrace`, one column per sequence); `state_out`: the
        model's state after each sequence's last real step (for the bootstrap values)."""
        config = self.config
        seq_lens = train_batch[Columns.SEQ_LENS]
        terminateds = tf.cast(train_batch[Columns.TERMINATEDS], tf.bool)  # [B, T]
        discounts = config["gamma"] * (1.0 - tf.cast(terminateds, values.dtype))
        drop = bool(config["vtrace_drop_last_ts"])
        bootstrap = None if drop else self.sequence_bootstrap_value(
            train_batch, state_out or [], terminateds)
        return vt.sequence_vtrace(
            log_rhos, discounts, tf.cast(train_batch[Columns.REWARDS], values.dtype), values,
            seq_lens, bootstrap, terminateds=terminateds, drop_last_ts=drop,
            clip_rho_threshold=config["vtrace_clip_rho_threshold"],
            clip_pg_rho_threshold=config["vtrace_clip_pg_rho_threshold"])

    def sequence_bootstrap_value(self, train_batch: Dict[str, tf.Tensor],
                                 state_out: List[tf.Tensor], terminateds: tf.Tensor
                                 ) -> tf.Tensor:
        """`[B]`: `V(new_obs)` of each sequence's last real step, one model step from
        `state_out` (the state the model reached there), with that step's action and
        reward as the previous ones; 0 where that step terminated."""
        seq_lens = tf.cast(train_batch[Columns.SEQ_LENS], tf.int32)
        last = tf.stack([tf.range(tf.size(seq_lens)), tf.maximum(seq_lens - 1, 0)], axis=1)

        def at_last(x: tf.Tensor) -> tf.Tensor:
            return tf.gather_nd(x, last)

        prev_of = {Columns.PREV_ACTIONS: Columns.ACTIONS, Columns.PREV_REWARDS: Columns.REWARDS}
        prev = {column: tf.cast(at_last(train_batch[prev_of[column]]),
                                train_batch[column].dtype)
                for column in self._acting.prev_columns}
        next_obs = tree.map_structure(at_last, train_batch[Columns.NEXT_OBS])
        _, next_values, _ = self.call_model(
            next_obs, [tf.stop_gradient(s) for s in state_out], prev, training=True)
        ended = tf.cast(at_last(terminateds), next_values.dtype)
        return tf.stop_gradient((1.0 - ended) * next_values)

    def targets(self, train_batch: Dict[str, tf.Tensor], log_rhos: tf.Tensor,
                values: tf.Tensor, state_out: Optional[List[tf.Tensor]] = None
                ) -> Tuple[tf.Tensor, tf.Tensor, Optional[tf.Tensor]]:
        """`(value targets, advantages, mask)` of this replica's rows: V-trace's
        (`vtrace_row_targets`; `sequence_targets` for a recurrent model's sequences,
        `state_out` the model's state after each), or the postprocessed n-step ones
        without V-trace. `mask`: the steps that count (None: all)."""
        config = self.config
        if not config["vtrace"]:
            return (train_batch[Columns.VALUE_TARGETS], train_batch[Columns.ADVANTAGES],
                    self.valid_mask(train_batch))
        drop = bool(config["vtrace_drop_last_ts"])

        if self._recurrent:
            return self.sequence_targets(train_batch, log_rhos, values, state_out)

        def next_values(rows: tf.Tensor) -> tf.Tensor:
            return self.next_values(train_batch, rows)

        return vtrace_row_targets(
            train_batch, log_rhos, values, values if drop else next_values,
            gamma=config["gamma"],
            clip_rho_threshold=config["vtrace_clip_rho_threshold"],
            clip_pg_rho_threshold=config["vtrace_clip_pg_rho_threshold"], drop_last_ts=drop)

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """IMPALA's loss on V-trace targets (see the module docstring) and its stats."""
        dist_inputs, values, state_out = self.forward_with_state(model, train_batch)
        dist = dist_class(dist_inputs, model)
        logp = dist.logp(train_batch[Columns.ACTIONS])  # [n] (sequences: [B, T])
        log_rhos = logp - train_batch[Columns.ACTION_LOGP]
        vs, pg_advantages, mask = self.targets(train_batch, log_rhos, values, state_out)
        # A3C's loss on the V-trace advantages and targets is IMPALA's (impala_loss).
        loss, stats = a2c_loss(logp, pg_advantages, values, vs, dist.entropy(),
                               vf_loss_coeff=self.config["vf_loss_coeff"],
                               entropy_coeff=self.entropy_coeff, mask=mask)
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """IMPALA's loss alone (RLlib's signature)."""
        return ImpalaTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The current learning rate and entropy coefficient."""
        return {"cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "entropy_coeff": tf.identity(self.entropy_coeff)}


VTraceTFPolicy = ImpalaTFPolicy  # RLlib's name
