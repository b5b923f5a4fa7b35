"""DQN's loss as pure functions of Q-values, rewards and hyperparameters.

Mnih et al., "Human-level control through deep reinforcement learning", Nature 518,
2015 (Q-learning with a target network and the Huber loss); van Hasselt et al., "Deep
Reinforcement Learning with Double Q-learning", 2016 (the online network picks the next
action, the target network values it); Wang et al., "Dueling Network Architectures for
Deep Reinforcement Learning", 2016 (`Q = V + A - mean_a A`); n-step returns (Sutton &
Barto, ch. 7) with the importance weights of prioritized replay (Schaul et al., 2016).
Per row `t`, with `R_t` the (n-step) discounted reward sum over `k_t` steps:

    a*_t     = argmax_a Q_online(s_{t+k}, a)          (double Q; else argmax of Q_target)
    y_t      = R_t + gamma ** k_t * (1 - terminated_t) * Q_target(s_{t+k}, a*_t)
    delta_t  = Q(s_t, a_t) - y_t                        (y_t held constant)
    loss     = mean_t w_t * huber(delta_t)              (w_t importance weights, else 1)

The Q-values come in as tensors (the policy calls the model); the functions only combine
them, so `td_error` is free to call next to `dqn_loss` for the replay priorities. The
bootstrap `y_t` and the Huber loss are `td_math`'s, shared with SAC and TD3.
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.loss_math import check_step_tensors, global_mean, local_mean
from tfrl.algorithms.td_math import Scalar, bootstrapped_target, huber_loss


def dueling_q_values(state_value: tf.Tensor, advantages: tf.Tensor) -> tf.Tensor:
    """`Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')` (the dueling head's aggregation).

    Args:
        state_value: `V(s)`, `[B]` or `[B, 1]`.
        advantages: `A(s, a)`, `[B, num_actions]`.

    Returns:
        `[B, num_actions]` Q-values.

    Raises:
        ValueError: If `advantages` is not of rank 2 or `state_value` of another batch.
    """
    advantages = tf.convert_to_tensor(advantages)
    state_value = tf.convert_to_tensor(state_value)
    if advantages.shape.rank != 2:
        raise ValueError(f"dueling_q_values(): advantages must be [B, num_actions]; received "
                         f"shape {advantages.shape}.")
    if state_value.shape.rank == 1:
        state_value = state_value[:, None]
    if state_value.shape.rank != 2 or not state_value.shape[1:].is_compatible_with([1]):
        raise ValueError(f"dueling_q_values(): state_value must be [B] or [B, 1]; received "
                         f"shape {state_value.shape}.")
    return state_value + advantages - tf.reduce_mean(advantages, axis=1, keepdims=True)


def check_q_values(fn_name: str, name: str, q: tf.Tensor, rows: tf.Tensor) -> tf.Tensor:
    """`q` as a tensor, checked to be float Q-values `[B, num_actions]` with as many rows
    as `rows` (a per-row tensor); the ValueError names `fn_name`, `name` and what came."""
    q = tf.convert_to_tensor(q)
    if q.shape.rank != 2 or not q.dtype.is_floating:
        raise ValueError(f"{fn_name}(): {name} must be float Q-values [B, num_actions]; "
                         f"received {q.dtype.name} of shape {q.shape}.")
    if not q.shape[:1].is_compatible_with(rows.shape[:1]):
        raise ValueError(f"{fn_name}(): {name} has {q.shape[0]} rows; the per-row tensors "
                         f"have {rows.shape[0]}.")
    return q


def q_target(rewards_t: tf.Tensor, terminateds_t: tf.Tensor, q_tp1_target: tf.Tensor,
             q_tp1_online: Optional[tf.Tensor] = None, *, gamma: Scalar,
             n_step: Union[int, tf.Tensor] = 1) -> tf.Tensor:
    """The (double-Q, n-step) target `y_t` of the module docstring, gradient stopped.

    Args:
        rewards_t: `R_t`, the discounted reward sums, `[B]` float.
        terminateds_t: Whether the transition ends in a termination (no bootstrap), `[B]`
            bool or float. A truncated episode is not terminated: it bootstraps.
        q_tp1_target: `Q_target(s_{t+k}, .)`, `[B, num_actions]`.
        q_tp1_online: `Q_online(s_{t+k}, .)` for double Q; None: the target network picks
            the action too (`max_a Q_target`).
        gamma: Discount factor.
        n_step: `k_t`: an int, or the `[B]` `n_step` column of n-step transitions (the
            steps each row spans; fewer where the episode or batch ended first).

    Returns:
        `[B]` targets.

    Raises:
        TypeError, ValueError: For non-float rewards, Q-values not `[B, num_actions]`, or
            row counts that disagree.
    """
    (rewards_t,) = check_step_tensors("q_target", {"rewards_t": rewards_t})
    if rewards_t.shape.rank != 1:
        raise ValueError(f"q_target(): rewards_t must be [B]; received shape {rewards_t.shape}.")
    q_tp1_target = check_q_values("q_target", "q_tp1_target", q_tp1_target, rewards_t)
    if q_tp1_online is None:
        best = tf.reduce_max(q_tp1_target, axis=1)
    else:
        q_tp1_online = check_q_values("q_target", "q_tp1_online", q_tp1_online, rewards_t)
        chosen = tf.argmax(q_tp1_online, axis=1, output_type=tf.int32)
        best = tf.gather(q_tp1_target, chosen, axis=1, batch_dims=1)
    return bootstrapped_target(rewards_t, terminateds_t, tf.cast(best, rewards_t.dtype),
                               gamma=gamma, n_step=n_step)


def td_error(q_t: tf.Tensor, actions_t: tf.Tensor, targets_t: tf.Tensor) -> tf.Tensor:
    """`delta_t = Q(s_t, a_t) - y_t`, `[B]` (the new replay priorities are `|delta_t|`).

    Args:
        q_t: `Q(s_t, .)`, `[B, num_actions]`.
        actions_t: The taken actions `a_t`, `[B]` int.
        targets_t: `y_t` (`q_target`), `[B]`.
    """
    q_selected = tf.gather(q_t, tf.cast(actions_t, tf.int32), axis=1, batch_dims=1)
    return q_selected - targets_t


def dqn_loss(q_t: tf.Tensor, actions_t: tf.Tensor, rewards_t: tf.Tensor,
             terminateds_t: tf.Tensor, q_tp1_target: tf.Tensor,
             q_tp1_online: Optional[tf.Tensor] = None,
             importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar,
             n_step: Union[int, tf.Tensor] = 1, huber_delta: Optional[float] = 1.0
             ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """DQN's loss (see the module docstring) and its statistics.

    Args:
        q_t: `Q(s_t, .)` of the online network, `[B, num_actions]` (gradients flow here).
        actions_t: The taken actions, `[B]` int.
        rewards_t, terminateds_t, q_tp1_target, q_tp1_online, gamma, n_step: As for
            `q_target` (`q_tp1_online` given: double Q).
        importance_weights_t: Prioritized replay's `weights` column, `[B]`; None: all 1.
        huber_delta: The Huber loss's threshold; None: the squared error `0.5 delta**2`.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean of
        `w_t * huber(delta_t)`; `stats` over this replica's rows: `mean_q`, `min_q`,
        `max_q` (of `Q(s_t, a_t)`), `mean_td_error` and `mean_abs_td_error`. The
        per-row TD errors for `update_priorities` are `td_error(q_t, actions_t,
        q_target(...))`.

    Raises:
        TypeError, ValueError: For non-float rewards or weights, Q-values not
            `[B, num_actions]`, or row counts that disagree.
    """
    rewards_t, importance_weights_t = check_step_tensors(
        "dqn_loss", {"rewards_t": rewards_t, "importance_weights_t": importance_weights_t})
    targets_t = q_target(rewards_t, terminateds_t, q_tp1_target, q_tp1_online, gamma=gamma,
                         n_step=n_step)
    q_t = check_q_values("dqn_loss", "q_t", q_t, targets_t)
    delta_t = td_error(q_t, actions_t, targets_t)
    if huber_delta is None:
        per_row = 0.5 * tf.square(delta_t)
    else:
        per_row = huber_loss(delta_t, huber_delta)
    if importance_weights_t is not None:
        per_row = importance_weights_t * per_row
    q_selected = delta_t + targets_t
    stats = {"mean_q": local_mean(q_selected), "min_q": tf.reduce_min(q_selected),
             "max_q": tf.reduce_max(q_selected), "mean_td_error": local_mean(delta_t),
             "mean_abs_td_error": local_mean(tf.abs(delta_t))}
    return global_mean(per_row), stats
