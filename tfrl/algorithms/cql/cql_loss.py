"""CQL's losses as pure functions of Q-values, log-probabilities and hyperparameters.

Kumar et al., "Conservative Q-Learning for Offline Reinforcement Learning", NeurIPS 2020,
https://arxiv.org/abs/2006.04779 (the CQL(H) variant on SAC, as RLlib's CQL). Per
replayed row `t` with the logged action `a_t`, and `N = num_actions` sampled actions per
row from each of three proposals evaluated at `s_t`: uniform random actions in the
action bounds (log-density `log u = -sum log(high - low)`), the policy's actions at
`s_t` and the policy's actions at `s_{t+1}` (log-densities `log pi`, held constant):

    td_i      = mean_t (Q_i(s_t, a_t) - y_t) ** 2                      (y_t held constant)
    lse_i,t   = T * logsumexp_j (q_j - log density_j) / T    over the 3N sampled actions
    penalty_i = min_q_weight * (mean_t lse_i,t - mean_t Q_i(s_t, a_t))
    critic    = sum_i td_i + penalty_i

`T` is `temperature`. The penalty pushes the Q-values of out-of-data actions down (the
soft maximum over actions) and those of the logged actions up. With `lagrangian`, the
penalty's weight is learnt (Kumar et al., eq. 30): `alpha' = clip(exp(log_alpha'), 0,
1e6)`, the critics minimise `alpha' (penalty_i - lagrangian_thresh)` and `alpha'` the
loss `-0.5 alpha' sum_i (penalty_i - lagrangian_thresh)` (penalty held constant), so it
grows while the penalty exceeds the threshold.

The actor's loss is SAC's, except for the first `bc_iters` gradient steps, where
behaviour cloning replaces the Q-value: `mean_t alpha log pi(a~ | s_t) - log pi(a_t | s_t)`.

Differences from RLlib's CQL (torch): the uniform proposal's log-density is that of
the action space's bounds (RLlib uses `log 0.5 ** dim(A)`, the density of `[-1, 1]`,
for any bounds); all three proposals' Q-values go into one logsumexp as in RLlib.

Example (one row, one critic, one sampled action per proposal, all densities 1):
    >>> import tensorflow as tf
    >>> zero = tf.zeros([1, 1])
    >>> loss, stats = cql_loss(tf.constant([1.0]), None, tf.constant([1.0]),
    ...                        (zero, zero, zero), None, zero, zero,
    ...                        random_log_density=0.0, temperature=1.0, min_q_weight=1.0)
    >>> round(float(loss), 4)  # log(3 e^0) - 1: the TD error is 0
    0.0986
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np
import tensorflow as tf

from tfrl.algorithms.loss_math import global_mean, local_mean
from tfrl.algorithms.sac.sac_loss import check_action_values, sac_actor_loss
from tfrl.algorithms.td_math import Scalar, check_rows

__all__ = ["ALPHA_PRIME_MAX", "cql_actor_loss", "cql_loss", "cql_penalty",
           "uniform_log_density"]

#: The learnt penalty weight `alpha'` is clipped into `[0, ALPHA_PRIME_MAX]` (RLlib's).
ALPHA_PRIME_MAX = 1e6


def uniform_log_density(low: Any, high: Any) -> float:
    """`-sum log(high - low)`: the log-density of a uniform draw from a bounded Box."""
    width = np.asarray(high, np.float64) - np.asarray(low, np.float64)
    if not np.all(np.isfinite(width)) or np.any(width <= 0):
        raise ValueError(f"uniform_log_density(): needs finite bounds with low < high; "
                         f"received low={low!r}, high={high!r}.")
    return float(-np.sum(np.log(width)))


def cql_penalty(q_t: tf.Tensor, q_sampled: Sequence[tf.Tensor], logp_curr: tf.Tensor,
                logp_next: tf.Tensor, *, random_log_density: float, temperature: float,
                min_q_weight: float) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One critic's conservative penalty `penalty_i` (see the module docstring).

    Args:
        q_t: `Q_i(s_t, a_t)` of the logged actions, `[B]`.
        q_sampled: `(q_rand, q_curr, q_next)`: `Q_i(s_t, .)` of the `N` uniform actions,
            the policy's actions at `s_t` and at `s_{t+1}`, `[B, N]` each.
        logp_curr, logp_next: `log pi` of those policy actions, `[B, N]` (held constant).
        random_log_density: The uniform proposal's log-density (`uniform_log_density`).
        temperature, min_q_weight: `T` and the penalty's weight.

    Returns:
        `(penalty, local_penalty, lse_t)`: `penalty` this replica's share of the
        global-batch value (summed over replicas: the penalty of the whole batch),
        `local_penalty` the value over this replica's rows (for stats), `lse_t` `[B]`.
    """
    (q_t,) = check_rows("cql_penalty", {"q_t": q_t})
    q_rand, q_curr, q_next, logp_curr, logp_next = cast(List[tf.Tensor], check_action_values(
        "cql_penalty", {"q_rand": q_sampled[0], "q_curr": q_sampled[1],
                        "q_next": q_sampled[2], "logp_curr": logp_curr,
                        "logp_next": logp_next},
        rows=q_t.shape[0], what="one value per sampled action"))  # (no None given)
    temperature = float(temperature)
    cat = tf.concat([q_rand - tf.cast(random_log_density, q_rand.dtype),
                     q_curr - tf.stop_gradient(logp_curr),
                     q_next - tf.stop_gradient(logp_next)], axis=1)  # [B, 3N]
    lse_t = temperature * tf.reduce_logsumexp(cat / temperature, axis=1)  # [B]
    weight = float(min_q_weight)
    penalty = weight * (global_mean(lse_t) - global_mean(q_t))
    return penalty, weight * (local_mean(lse_t) - local_mean(q_t)), lse_t


def cql_loss(q_t: tf.Tensor, twin_q_t: Optional[tf.Tensor], targets_t: tf.Tensor,
             q_sampled: Sequence[tf.Tensor], twin_q_sampled: Optional[Sequence[tf.Tensor]],
             logp_curr: tf.Tensor, logp_next: tf.Tensor, *, random_log_density: float,
             temperature: float, min_q_weight: float,
             log_alpha_prime: Optional[Scalar] = None, lagrangian_thresh: float = 5.0
             ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The critics' CQL loss (TD regression plus the conservative penalty), plus with
    `log_alpha_prime` the Lagrange multiplier's loss (see the module docstring).

    Args:
        q_t, twin_q_t: `Q_1(s_t, a_t)`, `Q_2(s_t, a_t)` of the logged actions, `[B]`
            (`twin_q_t` None for one critic).
        targets_t: `y_t`, `[B]` (held constant).
        q_sampled, twin_q_sampled: Each critic's `(q_rand, q_curr, q_next)`, `[B, N]`
            each (see `cql_penalty`); `twin_q_sampled` None for one critic.
        logp_curr, logp_next: `log pi` of the policy's sampled actions, `[B, N]`.
        random_log_density, temperature, min_q_weight: See `cql_penalty`.
        log_alpha_prime: The learnt `log alpha'` (a variable) for the Lagrangian
            version; None: the penalty's weight is `min_q_weight` alone.
        lagrangian_thresh: The threshold the penalty is held to (Lagrangian only).

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch loss (the
        critics' loss, plus the multiplier's); stats over this replica's rows:
        `critic_loss` (the TD part, summed over critics), `cql_loss` (the penalties
        summed, weighted by `alpha'` if Lagrangian), `mean_q`, `mean_td_error`,
        `cql_lse` (mean of `lse_1,t`) and, if Lagrangian, `alpha_prime`,
        `alpha_prime_loss`.

    Raises:
        TypeError, ValueError: For non-float tensors or shapes other than `[B]` /
            `[B, N]`; for `twin_q_t` and `twin_q_sampled` not given together.
    """
    if (twin_q_t is None) != (twin_q_sampled is None):
        raise ValueError("cql_loss(): twin_q_t and twin_q_sampled must be given together "
                         "(twin critics) or both be None (one critic).")
    q_t, twin_q_t, targets_t = check_rows(
        "cql_loss", {"q_t": q_t, "twin_q_t": twin_q_t, "targets_t": targets_t})
    targets_t = tf.stop_gradient(targets_t)
    kwargs = dict(random_log_density=random_log_density, temperature=temperature,
                  min_q_weight=min_q_weight)
    critics: List[Tuple[tf.Tensor, Sequence[tf.Tensor]]] = [(q_t, q_sampled)]
    if twin_q_t is not None and twin_q_sampled is not None:
        critics.append((twin_q_t, twin_q_sampled))
    td_t = tf.zeros_like(q_t)
    penalties, local_penalties, lse_first = [], [], None
    for q, sampled in critics:
        td_t += tf.square(q - targets_t)
        penalty, local_penalty, lse_t = cql_penalty(q, sampled, logp_curr, logp_next,
                                                    **kwargs)
        penalties.append(penalty)
        local_penalties.append(local_penalty)
        lse_first = lse_t if lse_first is None else lse_first
    td_loss = global_mean(td_t)
    stats: Dict[str, tf.Tensor] = {
        "critic_loss": local_mean(td_t), "mean_q": local_mean(q_t),
        "mean_td_error": local_mean(tf.abs(q_t - targets_t)), "cql_lse": local_mean(lse_first)}
    if log_alpha_prime is None:
        stats["cql_loss"] = tf.add_n(local_penalties)
        return td_loss + tf.add_n(penalties), stats
    log_alpha_prime = tf.cast(log_alpha_prime, q_t.dtype)
    alpha_prime = tf.clip_by_value(tf.exp(log_alpha_prime), 0.0, ALPHA_PRIME_MAX)
    # The threshold as a share of the global batch too: the replicas' shares sum to it.
    thresh = global_mean(tf.fill(tf.shape(q_t), tf.cast(lagrangian_thresh, q_t.dtype)))
    gaps = [p - thresh for p in penalties]
    conservative = tf.stop_gradient(alpha_prime) * tf.add_n(gaps)
    alpha_prime_loss = -0.5 * alpha_prime * tf.stop_gradient(tf.add_n(gaps))
    local_gaps = tf.stop_gradient(tf.add_n([p - float(lagrangian_thresh)
                                            for p in local_penalties]))
    alpha_prime_value = tf.stop_gradient(alpha_prime)
    stats.update({"cql_loss": alpha_prime_value * local_gaps, "alpha_prime": alpha_prime_value,
                  "alpha_prime_loss": -0.5 * alpha_prime_value * local_gaps})
    return td_loss + conservative + alpha_prime_loss, stats


def cql_actor_loss(logp_t: tf.Tensor, q_t: tf.Tensor, twin_q_t: Optional[tf.Tensor],
                   bc_logp_t: tf.Tensor, *, alpha: Scalar, bc_phase: Any
                   ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The actor's loss: SAC's (`sac_loss.sac_actor_loss`), or during the behaviour-cloning
    phase `mean_t alpha log pi(a~ | s_t) - log pi(a_t | s_t)`.

    Args:
        logp_t: `log pi(a~ | s_t)` of freshly drawn (reparameterized) actions, `[B]`.
        q_t, twin_q_t: `Q_1(s_t, a~)`, `Q_2(s_t, a~)`, `[B]` (`twin_q_t` may be None).
        bc_logp_t: `log pi(a_t | s_t)` of the logged actions, `[B]`.
        alpha: The entropy temperature (its gradient is stopped).
        bc_phase: A bool (or bool scalar tensor): whether to clone (the first
            `bc_iters` gradient steps).

    Returns:
        `(loss, stats)`: stats of `sac_actor_loss` plus `bc_logp` (mean of `bc_logp_t`).
    """
    (bc_logp_t,) = check_rows("cql_actor_loss", {"bc_logp_t": bc_logp_t})
    q_t, twin_q_t = check_rows("cql_actor_loss", {"q_t": q_t, "twin_q_t": twin_q_t})
    min_q = q_t if twin_q_t is None else tf.minimum(q_t, twin_q_t)
    value_t = tf.where(tf.cast(bc_phase, tf.bool), bc_logp_t, min_q)
    loss, stats = sac_actor_loss(logp_t, value_t, alpha=alpha)
    stats["bc_logp"] = local_mean(bc_logp_t)
    return loss, stats

