"""R2D2's loss as pure functions of Q-values over replayed sequences.

Kapturowski et al., "Recurrent Experience Replay in Distributed Reinforcement Learning",
ICLR 2019: Q-learning on replayed sequences of a recurrent network, with n-step double-Q
targets, value rescaling and a burn-in prefix. Value rescaling is Pohlen et al.,
"Observe and Look Further: Achieving Consistent Performance on Atari", 2018:

    h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x
    h^-1(x)   = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)

A batch holds `B` sequences of `T` (padded) steps; sequence `b` has `L_b = seq_lens[b]`
real steps. The Q-values come for `T + 1` states: `s_0 .. s_{L-1}` and, at index `L`,
the `new_obs` of the last real step (the policy appends it to the unroll), so that every
real step has a state to bootstrap from. For step `t < L`, `k_t = min(n, L - t)` steps
ahead, stopping early at a termination:

    R_t      = sum_{i < k_t} gamma^i r_{t+i}
    a*_t     = argmax_a Q_online(s_{t+k_t}, a)      (double Q; else argmax of Q_target)
    y_t      = h(R_t + (1 - d_t) gamma^k_t h^-1(Q_target(s_{t+k_t}, a*_t)))
    loss     = mean over real steps t >= burn_in of w_t huber(Q(s_t, a_t) - y_t)

where `d_t` is 1 if a step among the `k_t` terminated the episode (a truncated episode
is not terminated: it bootstraps). Without value rescaling `h` is the identity. The
first `burn_in` steps of each sequence only warm up the recurrent state.
"""

from typing import Dict, Optional, Tuple

import tensorflow as tf

from tfrl.algorithms.loss_math import global_mean, local_mean
from tfrl.algorithms.td_math import huber_loss

__all__ = ["h_function", "h_inverse", "r2d2_loss", "sequence_targets"]


def h_function(x: tf.Tensor, epsilon: float = 1e-3) -> tf.Tensor:
    """`h(x) = sign(x) (sqrt(|x| + 1) - 1) + epsilon x`, elementwise.

    Example:
        >>> round(float(h_function(3.0, epsilon=0.0)), 6), round(float(h_function(-3.0)), 6)
        (1.0, -1.003)
    """
    x = tf.convert_to_tensor(x, tf.float32)
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + epsilon * x


def h_inverse(x: tf.Tensor, epsilon: float = 1e-3) -> tf.Tensor:
    """The inverse of `h_function` (closed form; `epsilon=0`: `sign(x) ((|x| + 1)^2 - 1)`).

    Example:
        >>> round(float(h_inverse(1.0, epsilon=0.0)), 6), round(float(h_inverse(-1.003)), 3)
        (3.0, -3.0)
    """
    x = tf.convert_to_tensor(x, tf.float32)
    if epsilon == 0.0:
        return tf.sign(x) * (tf.square(tf.abs(x) + 1.0) - 1.0)
    root = (tf.sqrt(1.0 + 4.0 * epsilon * (tf.abs(x) + 1.0 + epsilon)) - 1.0) / (2.0 * epsilon)
    return tf.sign(x) * (tf.square(root) - 1.0)


def _check(q_online: tf.Tensor, q_target: tf.Tensor, rewards: tf.Tensor,
           terminateds: tf.Tensor, seq_lens: tf.Tensor
           ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    q_online = tf.convert_to_tensor(q_online)
    q_target = tf.convert_to_tensor(q_target)
    rewards = tf.convert_to_tensor(rewards)
    for name, q in (("q_online", q_online), ("q_target", q_target)):
        if q.shape.rank != 3 or not q.dtype.is_floating:
            raise ValueError(f"r2d2_loss(): {name} must be float Q-values [B, T + 1, "
                             f"num_actions]; received {q.dtype.name} of shape {q.shape}.")
    if rewards.shape.rank != 2 or not rewards.dtype.is_floating:
        raise ValueError(f"r2d2_loss(): rewards must be float [B, T]; received "
                         f"{rewards.dtype.name} of shape {rewards.shape}.")
    steps, q_steps = rewards.shape[1], q_target.shape[1]
    if steps is not None and q_steps is not None and q_steps != steps + 1:
        raise ValueError(f"r2d2_loss(): the Q-values need T + 1 = {steps + 1} states per "
                         f"sequence (the last real step's new_obs appended); received "
                         f"{q_steps} for rewards of shape {rewards.shape}.")
    terminateds = tf.cast(tf.convert_to_tensor(terminateds), tf.bool)
    seq_lens = tf.cast(tf.convert_to_tensor(seq_lens), tf.int32)
    return q_online, q_target, rewards, terminateds, seq_lens


def sequence_targets(q_target: tf.Tensor, q_online: Optional[tf.Tensor], rewards: tf.Tensor,
                     terminateds: tf.Tensor, seq_lens: tf.Tensor, *, gamma: float,
                     n_step: int = 1, h_epsilon: Optional[float] = 1e-3
                     ) -> Tuple[tf.Tensor, tf.Tensor]:
    """The targets `y_t` of the module docstring, gradient stopped, and the real steps.

    Args:
        q_target: `Q_target(s_0 .. s_T, .)`, `[B, T + 1, num_actions]` (index `L_b`: the
            state after sequence `b`'s last real step).
        q_online: `Q_online` of the same states for double Q (its argmax picks `a*`);
            None: the target network picks.
        rewards: `[B, T]` float.
        terminateds: `[B, T]` bool (or 0/1): the step ended the episode.
        seq_lens: `[B]` int, the real steps per sequence (`L_b <= T`).
        gamma: Discount factor.
        n_step: Steps summed before bootstrapping (fewer at a sequence's end).
        h_epsilon: Value rescaling's epsilon; None: no rescaling.

    Returns:
        `(targets [B, T], real [B, T] bool)`; targets at padded steps are meaningless.
    """
    q_online_in = q_target if q_online is None else q_online
    q_online_in, q_target, rewards, terminateds, seq_lens = _check(
        q_online_in, q_target, rewards, terminateds, seq_lens)
    num_steps = tf.shape(rewards)[1]
    index = tf.range(num_steps)[None, :]  # [1, T]
    real = index < seq_lens[:, None]  # [B, T]
    ret = tf.zeros_like(rewards)  # R_t
    steps = tf.zeros_like(index + seq_lens[:, None])  # k_t, [B, T]
    running = real  # still summing rewards: no termination yet, inside the sequence
    ended = tf.zeros_like(real)  # d_t
    for i in range(int(n_step)):
        # Step t + i (zeros past the padded end).
        r_i = tf.concat([rewards[:, i:], tf.zeros_like(rewards[:, :i])], axis=1)
        term_i = tf.concat([terminateds[:, i:], tf.zeros_like(terminateds[:, :i])], axis=1)
        inside = index + i < seq_lens[:, None]
        take = running & inside
        ret += tf.where(take, gamma ** i * r_i, 0.0)
        steps += tf.cast(take, tf.int32)
        ended |= take & term_i
        running = take & ~term_i
    boot = tf.minimum(index + steps, num_steps)  # [B, T], index into the T + 1 states
    q_boot_target = tf.gather(q_target, boot, axis=1, batch_dims=1)  # [B, T, A]
    chooser = q_boot_target if q_online is None else tf.gather(q_online_in, boot, axis=1,
                                                               batch_dims=1)
    best = tf.argmax(chooser, axis=-1, output_type=tf.int32)  # [B, T]
    q_best = tf.gather(q_boot_target, best, axis=2, batch_dims=2)  # [B, T]
    if h_epsilon is not None:
        q_best = h_inverse(q_best, h_epsilon)
    discount = tf.pow(tf.cast(gamma, rewards.dtype), tf.cast(steps, rewards.dtype))
    targets = ret + tf.where(ended, 0.0, discount * q_best)
    if h_epsilon is not None:
        targets = h_function(targets, h_epsilon)
    return tf.stop_gradient(targets), real


def r2d2_loss(q_online: tf.Tensor, q_target: tf.Tensor, actions: tf.Tensor,
              rewards: tf.Tensor, terminateds: tf.Tensor, seq_lens: tf.Tensor,
              importance_weights: Optional[tf.Tensor] = None, *, gamma: float,
              n_step: int = 1, burn_in: int = 0, h_epsilon: Optional[float] = 1e-3,
              double_q: bool = True, huber_delta: Optional[float] = 1.0
              ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """R2D2's loss (see the module docstring) and its statistics.

    Args:
        q_online: `Q(s_0 .. s_T, .)` of the online network, `[B, T + 1, num_actions]`
            (gradients flow through its first `T` states).
        q_target: The target network's, same shape.
        actions: `[B, T]` int, the actions taken.
        rewards, terminateds, seq_lens, gamma, n_step, h_epsilon: As for
            `sequence_targets`.
        importance_weights: `[B, T]` per-step weights; None: all 1.
        burn_in: Leading steps of each sequence without loss.
        double_q: The online network picks the bootstrap action.
        huber_delta: The Huber loss's threshold; None: the squared error `0.5 delta**2`.

    Returns:
        `(loss, stats)`: `loss` this replica's share of the global-batch mean over the
        trained steps (real, past the burn-in); `stats` means over this replica's
        trained steps: `mean_q` (of `Q(s_t, a_t)`), `mean_td_error`, `mean_abs_td_error`.

    Raises:
        ValueError: For Q-values not `[B, T + 1, num_actions]` or rewards not `[B, T]`.
    """
    targets, real = sequence_targets(
        q_target, tf.stop_gradient(q_online) if double_q else None, rewards, terminateds,
        seq_lens, gamma=gamma, n_step=n_step, h_epsilon=h_epsilon)
    q_t = tf.convert_to_tensor(q_online)[:, :-1]  # [B, T, A]
    q_selected = tf.gather(q_t, tf.cast(actions, tf.int32), axis=2, batch_dims=2)  # [B, T]
    trained = real & (tf.range(tf.shape(real)[1])[None, :] >= burn_in)  # [B, T]
    delta = q_selected - targets
    per_step = 0.5 * tf.square(delta) if huber_delta is None else huber_loss(delta,
                                                                            huber_delta)
    if importance_weights is not None:
        per_step = tf.cast(importance_weights, per_step.dtype) * per_step
    stats = {"mean_q": local_mean(q_selected, trained),
             "mean_td_error": local_mean(delta, trained),
             "mean_abs_td_error": local_mean(tf.abs(delta), trained)}
    return global_mean(per_step, trained), stats
