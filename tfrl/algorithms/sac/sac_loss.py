"""SAC's losses as pure functions of Q-values, log-probabilities and hyperparameters.

Haarnoja et al., "Soft Actor-Critic Algorithms and Applications", 2018,
https://arxiv.org/abs/1812.05905 (twin critics, the temperature `alpha` learned toward a
target entropy); Christodoulou, "Soft Actor-Critic for Discrete Action Settings", 2019,
https://arxiv.org/abs/1910.07207 (the expectations over actions computed exactly from
the action probabilities instead of from one sample). Per replayed row `t`, with
`a' ~ pi(. | s_{t+k})` and `a~ ~ pi(. | s_t)` drawn by the policy (reparameterized):

    y_t        = R_t + gamma ** k_t * (1 - terminated_t)
                 * (min(Q'_1, Q'_2)(s_{t+k}, a') - alpha log pi(a' | s_{t+k}))
    critic     = sum_i mean_t w_t * huber(Q_i(s_t, a_t) - y_t)          (td_math)
    actor      = mean_t alpha log pi(a~ | s_t) - min(Q_1, Q_2)(s_t, a~)
    alpha loss = -mean_t log_alpha * (log pi(a~ | s_t) + target_entropy)

Discrete actions (`[B, n]` Q-values and log-probabilities over all `n` actions):

    V'(s)      = sum_a pi(a | s) (min(Q'_1, Q'_2)(s, a) - alpha log pi(a | s))
    actor      = mean_t sum_a pi(a | s_t) (alpha log pi(a | s_t) - min(Q_1, Q_2)(s_t, a))
    alpha loss = -mean_t log_alpha * (sum_a pi(a | s_t) log pi(a | s_t) + target_entropy)

Three losses for three optimizers: each is differentiated with respect to its own
variables only (critic loss: the critics; actor loss: the policy, through `a~` and
`log pi`; alpha loss: `log_alpha`). Within them the gradient is stopped where it must
not flow: the target `y_t`; `alpha` in the target and the actor loss; `log pi` in the
alpha loss; the Q-values in the discrete actor loss. The continuous actor loss keeps the
gradient of `Q(s_t, a~)` with respect to `a~` (the reparameterization trick): it reaches
the critics' weights as well, which the actor's optimizer does not update.
"""

import math
from typing import Any, Dict, List, Optional, Tuple, Union

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.algorithms.loss_math import global_mean, local_mean
from tfrl.algorithms.td_math import Scalar, bootstrapped_target, check_rows, critic_loss

__all__ = ["discrete_sac_actor_loss", "discrete_sac_alpha_loss", "discrete_soft_q_target",
           "resolve_target_entropy", "sac_actor_loss", "sac_alpha_loss", "sac_critic_loss",
           "soft_q_target"]

#: The critics' loss is the shared TD regression (twin critics, Huber, importance weights).
sac_critic_loss = critic_loss


def resolve_target_entropy(target_entropy: Union[str, float, None],
                           action_space: gym.Space) -> float:
    """The target entropy for `action_space`: a number as given; "auto" (or None)
    `-prod(shape)` for a Box (Haarnoja et al.), `0.98 * log(n)` for a Discrete(n)
    (Christodoulou; 98% of the uniform policy's entropy).

    Raises:
        ValueError: For another string, a non-finite number, or "auto" for a space
            that is neither a Box nor a Discrete.
    """
    if target_entropy is None or isinstance(target_entropy, str):
        if target_entropy not in (None, "auto"):
            raise ValueError(f"target_entropy must be 'auto' or a number; received "
                             f"{target_entropy!r}.")
        if isinstance(action_space, gym.spaces.Discrete):
            return 0.98 * math.log(int(action_space.n))
        if isinstance(action_space, gym.spaces.Box):
            return -float(np.prod(action_space.shape))
        raise ValueError(f"target_entropy='auto' needs a Box or Discrete action space; "
                         f"received {action_space!r}. Set target_entropy to a number.")
    value = float(target_entropy)
    if not math.isfinite(value):
        raise ValueError(f"target_entropy must be finite; received {target_entropy!r}.")
    return value


def _min_q(q: tf.Tensor, twin_q: Optional[tf.Tensor]) -> tf.Tensor:
    return q if twin_q is None else tf.minimum(q, twin_q)


def check_action_values(fn_name: str, tensors: Dict[str, Optional[Any]], *,
                        rows: Optional[int] = None, what: str = "one value per action"
                        ) -> List[Optional[tf.Tensor]]:
    """`[B, n]` float tensors of one shape and dtype (None stays None); with `rows`, `B`
    must be `rows` (the replayed batch's). Shared with CQL's sampled-action Q-values."""
    out: List[Optional[tf.Tensor]] = []
    first_name, first = None, None
    for name, value in tensors.items():
        if value is None:
            out.append(None)
            continue
        value = tf.convert_to_tensor(value)
        if value.shape.rank != 2 or not value.dtype.is_floating:
            raise ValueError(f"{fn_name}(): {name} must be a float tensor [B, num_actions] "
                             f"({what}); received {value.dtype.name} of shape "
                             f"{value.shape}.")
        if first is None:
            first_name, first = name, value
        elif value.dtype != first.dtype or not value.shape.is_compatible_with(first.shape):
            raise ValueError(f"{fn_name}(): {name} and {first_name} must have one dtype and "
                             f"shape; received {value.dtype.name} {value.shape} and "
                             f"{first.dtype.name} {first.shape}.")
        if value.shape[0] is not None and rows is not None and value.shape[0] != rows:
            raise ValueError(f"{fn_name}(): {name} has {value.shape[0]} rows; the replayed "
                             f"Q-values have {rows}.")
        out.append(value)
    return out


def soft_q_target(rewards_t: tf.Tensor, terminateds_t: tf.Tensor, q_tp1_t: tf.Tensor,
                  logp_tp1_t: tf.Tensor, twin_q_tp1_t: Optional[tf.Tensor] = None, *,
                  alpha: Scalar, gamma: Scalar, n_step: Union[int, tf.Tensor] = 1
                  ) -> tf.Tensor:
    """The soft Bellman target `y_t` for continuous actions, gradient stopped, `[B]`.

    Args:
        rewards_t: `R_t`, `[B]` float (n-step discounted reward sums).
        terminateds_t: `[B]` bool or float; terminated rows do not bootstrap.
        q_tp1_t: `Q'_1(s_{t+k}, a')` of the target critic at `a' ~ pi(. | s_{t+k})`, `[B]`.
        logp_tp1_t: `log pi(a' | s_{t+k})`, `[B]`.
        twin_q_tp1_t: `Q'_2(s_{t+k}, a')`, `[B]`, or None without twin critics.
        alpha: The entropy temperature (a float or tensor; its gradient is stopped).
        gamma, n_step: As for `td_math.bootstrapped_target`.

    Raises:
        TypeError, ValueError: For non-float tensors or shapes other than one `[B]`.
    """
    q_tp1_t, twin_q_tp1_t, logp_tp1_t = check_rows("soft_q_target", {
        "q_tp1_t": q_tp1_t, "twin_q_tp1_t": twin_q_tp1_t, "logp_tp1_t": logp_tp1_t})
    alpha = tf.stop_gradient(tf.cast(alpha, logp_tp1_t.dtype))
    soft_value = _min_q(q_tp1_t, twin_q_tp1_t) - alpha * logp_tp1_t
    return bootstrapped_target(rewards_t, terminateds_t, soft_value, gamma=gamma,
                               n_step=n_step)


def discrete_soft_q_target(rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
                           q_tp1: tf.Tensor, log_probs_tp1: tf.Tensor,
                           twin_q_tp1: Optional[tf.Tensor] = None, *, alpha: Scalar,
                           gamma: Scalar, n_step: Union[int, tf.Tensor] = 1) -> tf.Tensor:
    """The soft Bellman target for discrete actions (the expectation over `a'` exact),
    gradient stopped, `[B]`.

    Args:
        rewards_t, terminateds_t, alpha, gamma, n_step: As for `soft_q_target`.
        q_tp1: `Q'_1(s_{t+k}, .)` of the target critic, `[B, n]`.
        log_probs_tp1: `log pi(. | s_{t+k})`, `[B, n]` (e.g. `tf.nn.log_softmax(logits)`).
        twin_q_tp1: `Q'_2(s_{t+k}, .)`, `[B, n]`, or None.

    Raises:
        ValueError: For tensors that are not float `[B, n]` of one shape (and see
            `soft_q_target`).
    """
    q_tp1, twin_q_tp1, log_probs_tp1 = check_action_values("discrete_soft_q_target", {
        "q_tp1": q_tp1, "twin_q_tp1": twin_q_tp1, "log_probs_tp1": log_probs_tp1})
    alpha = tf.stop_gradient(tf.cast(alpha, log_probs_tp1.dtype))
    probs = tf.exp(log_probs_tp1)
    soft_value = tf.reduce_sum(
        probs * (_min_q(q_tp1, twin_q_tp1) - alpha * log_probs_tp1), axis=-1)
    return bootstrapped_target(rewards_t, terminateds_t, soft_value, gamma=gamma,
                               n_step=n_step)


def sac_actor_loss(logp_t: tf.Tensor, q_t: tf.Tensor, twin_q_t: Optional[tf.Tensor] = None,
                   *, alpha: Scalar) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The policy's loss `mean_t alpha log pi(a~ | s_t) - min(Q_1, Q_2)(s_t, a~)`.

    Args:
        logp_t: `log pi(a~ | s_t)` of freshly drawn (reparameterized) actions, `[B]`.
        q_t: `Q_1(s_t, a~)`, `[B]` (computed from `a~`, so the gradient reaches the policy).
        twin_q_t: `Q_2(s_t, a~)`, `[B]`, or None.
        alpha: The temperature (its gradient is stopped).

    Returns:
        `(loss, stats)`: stats `actor_loss`, `logp` (mean; minus an entropy estimate)
        and `alpha`.

    Raises:
        TypeError, ValueError: For non-float tensors or shapes other than one `[B]`.
    """
    logp_t, q_t, twin_q_t = check_rows(
        "sac_actor_loss", {"logp_t": logp_t, "q_t": q_t, "twin_q_t": twin_q_t})
    alpha = tf.stop_gradient(tf.cast(alpha, logp_t.dtype))
    loss_t = alpha * logp_t - _min_q(q_t, twin_q_t)
    stats = {"actor_loss": local_mean(loss_t), "logp": local_mean(logp_t), "alpha": alpha}
    return global_mean(loss_t), stats


def discrete_sac_actor_loss(log_probs_t: tf.Tensor, q_t: tf.Tensor,
                            twin_q_t: Optional[tf.Tensor] = None, *, alpha: Scalar
                            ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The discrete policy's loss `mean_t sum_a pi(a|s_t) (alpha log pi(a|s_t) - Q(s_t, a))`
    with `Q = min(Q_1, Q_2)` held constant (the gradient flows through `pi` only). The
    minimum is Christodoulou's; RLlib's discrete SAC uses `Q_1` alone here.

    Args:
        log_probs_t: `log pi(. | s_t)`, `[B, n]`.
        q_t: `Q_1(s_t, .)`, `[B, n]`.
        twin_q_t: `Q_2(s_t, .)`, `[B, n]`, or None.
        alpha: The temperature (its gradient is stopped).

    Returns:
        `(loss, stats)`: stats `actor_loss`, `entropy` (mean of `H[pi(. | s_t)]`) and
        `alpha`.

    Raises:
        ValueError: For tensors that are not float `[B, n]` of one shape.
    """
    log_probs_t, q_t, twin_q_t = check_action_values("discrete_sac_actor_loss", {
        "log_probs_t": log_probs_t, "q_t": q_t, "twin_q_t": twin_q_t})
    alpha = tf.stop_gradient(tf.cast(alpha, log_probs_t.dtype))
    probs = tf.exp(log_probs_t)
    q = tf.stop_gradient(_min_q(q_t, twin_q_t))
    loss_t = tf.reduce_sum(probs * (alpha * log_probs_t - q), axis=-1)  # [B]
    entropy_t = -tf.reduce_sum(probs * log_probs_t, axis=-1)
    stats = {"actor_loss": local_mean(loss_t), "entropy": local_mean(entropy_t),
             "alpha": alpha}
    return global_mean(loss_t), stats


def _alpha_loss(log_alpha: Scalar, logp_t: tf.Tensor, target_entropy: float
                ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    log_alpha = tf.cast(log_alpha, logp_t.dtype)
    gap_t = tf.stop_gradient(logp_t + target_entropy)  # [B]
    loss_t = -log_alpha * gap_t
    stats = {"alpha_loss": local_mean(loss_t), "alpha": tf.exp(tf.stop_gradient(log_alpha)),
             "target_entropy": tf.constant(target_entropy, logp_t.dtype)}
    return global_mean(loss_t), stats


def _check_target_entropy(fn_name: str, target_entropy: Any) -> float:
    if isinstance(target_entropy, str) or not math.isfinite(float(target_entropy)):
        raise ValueError(f"{fn_name}(): target_entropy must be a finite number; received "
                         f"{target_entropy!r}. Resolve 'auto' with "
                         "resolve_target_entropy(target_entropy, action_space).")
    return float(target_entropy)


def sac_alpha_loss(log_alpha: Scalar, logp_t: tf.Tensor, *, target_entropy: float
                   ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The temperature's loss `-mean_t log_alpha * (log pi(a~ | s_t) + target_entropy)`:
    its gradient raises `alpha` while the policy's entropy (`-log pi`) is below the target.

    Args:
        log_alpha: The learned `log alpha` (a variable; the gradient flows to it only).
        logp_t: `log pi(a~ | s_t)` of freshly drawn actions, `[B]` (held constant).
        target_entropy: A number (see `resolve_target_entropy` for "auto").

    Returns:
        `(loss, stats)`: stats `alpha_loss`, `alpha` and `target_entropy`.

    Raises:
        TypeError, ValueError: For `logp_t` not a float `[B]`, or a target entropy that
            is not a finite number.
    """
    (logp_t,) = check_rows("sac_alpha_loss", {"logp_t": logp_t})
    return _alpha_loss(log_alpha, logp_t, _check_target_entropy("sac_alpha_loss",
                                                                target_entropy))


def discrete_sac_alpha_loss(log_alpha: Scalar, log_probs_t: tf.Tensor, *,
                            target_entropy: float) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The discrete temperature's loss, `-mean_t log_alpha * (target_entropy - H_t)` with
    `H_t = -sum_a pi(a | s_t) log pi(a | s_t)` (held constant).

    Args:
        log_alpha: The learned `log alpha`.
        log_probs_t: `log pi(. | s_t)`, `[B, n]`.
        target_entropy: A number (see `resolve_target_entropy`).

    Returns:
        `(loss, stats)` as `sac_alpha_loss`.

    Raises:
        ValueError: For `log_probs_t` not a float `[B, n]`, or a bad target entropy.
    """
    (log_probs_t,) = check_action_values("discrete_sac_alpha_loss",
                                          {"log_probs_t": log_probs_t})
    expected_logp_t = tf.reduce_sum(tf.exp(log_probs_t) * log_probs_t, axis=-1)  # -H_t
    return _alpha_loss(log_alpha, expected_logp_t,
                       _check_target_entropy("discrete_sac_alpha_loss", target_entropy))
