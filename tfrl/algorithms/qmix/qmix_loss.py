"""QMIX's loss as pure functions of per-agent Q-values, mixing weights and rewards.

Rashid et al., "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent
Reinforcement Learning", ICML 2018; Sunehag et al., "Value-Decomposition Networks For
Cooperative Multi-Agent Learning", 2017 (VDN). For a batch of B transitions of a group of
N agents with A actions each, with `Q_i` the shared agent network's values:

    q_i      = Q_i(o_t^i, a_t^i)                               chosen, [B, N]
    q'_i     = Q_target_i(o_{t+1}^i, a*_i)                     [B, N], a*_i the best
               allowed action of agent i at t+1 (double Q: by the online network)
    Q_tot    = mix(q, s_t),  Q'_tot = mix_target(q', s_{t+1})  [B, 1] (no mixer: [B, N])
    y        = r + gamma * (1 - terminated) * Q'_tot            (held constant)
    loss     = sum(mask * w * (Q_tot - y)^2) / sum(mask)        (squared TD error, RLlib's)

with the team reward `r` `[B, 1]` for a mixer and each agent's own `[B, N]` without one.
The monotonic mixer (`qmix_mix`) is a one-hidden-layer network whose weights come from
hypernetworks of the state and are made non-negative (absolute values), so that
`dQ_tot / dq_i >= 0`: each agent's greedy action is the team's (the argmax of the joint
Q-value factorises). VDN's mixer is the sum (`vdn_mix`).

`mask` marks the real entries: padded rows, and (without a mixer) agents absent from a
transition; an absent agent's Q-value enters a mixer as 0 (`agent_mask`).

With the recurrent agent network the batch is `B` sequences of `T` steps (episodes, or
pieces of at most `model["max_seq_len"]` steps, right-padded): `qmix_sequence_td_loss`
is the same loss over the `[B, T]` entries whose `seq_mask` is 1, the mean running over
the real steps of all sequences (RLlib's).
"""

from typing import Dict, Optional, Tuple

import tensorflow as tf

from tfrl.algorithms.td_math import Scalar

# What a masked (not allowed) action's Q-value becomes before a max or argmax: far below
# any real value, finite (no inf * 0 = nan in the gradients).
MASKED_Q = -1e9


def _check_rank(fn_name: str, name: str, value: tf.Tensor, rank: int, shape: str) -> tf.Tensor:
    value = tf.convert_to_tensor(value)
    if value.shape.rank != rank:
        raise ValueError(f"{fn_name}(): {name} must be {shape}; received shape {value.shape}.")
    return value


def chosen_action_q(q_t: tf.Tensor, actions_t: tf.Tensor) -> tf.Tensor:
    """`q_i = Q_i(o_t^i, a_t^i)`: each agent's Q-value of its action.

    Args:
        q_t: `[B, N, A]` per-agent Q-values.
        actions_t: `[B, N]` int actions.

    Returns:
        `[B, N]`.

    Raises:
        ValueError: For tensors of other ranks.
    """
    q_t = _check_rank("chosen_action_q", "q_t", q_t, 3, "[B, N, A]")
    actions_t = _check_rank("chosen_action_q", "actions_t", actions_t, 2, "[B, N]")
    return tf.gather(q_t, tf.cast(actions_t, tf.int32), axis=2, batch_dims=2)


def target_agent_q(q_tp1_target: tf.Tensor, q_tp1_online: Optional[tf.Tensor] = None,
                   action_mask_tp1: Optional[tf.Tensor] = None) -> tf.Tensor:
    """`q'_i`: each agent's target value of its best allowed next action.

    Args:
        q_tp1_target: `[B, N, A]` target network values at t+1.
        q_tp1_online: `[B, N, A]` online values at t+1 (double Q: they pick the action);
            None: the target network picks it (`max_a`).
        action_mask_tp1: `[B, N, A]`, > 0.5 where an action is allowed at t+1; None: all.

    Returns:
        `[B, N]`, gradient stopped.
    """
    q_tp1_target = _check_rank("target_agent_q", "q_tp1_target", q_tp1_target, 3, "[B, N, A]")
    if action_mask_tp1 is None:
        allowed = tf.ones_like(q_tp1_target, tf.bool)
    else:
        allowed = tf.cast(action_mask_tp1, tf.float32) > 0.5
    masked = tf.constant(MASKED_Q, q_tp1_target.dtype)
    if q_tp1_online is None:
        best = tf.reduce_max(tf.where(allowed, q_tp1_target, masked), axis=2)
    else:
        q_tp1_online = _check_rank("target_agent_q", "q_tp1_online", q_tp1_online, 3,
                                   "[B, N, A]")
        picked = tf.argmax(tf.where(allowed, q_tp1_online, masked), axis=2,
                           output_type=tf.int32)
        best = tf.gather(q_tp1_target, picked, axis=2, batch_dims=2)
    return tf.stop_gradient(best)


def vdn_mix(agent_qs: tf.Tensor) -> tf.Tensor:
    """VDN's `Q_tot = sum_i q_i`: `[B, N]` -> `[B, 1]`."""
    agent_qs = _check_rank("vdn_mix", "agent_qs", agent_qs, 2, "[B, N]")
    return tf.reduce_sum(agent_qs, axis=1, keepdims=True)


def qmix_mix(agent_qs: tf.Tensor, w1: tf.Tensor, b1: tf.Tensor, w_final: tf.Tensor,
             v: tf.Tensor) -> tf.Tensor:
    """QMIX's monotonic mixing of the agents' Q-values with the hypernetworks' outputs:

        hidden = elu(q @ |W1| + b1),  Q_tot = hidden @ |w_final| + V

    Args:
        agent_qs: `[B, N]` chosen (or target) per-agent Q-values `q`.
        w1: `[B, N, E]` first-layer weights (before `abs`).
        b1: `[B, E]` first-layer bias.
        w_final: `[B, E]` output weights (before `abs`).
        v: `[B, 1]` or `[B]` state value (the output bias).

    Returns:
        `[B, 1]` `Q_tot`, non-decreasing in every `q_i`.
    """
    agent_qs = _check_rank("qmix_mix", "agent_qs", agent_qs, 2, "[B, N]")
    w1 = _check_rank("qmix_mix", "w1", w1, 3, "[B, N, E]")
    hidden = tf.nn.elu(tf.einsum("bn,bne->be", agent_qs, tf.abs(w1)) + b1)  # [B, E]
    v = tf.reshape(v, [-1, 1])
    return tf.reduce_sum(hidden * tf.abs(w_final), axis=1, keepdims=True) + v  # [B, 1]


def qmix_td_loss(q_tot_t: tf.Tensor, rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
                 q_tot_tp1: tf.Tensor, mask: Optional[tf.Tensor] = None,
                 importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar
                 ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The squared TD error of the (mixed) Q-values, averaged over the real entries.

    Args:
        q_tot_t: `[B, K]` the mixed chosen values (K = 1), or each agent's (K = N, no
            mixer).
        rewards_t: `[B, K]` the team's reward (K = 1) or each agent's.
        terminateds_t: `[B]` whether the transition ends in a termination (no bootstrap);
            bool or float. A truncated episode bootstraps.
        q_tot_tp1: `[B, K]` the mixed target values at t+1.
        mask: `[B, K]`, 1 for real entries, 0 for padded rows and absent agents; None:
            all real.
        importance_weights_t: `[B]` prioritized replay's weights; None: all 1.
        gamma: Discount factor.

    Returns:
        `(loss, stats)`: stats `td_error_abs`, `q_taken_mean`, `target_mean` (means over
        the real entries) and the per-row `td_error` `[B]` (the mean over the real
        entries of a row; the replay priorities).

    Raises:
        ValueError: For shapes that disagree.
    """
    q_tot_t = _check_rank("qmix_td_loss", "q_tot_t", q_tot_t, 2, "[B, K]")
    rewards_t = tf.cast(_check_rank("qmix_td_loss", "rewards_t", rewards_t, 2, "[B, K]"),
                        q_tot_t.dtype)
    q_tot_tp1 = _check_rank("qmix_td_loss", "q_tot_tp1", q_tot_tp1, 2, "[B, K]")
    for name, value in (("rewards_t", rewards_t), ("q_tot_tp1", q_tot_tp1)):
        if not value.shape.is_compatible_with(q_tot_t.shape):
            raise ValueError(f"qmix_td_loss(): {name} must have q_tot_t's shape "
                             f"{q_tot_t.shape}; received {value.shape}.")
    terminateds_t = _check_rank("qmix_td_loss", "terminateds_t", terminateds_t, 1, "[B]")
    not_done = 1.0 - tf.cast(terminateds_t, q_tot_t.dtype)[:, None]  # [B, 1]
    targets = tf.stop_gradient(rewards_t + gamma * not_done * q_tot_tp1)  # [B, K]
    mask = tf.ones_like(q_tot_t) if mask is None else tf.cast(mask, q_tot_t.dtype)
    td = (q_tot_t - targets) * mask  # [B, K]
    weights = (tf.ones_like(q_tot_t[:, 0]) if importance_weights_t is None
               else tf.cast(importance_weights_t, q_tot_t.dtype))  # [B]
    count = tf.maximum(tf.reduce_sum(mask), 1.0)
    loss = tf.reduce_sum(weights[:, None] * tf.square(td)) / count
    row_count = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)  # [B]
    stats = {
        "loss": loss,
        "td_error_abs": tf.reduce_sum(tf.abs(td)) / count,
        "q_taken_mean": tf.reduce_sum(q_tot_t * mask) / count,
        "target_mean": tf.reduce_sum(targets * mask) / count,
        "td_error": tf.reduce_sum(td, axis=1) / row_count,
    }
    return loss, stats


def qmix_sequence_td_loss(q_tot_t: tf.Tensor, rewards_t: tf.Tensor, terminateds_t: tf.Tensor,
                          q_tot_tp1: tf.Tensor, seq_mask: tf.Tensor,
                          agent_mask: Optional[tf.Tensor] = None,
                          importance_weights_t: Optional[tf.Tensor] = None, *, gamma: Scalar
                          ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """`qmix_td_loss` over `B` right-padded sequences of `T` steps.

    Args:
        q_tot_t: `[B, T, K]` the mixed chosen values (K = 1) or each agent's (K = N).
        rewards_t: `[B, T, K]`.
        terminateds_t: `[B, T]`, bool or float.
        q_tot_tp1: `[B, T, K]` the mixed target values of the next steps.
        seq_mask: `[B, T]`, 1 for a sequence's real steps, 0 for its padding.
        agent_mask: `[B, T, K]`, 0 for absent agents (no mixer); None: all present.
        importance_weights_t: `[B, T]` prioritized replay's weights; None: all 1.
        gamma: Discount factor.

    Returns:
        `(loss, stats)` as `qmix_td_loss`'s (the means over the real entries of all
        sequences), with `td_error` `[B, T]` (each step's mean over its real entries; 0 on
        padding).

    Raises:
        ValueError: For shapes that disagree.
    """
    name = "qmix_sequence_td_loss"
    q_tot_t = _check_rank(name, "q_tot_t", q_tot_t, 3, "[B, T, K]")
    seq_mask = _check_rank(name, "seq_mask", seq_mask, 2, "[B, T]")
    terminateds_t = _check_rank(name, "terminateds_t", terminateds_t, 2, "[B, T]")
    if not seq_mask.shape.is_compatible_with(q_tot_t.shape[:2]):
        raise ValueError(f"{name}(): seq_mask must be q_tot_t's [B, T] {q_tot_t.shape[:2]}; "
                         f"received {seq_mask.shape}.")
    shape = tf.shape(q_tot_t)  # [B, T, K]
    mask = tf.cast(seq_mask, q_tot_t.dtype)[:, :, None] * tf.ones_like(q_tot_t)  # [B, T, K]
    if agent_mask is not None:
        mask *= tf.cast(agent_mask, q_tot_t.dtype)

    def rows(x: tf.Tensor) -> tf.Tensor:  # [B, T, ...] -> [B * T, ...]
        x = tf.convert_to_tensor(x)
        return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))

    for label, value in (("rewards_t", rewards_t), ("q_tot_tp1", q_tot_tp1)):
        _check_rank(name, label, value, 3, "[B, T, K]")
    weights = None if importance_weights_t is None else rows(importance_weights_t)
    loss, stats = qmix_td_loss(rows(q_tot_t), rows(rewards_t), rows(terminateds_t),
                               rows(q_tot_tp1), rows(mask), weights, gamma=gamma)
    stats["td_error"] = tf.reshape(stats["td_error"], shape[:2])  # [B, T]
    return loss, stats
