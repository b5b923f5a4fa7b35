"""Discrete CQL's loss: DQN's TD loss plus the conservative penalty, as pure functions.

Kumar et al., "Conservative Q-Learning for Offline Reinforcement Learning", NeurIPS 2020,
https://arxiv.org/abs/2006.04779, the CQL(H) variant for discrete actions (section 4,
eq. 4, as in the paper's QR-DQN experiments, here on DQN). Per replayed row `t` with the
logged action `a_t` and `T` the `temperature`:

    lse_t   = T * logsumexp_a (Q(s_t, a) / T)            (over all actions, exactly)
    penalty = min_q_weight * mean_t (lse_t - Q(s_t, a_t))
    loss    = dqn_loss + penalty

`dqn_loss` is DQN's (double Q, n-step, Huber or squared error, importance weights): the
penalty adds to it unweighted. It pushes the soft maximum of `Q(s_t, .)` down and the
value of the logged action up, so actions the data never took are not overvalued.
Unlike the SAC-based CQL (`tfrl.algorithms.cql.cql_loss`) nothing is sampled: with a
finite action set the logsumexp runs over every action.

Example (one row, two actions, no TD error: `y = r = Q(s, a_t) = 1`):
    >>> import tensorflow as tf
    >>> loss, stats = cql_dqn_loss(tf.constant([[1.0, 0.0]]), tf.constant([0]),
    ...                            tf.constant([1.0]), tf.constant([1.0]),
    ...                            tf.zeros([1, 2]), gamma=0.99, min_q_weight=1.0)
    >>> round(float(loss), 4)  # log(e + 1) - 1
    0.3133
"""

from typing import Dict, Optional, Tuple, Union

import tensorflow as tf

from tfrl.algorithms.dqn.dqn_loss import check_q_values, dqn_loss
from tfrl.algorithms.loss_math import global_mean, local_mean
from tfrl.algorithms.td_math import Scalar

__all__ = ["cql_dqn_loss", "discrete_cql_penalty"]


def discrete_cql_penalty(q_t: tf.Tensor, actions_t: tf.Tensor, *, temperature: float = 1.0,
                         min_q_weight: float) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The conservative penalty of the module docstring.

    Args:
        q_t: `Q(s_t, .)`, `[B, num_actions]` float.
        actions_t: The logged actions `a_t`, `[B]` int, each in `[0, num_actions)`.
        temperature: `T` (> 0).
        min_q_weight: The penalty's weight (>= 0).

    Returns:
        `(penalty, local_penalty, lse_t)`: `penalty` this replica's share of the
        global-batch value (the replicas' shares sum to the batch's), `local_penalty`
        the value over this replica's rows (for stats), `lse_t` `[B]`.

    Raises:
        ValueError: For `q_t` not a float `[B, num_actions]`, `actions_t` not an int
            `[B]` of as many rows, or a temperature that is not positive.
    """
    actions_t = tf.convert_to_tensor(actions_t)
    if actions_t.shape.rank != 1 or not actions_t.dtype.is_integer:
        raise ValueError(f"discrete_cql_penalty(): actions_t must be int actions [B]; "
                         f"received {actions_t.dtype.name} of shape {actions_t.shape}.")
    q_t = check_q_values("discrete_cql_penalty", "q_t", q_t, actions_t)
    temperature = float(temperature)
    if not temperature > 0:
        raise ValueError(f"discrete_cql_penalty(): temperature must be > 0; received "
                         f"{temperature!r}.")
    lse_t = temperature * tf.reduce_logsumexp(q_t / temperature, axis=1)  # [B]
    q_data = tf.gather(q_t, tf.cast(actions_t, tf.int32), axis=1, batch_dims=1)  # [B]
    weight = float(min_q_weight)
    gap_t = lse_t - q_data
    return weight * global_mean(gap_t), weight * local_mean(gap_t), lse_t


def cql_dqn_loss(q_t: tf.Tensor, actions_t: tf.Tensor, rewards_t: tf.Tensor,
                 terminateds_t: tf.Tensor, q_tp1_target: tf.Tensor,
                 q_tp1_online: Optional[tf.Tensor] = None,
                 importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar,
                 n_step: Union[int, tf.Tensor] = 1, huber_delta: Optional[float] = 1.0,
                 min_q_weight: float, temperature: float = 1.0
                 ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """`dqn_loss` plus `discrete_cql_penalty` (see the module docstring).

    Args:
        q_t, actions_t, rewards_t, terminateds_t, q_tp1_target, q_tp1_online,
        importance_weights_t, gamma, n_step, huber_delta: As for `dqn_loss.dqn_loss`.
        min_q_weight, temperature: As for `discrete_cql_penalty`.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch loss; stats
        over this replica's rows: `dqn_loss`'s, plus `cql_loss` (the weighted
        penalty) and `cql_lse` (the mean of `lse_t`).

    Raises:
        TypeError, ValueError: As `dqn_loss` and `discrete_cql_penalty`.
    """
    td_loss, stats = dqn_loss(q_t, actions_t, rewards_t, terminateds_t, q_tp1_target,
                              q_tp1_online, importance_weights_t, gamma=gamma, n_step=n_step,
                              huber_delta=huber_delta)
    penalty, local_penalty, lse_t = discrete_cql_penalty(
        q_t, actions_t, temperature=temperature, min_q_weight=min_q_weight)
    stats = dict(stats)
    stats.update({"cql_loss": local_penalty, "cql_lse": local_mean(lse_t)})
    return td_loss + penalty, stats
