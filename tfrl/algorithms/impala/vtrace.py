"""V-trace off-policy value targets as a pure function of time-major tensors.

Espeholt et al., "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures", ICML 2018, https://arxiv.org/abs/1802.01561, section 4.
For a trajectory `x_s .. x_{s+n}` sampled by a behaviour policy `mu`, with the target
policy `pi`, `rho_t = pi(a_t | x_t) / mu(a_t | x_t)` and the truncated ratios
`rho~_t = min(rho_bar, rho_t)`, `c_t = min(c_bar, rho_t)`:

    delta_t     = rho~_t * (r_t + gamma_t * V(x_{t+1}) - V(x_t))
    vs_t - V(x_t) = delta_t + gamma_t * c_t * (vs_{t+1} - V(x_{t+1}))       (paper, remark 1)
    pg_adv_t    = min(pg_rho_bar, rho_t) * (r_t + gamma_t * vs_{t+1} - V(x_t))

with `vs_{T} = V(x_T) = bootstrap_value` past the last step. The recursion runs
backwards in time in one `tf.scan` (no Python loop over T). `vs` and `pg_adv` are
targets: no gradient flows through them (`tf.stop_gradient`, as in the paper).

Episode ends and truncation, per step `t` of a column (`gamma_t` is `discounts[t]`):

- terminated at `t` (a real end of the episode): `discounts[t] = 0`. Nothing is
  bootstrapped across it, so a terminated step may sit in the middle of a column.
- truncated at `t` (a time limit, or the fragment cut by the sampler): the return goes
  on past `t`, so `discounts[t] = gamma`, and the value of the next state `x_{t+1}` is
  the `bootstrap_value` of the column. A truncated step must therefore be the last
  (real) step of its column: `time_major_index(trajectory_starts(...))` starts a new
  column after every episode end, so this holds for batches it lays out.
- padded steps (columns shorter than `T`): `mask[t, b]` False, at the end of the column
  only. The last real step bootstraps from `bootstrap_value[b]`; padded steps get
  `vs = V`, `pg_adv = 0`, whatever their inputs.

The helpers below lay tfrl's batch-major rows (`[N]`, rollout fragments concatenated,
several episodes per fragment) out time-major (`[T, B]`, one column per contiguous piece
of one episode) and back, inside the compiled train step:

    starts = trajectory_starts(eps_id, terminateds, truncateds)
    index = time_major_index(starts)
    values_tm = to_time_major(values, index)           # [T, B], padded with zeros
    bootstrap = column_bootstrap_value(next_values, terminateds, index)
    vs, pg_adv = vtrace(to_time_major(logp - behaviour_logp, index), ..., values_tm,
                        bootstrap, mask=index.mask)
    vs_rows = from_time_major(vs, index)               # [N], the rows' order

RLlib's layout (every `rollout_fragment_length` rows one column, bootstrapping from
the last row's value with `vtrace_drop_last_ts`) is `time_major_index(fixed_starts(N,
T))` with `drop_last_step(...)`; a recurrent policy's padded sequences (`seq_lens`)
are laid out by `padded_sequences_index`, and `sequence_vtrace` takes them as the loss
sees them (`[B, T]`, one padded sequence per row, transposed to one column each).

RLlib's own entry points are here too, on its time-major arrays: `from_importance_weights`
(inputs `[T, B, ...]` that broadcast, e.g. `log_rhos` `[T, B, 1]` against `values`
`[T, B, 42]`), `from_logits` and `log_probs_from_logits_and_actions`.
"""

from typing import Any, NamedTuple, Optional, Sequence, Union

import tensorflow as tf

from tfrl.models.tf.tf_action_dist import Categorical

Threshold = Optional[Union[float, tf.Tensor]]

__all__ = ["VTraceReturns", "VTraceFromLogitsReturns", "TimeMajorIndex", "vtrace",
           "from_importance_weights", "from_logits", "log_probs_from_logits_and_actions",
           "multi_log_probs_from_logits_and_actions", "check_time_major",
           "trajectory_starts", "fixed_starts", "time_major_index",
           "padded_sequences_index", "sequence_vtrace", "to_time_major",
           "from_time_major", "column_bootstrap_value", "drop_last_step"]


class VTraceReturns(NamedTuple):
    """`vs` (value targets) and `pg_advantages`, both `[T, B]`, without gradient."""

    vs: tf.Tensor
    pg_advantages: tf.Tensor


def check_time_major(fn_name: str, tensors: dict, bootstrap_value: tf.Tensor,
                     mask: Optional[tf.Tensor]) -> list:
    """`tensors`' values, `bootstrap_value` and `mask` as tensors, in order, after
    checking that the tensors are floats `[T, B]` of one dtype and shape,
    `bootstrap_value` `[B]` of that dtype and `mask` (None or) bool `[T, B]`. Static
    shapes only (free inside a compiled function).

    Raises:
        TypeError: For a non-float tensor.
        ValueError: For a rank other than 2, shapes or dtypes that disagree, a bad
            `bootstrap_value` or mask.
    """
    out = []
    first_name, first = None, None
    for name, value in tensors.items():
        value = tf.convert_to_tensor(value)
        if not value.dtype.is_floating:
            raise TypeError(f"{fn_name}(): {name} must be a float tensor; received dtype "
                            f"{value.dtype.name}.")
        if value.shape.rank != 2:
            raise ValueError(f"{fn_name}(): {name} must be time-major with rank 2 ([T, B]); "
                             f"received shape {value.shape}.")
        if first is None:
            first_name, first = name, value
        elif value.dtype != first.dtype or not value.shape.is_compatible_with(first.shape):
            raise ValueError(
                f"{fn_name}(): {name} and {first_name} must have one dtype and shape; "
                f"received {name}: {value.dtype.name} {value.shape}, {first_name}: "
                f"{first.dtype.name} {first.shape}.")
        out.append(value)
    if first is None:  # internal: the callers pass at least one tensor
        raise RuntimeError(f"{fn_name}(): no tensors to check.")
    bootstrap_value = tf.convert_to_tensor(bootstrap_value)
    if bootstrap_value.dtype != first.dtype or bootstrap_value.shape.rank != 1 or \
            not bootstrap_value.shape.is_compatible_with(first.shape[1:]):
        raise ValueError(
            f"{fn_name}(): bootstrap_value must be [B] of {first_name}'s dtype; received "
            f"{bootstrap_value.dtype.name} {bootstrap_value.shape}, {first_name}: "
            f"{first.dtype.name} {first.shape}.")
    if mask is not None:
        mask = tf.convert_to_tensor(mask)
        if mask.dtype != tf.bool or not mask.shape.is_compatible_with(first.shape):
            raise ValueError(
                f"{fn_name}(): mask must be a bool tensor of {first_name}'s shape (True at "
                f"real steps); received {mask.dtype.name} {mask.shape}, {first_name}: "
                f"{first.shape}.")
    return out + [bootstrap_value, mask]


def _clip(rhos: tf.Tensor, threshold: Threshold) -> tf.Tensor:
    return rhos if threshold is None else tf.minimum(tf.cast(threshold, rhos.dtype), rhos)


def vtrace(
    log_rhos: tf.Tensor,
    discounts: tf.Tensor,
    rewards: tf.Tensor,
    values: tf.Tensor,
    bootstrap_value: tf.Tensor,
    *,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
    clip_c_threshold: Threshold = 1.0,
    mask: Optional[tf.Tensor] = None,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages (see the module docstring).

    Args:
        log_rhos: `log pi(a_t | x_t) - log mu(a_t | x_t)`, target minus behaviour
            log-probabilities of the taken actions, `[T, B]` (time-major).
        discounts: `gamma * (1 - terminated_t)`, `[T, B]`: `gamma` at truncated steps.
        rewards: `r_t`, `[T, B]`.
        values: `V(x_t)` of the value function being trained, `[T, B]`.
        bootstrap_value: `V(x_T)` for each column, `[B]`: the value of the state after
            the column's last real step (0 if that step terminated; `discounts` is 0
            there anyway).
        clip_rho_threshold: `rho_bar`, the clip of the ratios in the TD errors (None:
            no clipping).
        clip_pg_rho_threshold: The clip of the ratios of `pg_advantages` (None: none).
        clip_c_threshold: `c_bar`, the clip of the trace coefficients (None: none).
        mask: `[T, B]` bool, True at real steps, padding only at the end of a column;
            None: every step is real.

    Returns:
        `VTraceReturns(vs, pg_advantages)`, both `[T, B]` with `tf.stop_gradient`.

    Raises:
        TypeError: For a non-float tensor.
        ValueError: For tensors not `[T, B]`, shapes or dtypes that disagree, a
            `bootstrap_value` not `[B]`, or a mask not bool `[T, B]`.
    """
    log_rhos, discounts, rewards, values, bootstrap_value, mask = check_time_major(
        "vtrace", {"log_rhos": log_rhos, "discounts": discounts, "rewards": rewards,
                   "values": values}, bootstrap_value, mask)
    rhos = tf.exp(log_rhos)
    clipped_rhos = _clip(rhos, clip_rho_threshold)
    cs = _clip(rhos, clip_c_threshold)
    bootstrap_row = bootstrap_value[tf.newaxis]
    if mask is None:
        mask = tf.ones_like(values, tf.bool)
    # Step t+1 is real: V(x_{t+1}) is values[t+1]; else t is its column's last step (or
    # padding). tf.where, not a product: padding may hold anything, even inf or NaN.
    next_real = tf.concat([mask[1:], tf.zeros_like(mask[:1])], axis=0)
    bootstrap_tm = tf.broadcast_to(bootstrap_row, tf.shape(values))

    def shifted(x: tf.Tensor) -> tf.Tensor:
        return tf.where(next_real, tf.concat([x[1:], bootstrap_row], axis=0), bootstrap_tm)

    zeros = tf.zeros_like(values)
    deltas = tf.where(mask, clipped_rhos * (rewards + discounts * shifted(values) - values),
                      zeros)
    continues = tf.where(next_real, discounts * cs, zeros)

    def backwards(acc: tf.Tensor, step: tuple) -> tf.Tensor:
        delta_t, continue_t = step
        return delta_t + continue_t * acc

    # vs_t - V(x_t), from the last step back to the first.
    corrections = tf.scan(backwards, (deltas, continues),
                          initializer=tf.zeros_like(bootstrap_value), reverse=True)
    vs = tf.where(mask, values + corrections, values)
    pg_advantages = tf.where(mask, _clip(rhos, clip_pg_rho_threshold) * (
        rewards + discounts * shifted(vs) - values), zeros)
    return VTraceReturns(tf.stop_gradient(vs), tf.stop_gradient(pg_advantages))


# ------------------------------------------------------------- RLlib's entry points

class VTraceFromLogitsReturns(NamedTuple):
    """`from_logits`' result: the V-trace targets plus the log-probabilities it used."""

    vs: tf.Tensor
    pg_advantages: tf.Tensor
    log_rhos: tf.Tensor
    behaviour_action_log_probs: tf.Tensor
    target_action_log_probs: tf.Tensor


def _check_rank(name: str, value: tf.Tensor, rank: int) -> None:
    if value.shape.rank is not None and value.shape.rank != rank:
        raise ValueError(
            f"from_importance_weights(): {name} must have rank {rank} (log_rhos is "
            f"[T, B, ...]{', bootstrap_value [B, ...]' if name == 'bootstrap_value' else ''}); "
            f"received shape {value.shape}.")


def from_importance_weights(
    log_rhos: Any,
    discounts: Any,
    rewards: Any,
    values: Any,
    bootstrap_value: Any,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
) -> VTraceReturns:
    """RLlib's `vtrace_tf.from_importance_weights`: `vtrace` on time-major inputs of any
    rank >= 2 that broadcast against each other.

    Args:
        log_rhos: `[T, B, ...]` log importance ratios (target minus behaviour).
        discounts: `[T, B, ...]` per-step discounts (0 at terminations).
        rewards: `[T, B, ...]` rewards.
        values: `[T, B, ...]` value estimates `V(x_t)`.
        bootstrap_value: `[B, ...]`, `V(x_T)` after the last step.
        clip_rho_threshold: `rho_bar` (None: no clipping).
        clip_pg_rho_threshold: The clip of the policy-gradient ratios (None: none).

    Returns:
        `VTraceReturns(vs, pg_advantages)`, float32 of the broadcast shape `[T, B, ...]`,
        without gradient. The trace coefficients `c_t` are clipped at 1.

    Raises:
        ValueError: If `values`, `rewards` or `discounts` do not have `log_rhos`' rank, or
            `bootstrap_value` not one less.
    """
    log_rhos, discounts, rewards, values, bootstrap_value = [
        tf.cast(tf.convert_to_tensor(x), tf.float32)
        for x in (log_rhos, discounts, rewards, values, bootstrap_value)]
    rank = log_rhos.shape.rank
    if rank is None or rank < 2:
        raise ValueError(f"from_importance_weights(): log_rhos must be time-major [T, B, ...] "
                         f"(rank >= 2); received shape {log_rhos.shape}.")
    for name, value in (("values", values), ("discounts", discounts), ("rewards", rewards)):
        _check_rank(name, value, rank)
    _check_rank("bootstrap_value", bootstrap_value, rank - 1)
    shape = tf.shape(log_rhos)
    for x in (discounts, rewards, values):
        shape = tf.broadcast_dynamic_shape(shape, tf.shape(x))
    shape = tf.concat([shape[:1], tf.broadcast_dynamic_shape(shape[1:],
                                                             tf.shape(bootstrap_value))], 0)
    flat_log_rhos, flat_discounts, flat_rewards, flat_values = [
        tf.reshape(tf.broadcast_to(x, shape), [shape[0], -1])  # [T, B * ...]
        for x in (log_rhos, discounts, rewards, values)]
    out = vtrace(flat_log_rhos, flat_discounts, flat_rewards, flat_values,
                 tf.reshape(tf.broadcast_to(bootstrap_value, shape[1:]), [-1]),
                 clip_rho_threshold=clip_rho_threshold,
                 clip_pg_rho_threshold=clip_pg_rho_threshold, clip_c_threshold=1.0)
    return VTraceReturns(tf.reshape(out.vs, shape), tf.reshape(out.pg_advantages, shape))


def multi_log_probs_from_logits_and_actions(
    policy_logits: Sequence[Any], actions: Sequence[Any], dist_class: Any = Categorical,
    model: Any = None,
) -> list:
    """Per action component, `log pi(a_t | x_t)` `[T, B]` from time-major logits
    `[T, B, n_i]` and actions `[T, B, ...]` (the distribution of `dist_class`)."""
    out = []
    for logits, action in zip(policy_logits, actions):
        logits = tf.convert_to_tensor(logits)
        action = tf.convert_to_tensor(action)
        lead = tf.shape(logits)[:2]  # [T, B]
        flat_logits = tf.reshape(logits, tf.concat([[-1], tf.shape(logits)[2:]], 0))
        flat_action = tf.reshape(action, tf.concat([[-1], tf.shape(action)[2:]], 0))
        out.append(tf.reshape(dist_class(flat_logits, model).logp(flat_action), lead))
    return out


def log_probs_from_logits_and_actions(policy_logits: Any, actions: Any,
                                      dist_class: Any = Categorical,
                                      model: Any = None) -> tf.Tensor:
    """`log pi(a_t | x_t)`, `[T, B]`, from time-major logits `[T, B, n]` and actions
    `[T, B]` (RLlib's `vtrace_tf.log_probs_from_logits_and_actions`)."""
    return multi_log_probs_from_logits_and_actions([policy_logits], [actions], dist_class,
                                                   model)[0]


def from_logits(
    behaviour_policy_logits: Any,
    target_policy_logits: Any,
    actions: Any,
    discounts: Any,
    rewards: Any,
    values: Any,
    bootstrap_value: Any,
    dist_class: Any = Categorical,
    model: Any = None,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
) -> VTraceFromLogitsReturns:
    """V-trace from the behaviour and target policies' logits (RLlib's
    `vtrace_tf.from_logits`).

    Args:
        behaviour_policy_logits: `[T, B, n]` logits of the policy that acted, or a list
            of them (one per action component; then `actions` is a list too).
        target_policy_logits: `[T, B, n]` (or a list) of the policy being learned.
        actions: `[T, B]` actions taken (or a list).
        discounts, rewards, values, bootstrap_value: As in `from_importance_weights`.
        dist_class: The action distribution of the logits (default Categorical).
        model: Passed to `dist_class`.
        clip_rho_threshold, clip_pg_rho_threshold: As in `from_importance_weights`.

    Returns:
        `VTraceFromLogitsReturns`; with lists, the log-probabilities are summed over the
        components.
    """
    many = isinstance(behaviour_policy_logits, (list, tuple))
    if not many:
        behaviour_policy_logits, target_policy_logits, actions = (
            [behaviour_policy_logits], [target_policy_logits], [actions])
    behaviour = tf.add_n(multi_log_probs_from_logits_and_actions(
        behaviour_policy_logits, actions, dist_class, model))
    target = tf.add_n(multi_log_probs_from_logits_and_actions(
        target_policy_logits, actions, dist_class, model))
    log_rhos = target - behaviour
    out = from_importance_weights(log_rhos, discounts, rewards, values, bootstrap_value,
                                  clip_rho_threshold, clip_pg_rho_threshold)
    return VTraceFromLogitsReturns(out.vs, out.pg_advantages, log_rhos, behaviour, target)


# ----------------------------------------------------------- batch-major <-> time-major

class TimeMajorIndex(NamedTuple):
    """Where each of `N` batch-major rows sits in a `[T, B]` time-major layout.

    Attributes:
        positions: `[N, 2]` int32, `(t, column)` of each row.
        mask: `[T, B]` bool, True at the positions of rows (False: padding).
        last_rows: `[B]` int32, the row index of each column's last step.
    """

    positions: tf.Tensor
    mask: tf.Tensor
    last_rows: tf.Tensor


def trajectory_starts(eps_id: tf.Tensor, terminateds: tf.Tensor, truncateds: tf.Tensor,
                      t: Optional[tf.Tensor] = None) -> tf.Tensor:
    """`[N]` bool: True where a row begins a new column: the first row, a row whose
    episode id differs from the previous row's, a row after a terminated or truncated
    one, and (with `t`) a row whose timestep does not follow the previous row's. The
    rows of a trajectory piece must be consecutive and in time order, as the sampler
    concatenates them: V-trace needs batches whose rows were not shuffled.

    Args:
        eps_id: `[N]` episode ids (`SampleBatch.EPS_ID`), any dtype with `!=`.
        terminateds, truncateds: `[N]` bool or 0/1 (`SampleBatch.TERMINATEDS`,
            `SampleBatch.TRUNCATEDS`).
        t: `[N]` int timesteps in the episode (`SampleBatch.T`), or None. With `t`,
            two pieces of one episode that are not contiguous in time (e.g. a replayed
            fragment after a newer one) get separate columns.
    """
    eps_id = tf.convert_to_tensor(eps_id)
    ended = tf.logical_or(tf.cast(terminateds, tf.bool), tf.cast(truncateds, tf.bool))
    new = tf.logical_or(tf.not_equal(eps_id[1:], eps_id[:-1]), ended[:-1])
    if t is not None:
        t = tf.convert_to_tensor(t)
        new = tf.logical_or(new, tf.not_equal(t[1:], t[:-1] + 1))
    return tf.concat([tf.ones_like(ended[:1]), new], axis=0)


def fixed_starts(num_rows: Union[int, tf.Tensor], num_steps: int) -> tf.Tensor:
    """`[num_rows]` bool, True every `num_steps` rows: RLlib's layout, one column per
    `rollout_fragment_length` rows whatever the episodes in them."""
    return tf.equal(tf.range(num_rows) % num_steps, 0)


def time_major_index(starts: tf.Tensor) -> TimeMajorIndex:
    """The time-major layout with a column beginning at each True of `starts`.

    Args:
        starts: `[N]` bool, N >= 1 (row 0 always begins a column).
    """
    starts = tf.convert_to_tensor(starts, tf.bool)
    starts = tf.concat([tf.ones_like(starts[:1]), starts[1:]], axis=0)
    rows = tf.range(tf.size(starts, out_type=tf.int32))
    column = tf.cumsum(tf.cast(starts, tf.int32)) - 1
    first_rows = tf.boolean_mask(rows, starts)  # [B]
    t = rows - tf.gather(first_rows, column)
    lengths = tf.math.bincount(column, minlength=tf.size(first_rows), dtype=tf.int32)
    mask = tf.transpose(tf.sequence_mask(lengths, tf.reduce_max(lengths)))
    return TimeMajorIndex(tf.stack([t, column], axis=1), mask, first_rows + lengths - 1)


def padded_sequences_index(seq_lens: tf.Tensor, max_seq_len: Union[int, tf.Tensor]
                           ) -> TimeMajorIndex:
    """The time-major layout of a recurrent policy's padded rows: `B * max_seq_len`
    rows, sequence `b` in rows `b * max_seq_len ...`, its first `seq_lens[b]` real.
    Every row (padding too) gets a position; `mask` marks the real ones.

    Args:
        seq_lens: `[B]` int, the real steps of each sequence (`SampleBatch.SEQ_LENS`),
            each >= 1.
        max_seq_len: The padded length.
    """
    seq_lens = tf.cast(seq_lens, tf.int32)
    max_seq_len = tf.cast(max_seq_len, tf.int32)
    num_seqs = tf.size(seq_lens)
    rows = tf.range(num_seqs * max_seq_len)
    positions = tf.stack([rows % max_seq_len, rows // max_seq_len], axis=1)
    mask = tf.transpose(tf.sequence_mask(seq_lens, max_seq_len))
    return TimeMajorIndex(positions, mask, tf.range(num_seqs) * max_seq_len + seq_lens - 1)


def to_time_major(rows: tf.Tensor, index: TimeMajorIndex) -> tf.Tensor:
    """`rows` (`[N, ...]`) laid out `[T, B, ...]`; padding holds zeros."""
    rows = tf.convert_to_tensor(rows)
    shape = tf.concat([tf.shape(index.mask, out_type=tf.int32),
                       tf.shape(rows, out_type=tf.int32)[1:]], axis=0)
    return tf.scatter_nd(index.positions, rows, shape)


def from_time_major(time_major: tf.Tensor, index: TimeMajorIndex) -> tf.Tensor:
    """`[T, B, ...]` back to the rows' order, `[N, ...]` (padding dropped)."""
    return tf.gather_nd(time_major, index.positions)


def column_bootstrap_value(next_values: tf.Tensor, terminateds: tf.Tensor,
                           index: TimeMajorIndex) -> tf.Tensor:
    """`[B]`: each column's `bootstrap_value`, 0 if its last row terminated, else the
    value of the state after it.

    Args:
        next_values: `[N]`, each row's `V(x_{t+1})` (e.g. the value function on
            `SampleBatch.NEXT_OBS`, or RLlib's `values_bootstrapped` column at the
            rows that end a trajectory piece); only the columns' last rows are read.
        terminateds: `[N]` bool or 0/1.
    """
    next_values = tf.convert_to_tensor(next_values)
    last = tf.gather(next_values, index.last_rows)
    ended = tf.cast(tf.gather(tf.cast(terminateds, tf.bool), index.last_rows),
                    next_values.dtype)
    return (1.0 - ended) * last


def drop_last_step(values_tm: tf.Tensor, terminateds_tm: tf.Tensor,
                   mask: tf.Tensor) -> tuple:
    """RLlib's `vtrace_drop_last_ts`, for when no value of the next state is at hand:
    in each column that does not end terminated, the last real step becomes the
    bootstrap (its `V(x_t)`) and is masked out; a column ending terminated keeps every
    step and bootstraps from 0.

    Args:
        values_tm: `[T, B]` values.
        terminateds_tm: `[T, B]` bool or 0/1, time-major.
        mask: `[T, B]` bool, True at real steps (e.g. `TimeMajorIndex.mask`).

    Returns:
        `(bootstrap_value [B], mask [T, B])`, for `vtrace(..., bootstrap_value, mask=...)`.
    """
    mask = tf.convert_to_tensor(mask, tf.bool)
    real = tf.cast(mask, tf.int32)
    last_t = tf.reduce_sum(real, axis=0) - 1  # [B]
    columns = tf.range(tf.shape(mask)[1])
    at_last = tf.stack([tf.maximum(last_t, 0), columns], axis=1)
    ended = tf.gather_nd(tf.cast(terminateds_tm, tf.bool), at_last)
    last_value = tf.gather_nd(values_tm, at_last)
    bootstrap = tf.where(ended, tf.zeros_like(last_value), last_value)
    is_last = tf.equal(tf.range(tf.shape(mask)[0])[:, tf.newaxis], last_t[tf.newaxis])
    new_mask = tf.logical_and(mask, tf.logical_not(
        tf.logical_and(is_last, tf.logical_not(ended)[tf.newaxis])))
    return bootstrap, new_mask


def sequence_vtrace(
    log_rhos: tf.Tensor,
    discounts: tf.Tensor,
    rewards: tf.Tensor,
    values: tf.Tensor,
    seq_lens: tf.Tensor,
    bootstrap_value: Optional[tf.Tensor] = None,
    *,
    terminateds: Optional[tf.Tensor] = None,
    drop_last_ts: bool = False,
    clip_rho_threshold: Threshold = 1.0,
    clip_pg_rho_threshold: Threshold = 1.0,
) -> tuple:
    """V-trace on a recurrent policy's padded sequences, batch-major as the loss sees
    them: `[B, T]`, row `b` one contiguous piece of one episode whose first
    `seq_lens[b]` steps are real, the rest padding (any values, even inf or NaN).

    Each sequence is one time-major column (the `[B, T]` tensors are transposed to
    `[T, B]`); padded steps get `vs = V`, `pg_adv = 0` and are masked out.

    Args:
        log_rhos, discounts, rewards, values: `[B, T]` (see `vtrace`).
        seq_lens: `[B]` int, each >= 1.
        bootstrap_value: `[B]`, the value of the state after each sequence's last real
            step (0 where it terminated); ignored with `drop_last_ts`.
        terminateds: `[B, T]` bool or 0/1; needed with `drop_last_ts`.
        drop_last_ts: RLlib's layout: in each sequence that does not end terminated the
            last real step is the bootstrap (its `V`) and is masked out
            (`drop_last_step`).
        clip_rho_threshold, clip_pg_rho_threshold: As in `vtrace`.

    Returns:
        `(vs [B, T], pg_advantages [B, T], mask [B, T])`, no gradient through the
        targets; `mask` True at the steps that count in the loss.

    Raises:
        ValueError: Without `bootstrap_value` (and not `drop_last_ts`), or without
            `terminateds` with `drop_last_ts`; as `vtrace` for bad shapes.
    """
    def time_major(x: tf.Tensor) -> tf.Tensor:
        x = tf.convert_to_tensor(x)
        if x.shape.rank != 2:
            raise ValueError("sequence_vtrace(): the per-step tensors must be [B, T] (one "
                             f"padded sequence per row); received shape {x.shape}.")
        return tf.transpose(x)

    values_tm = time_major(values)
    mask = tf.transpose(tf.sequence_mask(tf.cast(seq_lens, tf.int32), tf.shape(values_tm)[0]))
    if drop_last_ts:
        if terminateds is None:
            raise ValueError("sequence_vtrace(drop_last_ts=True) needs terminateds ([B, T]).")
        bootstrap_value, mask = drop_last_step(values_tm, time_major(terminateds), mask)
    elif bootstrap_value is None:
        raise ValueError("sequence_vtrace() needs bootstrap_value ([B], the value after "
                         "each sequence), or drop_last_ts=True.")
    vs, pg_advantages = vtrace(
        time_major(log_rhos), time_major(discounts), time_major(rewards), values_tm,
        bootstrap_value, clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold, mask=mask)
    return tf.transpose(vs), tf.transpose(pg_advantages), tf.transpose(mask)
