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


# ----------------------------------------------------------- distributional Q
#
# Bellemare et al., "A Distributional Perspective on Reinforcement Learning", 2017 (C51):
# each action's return is a categorical distribution on the fixed support
# `z_i = v_min + i * dz`, `dz = (v_max - v_min) / (N - 1)`, `Q(s, a) = sum_i p_i z_i`.
# The target distribution `r + gamma^k (1 - terminated) z` of the greedy next action is
# projected back onto the support and the loss is the cross-entropy to it; Hessel et al.,
# "Rainbow", 2018, use that cross-entropy as the replay priority too (RLlib does).
#
# Dabney et al., "Distributional Reinforcement Learning with Quantile Regression", 2018
# (QR-DQN): each action's return is N quantiles `theta_i` at the midpoints
# `tau_i = (2 i + 1) / (2 N)`; the target quantiles are `r + gamma^k (1 - terminated)
# theta'_j` of the greedy next action, and the loss is the quantile Huber loss
# `sum_i mean_j |tau_i - 1{u_ij < 0}| * huber_kappa(u_ij) / kappa`, `u_ij = target_j -
# theta_i`.


def categorical_support(num_atoms: int, v_min: float, v_max: float,
                        dtype: tf.DType = tf.float32) -> tf.Tensor:
    """The C51 support `z` `[num_atoms]`: `num_atoms` evenly spaced values from `v_min`
    to `v_max`.

    Example:
        >>> categorical_support(3, -1.0, 1.0).numpy().tolist()
        [-1.0, 0.0, 1.0]
    """
    if num_atoms < 2 or not v_min < v_max:
        raise ValueError(f"categorical_support(): needs num_atoms >= 2 and v_min < v_max; "
                         f"received num_atoms={num_atoms}, v_min={v_min}, v_max={v_max}.")
    return tf.linspace(tf.cast(v_min, dtype), tf.cast(v_max, dtype), num_atoms)


def _check_atoms(fn_name: str, name: str, x: tf.Tensor, rows: tf.Tensor,
                 rank: int = 3) -> tf.Tensor:
    x = tf.convert_to_tensor(x)
    what = "[B, num_actions, num_atoms]" if rank == 3 else "[B, num_atoms]"
    if x.shape.rank != rank or not x.dtype.is_floating:
        raise ValueError(f"{fn_name}(): {name} must be float {what}; received "
                         f"{x.dtype.name} of shape {x.shape}.")
    if not x.shape[:1].is_compatible_with(rows.shape[:1]):
        raise ValueError(f"{fn_name}(): {name} has {x.shape[0]} rows; the per-row tensors "
                         f"have {rows.shape[0]}.")
    return x


def categorical_projection(probs_tp1: tf.Tensor, rewards_t: tf.Tensor,
                           terminateds_t: tf.Tensor, *, gamma: Scalar,
                           n_step: Union[int, tf.Tensor] = 1, v_min: float,
                           v_max: float) -> tf.Tensor:
    """The C51 target distribution: `r + gamma^k (1 - terminated) z` with probabilities
    `probs_tp1`, clipped to `[v_min, v_max]` and projected onto the support `z`.

    Each shifted atom `Tz_j` sits at fractional index `b_j = (Tz_j - v_min) / dz` and
    splits its probability between the neighbours `floor(b_j)` and `ceil(b_j)` in
    proportion to closeness (all of it to `b_j` when `b_j` is an integer).

    Args:
        probs_tp1: The next state's distribution of the greedy action, `[B, num_atoms]`.
        rewards_t: `R_t`, the (n-step) discounted reward sums, `[B]` float.
        terminateds_t: Whether the row ends in a termination (no bootstrap: all mass at
            `clip(R_t)`), `[B]` bool or float.
        gamma: Discount factor.
        n_step: `k_t`, an int or the `[B]` `n_step` column.
        v_min, v_max: The support's ends.

    Returns:
        `[B, num_atoms]` probabilities (rows sum to 1 where `probs_tp1`'s do), gradient
        stopped.

    Raises:
        TypeError, ValueError: For non-float rewards, or shapes that disagree.
    """
    (rewards_t,) = check_step_tensors("categorical_projection", {"rewards_t": rewards_t})
    probs_tp1 = _check_atoms("categorical_projection", "probs_tp1", probs_tp1, rewards_t,
                             rank=2)
    num_atoms = probs_tp1.shape[-1]
    dtype = rewards_t.dtype
    z = categorical_support(num_atoms, v_min, v_max, dtype)  # [N]
    delta_z = (v_max - v_min) / (num_atoms - 1)
    discount = (tf.cast(gamma, dtype) ** tf.cast(n_step, dtype)
                * (1.0 - tf.cast(terminateds_t, dtype)))  # [B]
    shifted = tf.clip_by_value(rewards_t[:, None] + discount[:, None] * z[None, :],
                               v_min, v_max)  # [B, N]: Tz_j
    b = (shifted - v_min) / delta_z  # [B, N], in [0, N - 1]
    lower, upper = tf.floor(b), tf.math.ceil(b)  # [B, N]
    on_atom = tf.cast(upper - lower < 0.5, dtype)  # b_j an integer: all mass to it
    to_lower = probs_tp1 * (upper - b + on_atom)  # [B, N]
    to_upper = probs_tp1 * (b - lower)  # [B, N]
    # m_i = sum_j to_lower_j [lower_j = i] + to_upper_j [upper_j = i]
    lower_onehot = tf.one_hot(tf.cast(lower, tf.int32), num_atoms, dtype=dtype)  # [B, N, N]
    upper_onehot = tf.one_hot(tf.cast(upper, tf.int32), num_atoms, dtype=dtype)
    projected = (tf.einsum("bj,bji->bi", to_lower, lower_onehot)
                 + tf.einsum("bj,bji->bi", to_upper, upper_onehot))
    return tf.stop_gradient(projected)


def greedy_next_atoms(atoms_tp1_target: tf.Tensor, q_tp1_target: tf.Tensor,
                      q_tp1_online: Optional[tf.Tensor] = None) -> tf.Tensor:
    """The target network's atoms (probabilities or quantiles) `[B, num_atoms]` of the
    greedy next action: `argmax_a q_tp1_online` (double Q) or `argmax_a q_tp1_target`."""
    chooser = q_tp1_target if q_tp1_online is None else q_tp1_online
    best = tf.argmax(chooser, axis=1, output_type=tf.int32)  # [B]
    return tf.gather(atoms_tp1_target, best, axis=1, batch_dims=1)


def categorical_td_error(logits_t: tf.Tensor, actions_t: tf.Tensor,
                         target_probs_t: tf.Tensor) -> tf.Tensor:
    """The cross-entropy `-sum_i m_i log p_i(s_t, a_t)` `[B]` of the taken actions'
    distributions (`logits_t` `[B, num_actions, num_atoms]`) to the projected targets
    `target_probs_t` `[B, num_atoms]`: the C51 loss per row and its replay priority."""
    logits_selected = tf.gather(logits_t, tf.cast(actions_t, tf.int32), axis=1,
                                batch_dims=1)  # [B, N]
    return tf.nn.softmax_cross_entropy_with_logits(labels=tf.stop_gradient(target_probs_t),
                                                   logits=logits_selected)


def c51_targets(rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
                logits_tp1_target: tf.Tensor, q_tp1_online: Optional[tf.Tensor] = None, *,
                gamma: Scalar, n_step: Union[int, tf.Tensor] = 1, v_min: float,
                v_max: float) -> tf.Tensor:
    """The projected target distributions `[B, num_atoms]` from the target network's
    next-state logits `[B, num_actions, num_atoms]` (greedy action by `q_tp1_online`
    with double Q, else by the target's own expected values)."""
    (rewards_t,) = check_step_tensors("c51_targets", {"rewards_t": rewards_t})
    logits_tp1_target = _check_atoms("c51_targets", "logits_tp1_target", logits_tp1_target,
                                     rewards_t)
    probs_tp1 = tf.nn.softmax(logits_tp1_target)  # [B, A, N]
    z = categorical_support(logits_tp1_target.shape[-1], v_min, v_max, probs_tp1.dtype)
    q_tp1_target = tf.reduce_sum(probs_tp1 * z, axis=-1)  # [B, A]
    best = greedy_next_atoms(probs_tp1, q_tp1_target, q_tp1_online)  # [B, N]
    return categorical_projection(best, rewards_t, terminateds_t, gamma=gamma,
                                  n_step=n_step, v_min=v_min, v_max=v_max)


def c51_loss(logits_t: tf.Tensor, actions_t: tf.Tensor, rewards_t: tf.Tensor,
             terminateds_t: tf.Tensor, logits_tp1_target: tf.Tensor,
             q_tp1_online: Optional[tf.Tensor] = None,
             importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar,
             n_step: Union[int, tf.Tensor] = 1, v_min: float, v_max: float
             ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The C51 loss (distributional DQN; see the section comment) and its statistics.

    Args:
        logits_t: The online network's logits at `s_t`, `[B, num_actions, num_atoms]`
            (gradients flow here).
        actions_t: The taken actions, `[B]` int.
        rewards_t, terminateds_t, gamma, n_step: As for `q_target`.
        logits_tp1_target: The target network's logits at `s_{t+k}`.
        q_tp1_online: The online network's expected Q-values at `s_{t+k}`
            `[B, num_actions]` for double Q (it picks the next action); None: the
            target network picks it.
        importance_weights_t: Prioritized replay's `weights` column, `[B]`; None: all 1.
        v_min, v_max: The support's ends.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean of
        `w_t * CE_t`; `stats` over this replica's rows: `mean_q` (the expected
        `Q(s_t, a_t)`), `mean_td_error` (the mean cross-entropy, RLlib's name). The
        per-row priorities are `categorical_td_error(logits_t, actions_t, c51_targets(...))`.
    """
    rewards_t, importance_weights_t = check_step_tensors(
        "c51_loss", {"rewards_t": rewards_t, "importance_weights_t": importance_weights_t})
    logits_t = _check_atoms("c51_loss", "logits_t", logits_t, rewards_t)
    targets = c51_targets(rewards_t, terminateds_t, logits_tp1_target, q_tp1_online,
                          gamma=gamma, n_step=n_step, v_min=v_min, v_max=v_max)
    per_row = categorical_td_error(logits_t, actions_t, targets)  # [B]
    z = categorical_support(logits_t.shape[-1], v_min, v_max, logits_t.dtype)
    q_t = tf.reduce_sum(tf.nn.softmax(logits_t) * z, axis=-1)  # [B, A]
    q_selected = tf.gather(q_t, tf.cast(actions_t, tf.int32), axis=1, batch_dims=1)
    stats = {"mean_q": local_mean(q_selected), "mean_td_error": local_mean(per_row)}
    if importance_weights_t is not None:
        per_row = importance_weights_t * per_row
    return global_mean(per_row), stats


def quantile_midpoints(num_quantiles: int, dtype: tf.DType = tf.float32) -> tf.Tensor:
    """`tau_i = (2 i + 1) / (2 N)`, `[N]`: the quantile levels QR-DQN's outputs estimate.

    Example:
        >>> quantile_midpoints(4).numpy().tolist()
        [0.125, 0.375, 0.625, 0.875]
    """
    return (2.0 * tf.range(num_quantiles, dtype=dtype) + 1.0) / (2.0 * num_quantiles)


def quantile_huber_loss(quantiles_t: tf.Tensor, targets_t: tf.Tensor,
                        kappa: float = 1.0) -> tf.Tensor:
    """The quantile Huber loss per row (Dabney et al. 2018, eq. 10), `[B]`:
    `sum_i mean_j |tau_i - 1{u_ij < 0}| * L_kappa(u_ij) / kappa` with
    `u_ij = targets_j - quantiles_i`, `tau_i` the midpoints, `L_kappa` the Huber loss
    (kappa 0: the plain quantile regression loss `|tau_i - 1{u < 0}| |u|`).

    Args:
        quantiles_t: The predicted quantiles `[B, N]` (gradients flow here).
        targets_t: Target samples `[B, M]` (held constant).
        kappa: The Huber threshold, >= 0.
    """
    quantiles_t = tf.convert_to_tensor(quantiles_t)
    targets_t = tf.convert_to_tensor(targets_t)
    for name, x in (("quantiles_t", quantiles_t), ("targets_t", targets_t)):
        if x.shape.rank != 2 or not x.dtype.is_floating:
            raise ValueError(f"quantile_huber_loss(): {name} must be float [B, num]; "
                             f"received {x.dtype.name} of shape {x.shape}.")
    if kappa < 0:
        raise ValueError(f"quantile_huber_loss(): kappa must be >= 0; received {kappa}.")
    targets_t = tf.stop_gradient(targets_t)
    tau = quantile_midpoints(quantiles_t.shape[-1], quantiles_t.dtype)[None, :, None]

    # The gradient in closed form, `-mean_j w_ij * L_kappa'(u_ij) / kappa` (the weight is
    # constant where it is differentiable): autodiff through the [B, N, M] pairs costs
    # about twice the ops, and the pairs dominate QR-DQN's update at 200 quantiles.
    @tf.custom_gradient
    def loss_fn(theta):
        u = targets_t[:, None, :] - theta[:, :, None]  # [B, N, M]
        weight = tf.where(u < 0.0, 1.0 - tau, tau)  # |tau_i - 1{u_ij < 0}|
        abs_u = tf.abs(u)
        if kappa == 0:
            elementwise, slope = abs_u, tf.sign(u)
        else:  # the Huber loss as c * (|u| - c / 2), c = min(|u|, kappa)
            clipped = tf.minimum(abs_u, kappa)
            elementwise = clipped * (abs_u - 0.5 * clipped)
            slope = tf.clip_by_value(u, -kappa, kappa)
            if kappa != 1:
                elementwise, slope = elementwise / kappa, slope / kappa
        loss = tf.reduce_sum(tf.reduce_mean(weight * elementwise, axis=2), axis=1)  # [B]

        def grad(upstream):  # [B] -> [B, N]
            return -upstream[:, None] * tf.reduce_mean(weight * slope, axis=2)

        return loss, grad

    return loss_fn(quantiles_t)


def qr_targets(rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
               quantiles_tp1_target: tf.Tensor, q_tp1_online: Optional[tf.Tensor] = None,
               *, gamma: Scalar, n_step: Union[int, tf.Tensor] = 1) -> tf.Tensor:
    """The target quantiles `r + gamma^k (1 - terminated) theta'_j` `[B, N]` of the
    greedy next action (by `q_tp1_online` with double Q, else by the target's means)."""
    (rewards_t,) = check_step_tensors("qr_targets", {"rewards_t": rewards_t})
    quantiles_tp1_target = _check_atoms("qr_targets", "quantiles_tp1_target",
                                        quantiles_tp1_target, rewards_t)
    dtype = rewards_t.dtype
    best = greedy_next_atoms(quantiles_tp1_target,
                             tf.reduce_mean(quantiles_tp1_target, axis=-1), q_tp1_online)
    discount = (tf.cast(gamma, dtype) ** tf.cast(n_step, dtype)
                * (1.0 - tf.cast(terminateds_t, dtype)))  # [B]
    return tf.stop_gradient(rewards_t[:, None] + discount[:, None] * best)


def qr_td_error(quantiles_t: tf.Tensor, actions_t: tf.Tensor, targets_t: tf.Tensor,
                kappa: float = 1.0) -> tf.Tensor:
    """The quantile Huber loss `[B]` of the taken actions' quantiles
    (`quantiles_t` `[B, num_actions, N]`) to `targets_t` `[B, N]`: QR-DQN's loss per
    row and its replay priority."""
    selected = tf.gather(quantiles_t, tf.cast(actions_t, tf.int32), axis=1, batch_dims=1)
    return quantile_huber_loss(selected, targets_t, kappa)


def qr_dqn_loss(quantiles_t: tf.Tensor, actions_t: tf.Tensor, rewards_t: tf.Tensor,
                terminateds_t: tf.Tensor, quantiles_tp1_target: tf.Tensor,
                q_tp1_online: Optional[tf.Tensor] = None,
                importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar,
                n_step: Union[int, tf.Tensor] = 1, kappa: float = 1.0
                ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """QR-DQN's loss (see the section comment) and its statistics.

    Args:
        quantiles_t: The online network's quantiles at `s_t`,
            `[B, num_actions, N]` (gradients flow here).
        actions_t, rewards_t, terminateds_t, gamma, n_step, importance_weights_t: As
            for `c51_loss`.
        quantiles_tp1_target: The target network's quantiles at `s_{t+k}`.
        q_tp1_online: The online network's Q-values (quantile means) at `s_{t+k}` for
            double Q; None: the target network picks the next action.
        kappa: The Huber threshold (1 in the paper).

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean of
        `w_t * quantile_huber_loss_t`; `stats`: `mean_q` (the mean of the taken
        actions' quantiles), `mean_td_error` (the mean per-row loss).
    """
    rewards_t, importance_weights_t = check_step_tensors(
        "qr_dqn_loss", {"rewards_t": rewards_t, "importance_weights_t": importance_weights_t})
    quantiles_t = _check_atoms("qr_dqn_loss", "quantiles_t", quantiles_t, rewards_t)
    targets = qr_targets(rewards_t, terminateds_t, quantiles_tp1_target, q_tp1_online,
                         gamma=gamma, n_step=n_step)
    per_row = qr_td_error(quantiles_t, actions_t, targets, kappa)  # [B]
    q_selected = tf.reduce_mean(tf.gather(quantiles_t, tf.cast(actions_t, tf.int32),
                                          axis=1, batch_dims=1), axis=-1)  # [B]
    stats = {"mean_q": local_mean(q_selected), "mean_td_error": local_mean(per_row)}
    if importance_weights_t is not None:
        per_row = importance_weights_t * per_row
    return global_mean(per_row), stats
