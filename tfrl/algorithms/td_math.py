"""Temporal-difference pieces shared by the off-policy losses (DQN, SAC, TD3, DDPG).

Per replayed row `t` (a transition `s_t, a_t -> s_{t+k}` spanning `k_t` steps, `R_t` its
discounted reward sum):

    y_t       = R_t + gamma ** k_t * (1 - terminated_t) * V'(s_{t+k})   (held constant)
    delta_i,t = Q_i(s_t, a_t) - y_t                                       (critic i = 1, 2)
    loss      = sum_i mean_t w_t * huber(delta_i,t)     (or 0.5 delta**2 without Huber)

`V'` is what the algorithm bootstraps from: the target critics' minimum at the target
policy's action (TD3), minus `alpha log pi` (SAC), the target Q-value of the (double-Q)
greedy action (DQN: `dqn_loss.q_target`). A terminated row does not bootstrap;
a truncated one does. Each critic's term reaches only its own Q-values, so the twin
critics learn from the one summed loss as from two separate ones (RLlib sums them too).

The functions take tensors (the policy calls the models) and return tensors: `[B]` per
row, or `(loss, stats)` as the other pure losses (`loss_math`).
"""

from typing import Dict, Optional, Sequence, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.loss_math import check_step_tensors, global_mean, local_mean

__all__ = ["Scalar", "bootstrapped_target", "check_rows", "critic_loss", "huber_loss",
           "td_error"]

Scalar = Union[float, tf.Tensor, tf.Variable]


def check_rows(fn_name: str, tensors: Dict[str, Optional[tf.Tensor]]
               ) -> Sequence[Optional[tf.Tensor]]:
    """`tensors`' values as tensors (None stays None) after checking that they are float
    `[B]` tensors of one dtype and row count (static shapes; free when compiled).

    Raises:
        TypeError: For a non-float tensor.
        ValueError: For a shape other than `[B]` (e.g. a Q head's `[B, 1]`, named with the
            hint to squeeze it), or tensors that disagree.
    """
    for name, value in tensors.items():
        if value is None:
            continue
        shape = tf.convert_to_tensor(value).shape
        if shape.rank != 1:
            hint = (" Squeeze the Q head's last axis (tf.squeeze(q, -1))."
                    if shape.rank == 2 and shape[-1] == 1 else "")
            raise ValueError(f"{fn_name}(): {name} must have shape [B] (one value per "
                             f"replayed row); received shape {shape}.{hint}")
    return check_step_tensors(fn_name, tensors)


def huber_loss(x: tf.Tensor, delta: float = 1.0) -> tf.Tensor:
    """`0.5 x**2` where `|x| <= delta`, else `delta * (|x| - 0.5 delta)`, elementwise."""
    abs_x = tf.abs(x)
    return tf.where(abs_x <= delta, 0.5 * tf.square(x), delta * (abs_x - 0.5 * delta))


def bootstrapped_target(rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
                        next_values_t: tf.Tensor, *, gamma: Scalar,
                        n_step: Union[int, tf.Tensor] = 1) -> tf.Tensor:
    """`y_t = R_t + gamma ** k_t * (1 - terminated_t) * V'_t`, gradient stopped, `[B]`.

    Args:
        rewards_t: `R_t`, the (n-step discounted) reward sums, `[B]` float.
        terminateds_t: Whether the row's last step terminated the episode (no bootstrap),
            `[B]` bool or float. A truncated episode is not terminated: it bootstraps.
        next_values_t: `V'(s_{t+k})`, the value bootstrapped from, `[B]`.
        gamma: The discount factor.
        n_step: `k_t`: an int, or the `[B]` `n_step` column of n-step transitions (the
            steps each row spans; fewer where the episode ended first).

    Raises:
        TypeError, ValueError: See `check_rows`; also for `terminateds_t` of another shape.
    """
    rewards_t, next_values_t = check_rows(
        "bootstrapped_target", {"rewards_t": rewards_t, "next_values_t": next_values_t})
    terminateds_t = tf.convert_to_tensor(terminateds_t)
    if not terminateds_t.shape.is_compatible_with(rewards_t.shape):
        raise ValueError("bootstrapped_target(): terminateds_t must have the shape of "
                         f"rewards_t; received {terminateds_t.shape} and {rewards_t.shape}.")
    dtype = rewards_t.dtype
    discount = tf.cast(gamma, dtype) ** tf.cast(n_step, dtype)
    not_done = 1.0 - tf.cast(terminateds_t, dtype)
    return tf.stop_gradient(rewards_t + discount * not_done * next_values_t)


def td_error(q_t: tf.Tensor, twin_q_t: Optional[tf.Tensor], targets_t: tf.Tensor
             ) -> tf.Tensor:
    """The per-row TD error for replay priorities: `|delta_1,t|`, or with twin critics
    the mean `(|delta_1,t| + |delta_2,t|) / 2` (RLlib's SAC), `[B]`, non-negative."""
    q_t, twin_q_t, targets_t = check_rows(
        "td_error", {"q_t": q_t, "twin_q_t": twin_q_t, "targets_t": targets_t})
    error = tf.abs(q_t - targets_t)
    if twin_q_t is not None:
        error = 0.5 * (error + tf.abs(twin_q_t - targets_t))
    return error


def critic_loss(q_t: tf.Tensor, twin_q_t: Optional[tf.Tensor], targets_t: tf.Tensor,
                importance_weights_t: Optional[tf.Tensor] = None, *,
                huber_delta: Optional[float] = 1.0
                ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The critics' regression loss toward `targets_t` (see the module docstring).

    Args:
        q_t: `Q_1(s_t, a_t)` of the replayed actions, `[B]` (gradients flow here).
        twin_q_t: `Q_2(s_t, a_t)`, `[B]`, or None for one critic (DDPG, SAC without
            `twin_q`).
        targets_t: `y_t`, `[B]` (e.g. `bootstrapped_target`; held constant here too).
        importance_weights_t: Prioritized replay's `weights` column, `[B]`; None: all 1.
        huber_delta: The Huber loss's threshold; None: the squared error `0.5 delta**2`.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean, summed
        over the critics; `stats` over this replica's rows: `critic_loss` (that sum),
        `mean_q`, `min_q`, `max_q` (of `Q_1`) and `mean_td_error` (of `td_error`). The
        per-row priorities are `td_error(q_t, twin_q_t, targets_t)`.

    Raises:
        TypeError, ValueError: For non-float tensors or shapes other than one `[B]`.
    """
    q_t, twin_q_t, targets_t, importance_weights_t = check_rows("critic_loss", {
        "q_t": q_t, "twin_q_t": twin_q_t, "targets_t": targets_t,
        "importance_weights_t": importance_weights_t})
    targets_t = tf.stop_gradient(targets_t)

    def per_row(q):
        delta = q - targets_t
        loss = 0.5 * tf.square(delta) if huber_delta is None else huber_loss(delta,
                                                                               huber_delta)
        return loss if importance_weights_t is None else importance_weights_t * loss

    loss_t = per_row(q_t)
    if twin_q_t is not None:
        loss_t += per_row(twin_q_t)
    stats = {"critic_loss": local_mean(loss_t), "mean_q": local_mean(q_t),
             "min_q": tf.reduce_min(q_t), "max_q": tf.reduce_max(q_t),
             "mean_td_error": local_mean(td_error(q_t, twin_q_t, targets_t))}
    return global_mean(loss_t), stats
