"""Returns and advantages of a time-major batch of trajectories, in TensorFlow.

The in-graph training path's form of `tfrl.evaluation.postprocessing.compute_advantages`
(which works on one numpy trajectory): the same quantities for `[T, N]` steps of `N`
environments, where a trajectory of an environment ends after step `t` wherever
`cut_t` is set (its episode ended, or the rollout did). The numbers equal
`compute_advantages` on each trajectory cut out of the batch (float32 against float64:
within rounding; `tests/test_in_graph.py` checks it).

Per environment, with `V_t` the sampled values (`vf_preds`) and `last_r_t` the value a
trajectory ending after step `t` is bootstrapped with (0 after a termination):

    v_next_t = last_r_t if cut_t else V_{t+1}
    GAE:      delta_t = r_t + gamma * v_next_t - V_t
              A_t = delta_t + gamma * lambda * (1 - cut_t) * A_{t+1},   targets A_t + V_t
    no GAE:   G_t = r_t + gamma * (last_r_t if cut_t else G_{t+1})
              with a critic: A_t = G_t - V_t, targets G_t; without: A_t = G_t, targets 0

Reference: Schulman et al., "High-Dimensional Continuous Control Using Generalized
Advantage Estimation", ICLR 2016 (https://arxiv.org/abs/1506.02438).

Example:
    >>> import tensorflow as tf
    >>> r = tf.constant([[1.0], [1.0], [1.0]])  # [T=3, N=1]
    >>> zeros, cut = tf.zeros([3, 1]), tf.constant([[False], [False], [True]])
    >>> adv, targets = time_major_advantages(r, zeros, zeros, cut, gamma=0.5, lambda_=1.0,
    ...                                      use_gae=False, use_critic=False)
    >>> adv.numpy()[:, 0].tolist()
    [1.75, 1.5, 1.0]
"""

from typing import Tuple

import tensorflow as tf


def time_major_advantages(rewards_t: tf.Tensor, vf_preds_t: tf.Tensor,
                          last_r_t: tf.Tensor, cut_t: tf.Tensor, *, gamma: float,
                          lambda_: float, use_gae: bool = True, use_critic: bool = True
                          ) -> Tuple[tf.Tensor, tf.Tensor]:
    """`(advantages, value_targets)`, each `[T, N]` float32 (see the module docstring).

    Args:
        rewards_t: `[T, N]` rewards.
        vf_preds_t: `[T, N]` values `V(s_t)` as sampled (unused without a critic).
        last_r_t: `[T, N]` the bootstrap value of a trajectory that ends after step
            `t` (read only where `cut_t`): 0.0 after a termination, else the value of
            the observation the step reached.
        cut_t: `[T, N]` bool: the trajectory ends after step `t` (an episode ended
            there, or `t` is the rollout's last step).
        gamma: Discount factor.
        lambda_: GAE parameter.
        use_gae: Generalized advantage estimation; else discounted returns.
        use_critic: Use `vf_preds_t` as a baseline.

    Raises:
        ValueError: If `use_gae` without `use_critic`, or the tensors are not `[T, N]`
            of one shape.
    """
    if use_gae and not use_critic:
        raise ValueError("time_major_advantages(): use_gae=True needs use_critic=True "
                         "(GAE uses the value function).")
    rewards_t = tf.convert_to_tensor(rewards_t, tf.float32)
    vf_preds_t = tf.convert_to_tensor(vf_preds_t, tf.float32)
    last_r_t = tf.convert_to_tensor(last_r_t, tf.float32)
    cut_t = tf.convert_to_tensor(cut_t, tf.bool)
    for name, x in (("vf_preds_t", vf_preds_t), ("last_r_t", last_r_t), ("cut_t", cut_t)):
        if x.shape.rank != 2 or not x.shape.is_compatible_with(rewards_t.shape):
            raise ValueError(f"time_major_advantages(): {name} must be [T, N] like "
                             f"rewards_t {rewards_t.shape.as_list()}; received "
                             f"{x.shape.as_list()}.")
    cut = tf.cast(cut_t, tf.float32)
    if use_gae:
        # V_{t+1} within a trajectory; the last step of the rollout is always cut.
        v_tp1 = tf.concat([vf_preds_t[1:], tf.zeros_like(vf_preds_t[:1])], axis=0)
        v_next = cut * last_r_t + (1.0 - cut) * v_tp1
        delta_t = rewards_t + gamma * v_next - vf_preds_t
        advantages = _reverse_discounted_sum(delta_t, gamma * lambda_ * (1.0 - cut))
        return advantages, advantages + vf_preds_t
    # G_t = r_t + gamma * cut_t * last_r_t + gamma * (1 - cut_t) * G_{t+1}.
    returns = _reverse_discounted_sum(rewards_t + gamma * cut * last_r_t,
                                      gamma * (1.0 - cut))
    if use_critic:
        return returns - vf_preds_t, returns
    return returns, tf.zeros_like(returns)


def _reverse_discounted_sum(x_t: tf.Tensor, discount_t: tf.Tensor) -> tf.Tensor:
    """`y_t = x_t + discount_t * y_{t+1}` (with `y_T = 0`) over the leading axis."""
    return tf.scan(lambda y_tp1, xd: xd[0] + xd[1] * y_tp1, (x_t, discount_t),
                   initializer=tf.zeros_like(x_t[0]), reverse=True)
