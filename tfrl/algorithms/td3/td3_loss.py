"""TD3's and DDPG's losses as pure functions of Q-values, actions and hyperparameters.

Lillicrap et al., "Continuous control with deep reinforcement learning", 2015,
https://arxiv.org/abs/1509.02971 (DDPG: a deterministic actor `mu`, one critic, target
networks); Fujimoto et al., "Addressing Function Approximation Error in Actor-Critic
Methods", 2018, https://arxiv.org/abs/1802.09477 (TD3: twin critics and their minimum,
target policy smoothing, delayed policy updates). Per replayed row `t`:

    a'_t   = clip(mu'(s_{t+k}) + clip(target_noise * eps_t, -c, c), low, high)
             (target policy smoothing, eps_t ~ N(0, I); DDPG: a'_t = mu'(s_{t+k}))
    y_t    = R_t + gamma ** k_t * (1 - terminated_t) * min(Q'_1, Q'_2)(s_{t+k}, a'_t)
             (DDPG: Q'_1 alone)
    critic = sum_i mean_t w_t * huber(Q_i(s_t, a_t) - y_t)              (td_math)
    actor  = -mean_t Q_1(s_t, mu(s_t))

The actor loss is differentiated with respect to the actor's variables only (its
gradient reaches `mu` through the action fed to `Q_1`; it reaches the critic's weights
too, which the actor's optimizer does not update). The policy decides when the actor
learns (every `policy_delay` critic updates) and draws `eps_t` (so these functions stay
deterministic and testable).
"""

from typing import Any, Dict, Iterable, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from tfrl.algorithms.loss_math import global_mean, local_mean
from tfrl.algorithms.td_math import Scalar, bootstrapped_target, check_rows, critic_loss

__all__ = ["l2_penalty", "smoothed_target_action", "td3_actor_loss", "td3_critic_loss",
           "td3_q_target"]

#: The critics' loss is the shared TD regression (twin critics, Huber, importance weights).
td3_critic_loss = critic_loss


def smoothed_target_action(target_actions: tf.Tensor, noise: tf.Tensor, *,
                           target_noise: Scalar, target_noise_clip: Scalar, low: Any,
                           high: Any) -> tf.Tensor:
    """`clip(mu'(s') + clip(target_noise * noise, -c, c), low, high)`, `[B, A]`.

    Args:
        target_actions: `mu'(s_{t+k})` of the target actor, `[B, A]`.
        noise: Standard normal draws, `[B, A]` (e.g. `tf.random.normal(tf.shape(a))`).
        target_noise: The smoothing noise's standard deviation (>= 0).
        target_noise_clip: `c`, the bound on the noise's magnitude (>= 0).
        low, high: The action bounds (scalars or `[A]`), `low < high`.

    Returns:
        The smoothed actions, gradient stopped (they only feed the target).

    Raises:
        ValueError: For actions not float `[B, A]`, noise of another shape or dtype, a
            negative noise scale or clip (Python numbers), or bounds with `low >= high`.
    """
    target_actions = tf.convert_to_tensor(target_actions)
    noise = tf.convert_to_tensor(noise)
    if target_actions.shape.rank != 2 or not target_actions.dtype.is_floating:
        raise ValueError("smoothed_target_action(): target_actions must be a float tensor "
                         f"[B, A]; received {target_actions.dtype.name} of shape "
                         f"{target_actions.shape}.")
    if noise.dtype != target_actions.dtype or not noise.shape.is_compatible_with(
            target_actions.shape):
        raise ValueError("smoothed_target_action(): noise must have the dtype and shape of "
                         f"target_actions; received {noise.dtype.name} {noise.shape} and "
                         f"{target_actions.dtype.name} {target_actions.shape}.")
    for name, value in (("target_noise", target_noise),
                        ("target_noise_clip", target_noise_clip)):
        if isinstance(value, (int, float)) and not value >= 0:
            raise ValueError(f"smoothed_target_action(): {name} must be >= 0; received "
                             f"{value!r}.")
    low_np, high_np = np.asarray(low, np.float64), np.asarray(high, np.float64)
    if np.any(low_np >= high_np) or not np.all(np.isfinite(high_np - low_np)):
        raise ValueError("smoothed_target_action(): the action bounds must be finite with "
                         f"low < high; received low={low!r}, high={high!r}.")
    dtype = target_actions.dtype
    clip = tf.cast(target_noise_clip, dtype)
    eps = tf.clip_by_value(tf.cast(target_noise, dtype) * noise, -clip, clip)
    smoothed = tf.clip_by_value(target_actions + eps, tf.constant(low_np, dtype),
                                tf.constant(high_np, dtype))
    return tf.stop_gradient(smoothed)


def td3_q_target(rewards_t: tf.Tensor, terminateds_t: tf.Tensor, q_tp1_t: tf.Tensor,
                 twin_q_tp1_t: Optional[tf.Tensor] = None, *, gamma: Scalar,
                 n_step: Union[int, tf.Tensor] = 1) -> tf.Tensor:
    """`y_t` with `min(Q'_1, Q'_2)` (TD3) or `Q'_1` (DDPG, `twin_q_tp1_t` None), `[B]`,
    gradient stopped.

    Args:
        rewards_t: `R_t`, `[B]` float (n-step discounted reward sums).
        terminateds_t: `[B]` bool or float; terminated rows do not bootstrap.
        q_tp1_t: `Q'_1(s_{t+k}, a'_t)` of the target critic at the (smoothed) target
            action, `[B]`.
        twin_q_tp1_t: `Q'_2(s_{t+k}, a'_t)`, `[B]`, or None.
        gamma, n_step: As for `td_math.bootstrapped_target`.

    Raises:
        TypeError, ValueError: For non-float tensors or shapes other than one `[B]`.
    """
    q_tp1_t, twin_q_tp1_t = check_rows(
        "td3_q_target", {"q_tp1_t": q_tp1_t, "twin_q_tp1_t": twin_q_tp1_t})
    next_q = q_tp1_t if twin_q_tp1_t is None else tf.minimum(q_tp1_t, twin_q_tp1_t)
    return bootstrapped_target(rewards_t, terminateds_t, next_q, gamma=gamma, n_step=n_step)


def td3_actor_loss(q_t: tf.Tensor) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """The deterministic actor's loss `-mean_t Q_1(s_t, mu(s_t))`.

    Args:
        q_t: `Q_1(s_t, mu(s_t))`, `[B]`, computed from the online actor's actions.

    Returns:
        `(loss, stats)`: stats `actor_loss` and `mean_q_pi` (the mean of `q_t`).

    Raises:
        TypeError, ValueError: For `q_t` not a float `[B]`.
    """
    (q_t,) = check_rows("td3_actor_loss", {"q_t": q_t})
    stats = {"actor_loss": -local_mean(q_t), "mean_q_pi": local_mean(q_t)}
    return -global_mean(q_t), stats


def l2_penalty(variables: Iterable[tf.Variable], l2_reg: Optional[float]) -> tf.Tensor:
    """`l2_reg * sum_w ||w||^2 / 2` over the kernels among `variables` (biases, named
    "bias", are not penalized), RLlib's `l2_reg` term added to DDPG's actor and critic
    losses; 0 for `l2_reg` None or 0.

    Args:
        variables: A network's variables (e.g. `actor.trainable_variables`).
        l2_reg: The weight (>= 0) or None.

    Raises:
        ValueError: For a negative or non-finite `l2_reg`.
    """
    if l2_reg is not None and not (0.0 <= float(l2_reg) < float("inf")):
        raise ValueError(f"l2_penalty(): l2_reg must be None or a finite number >= 0; "
                         f"received {l2_reg!r}.")
    kernels = [v for v in variables if "bias" not in getattr(v, "path", v.name)]
    if not l2_reg or not kernels:
        return tf.constant(0.0)
    return tf.cast(l2_reg, kernels[0].dtype) * tf.add_n([tf.nn.l2_loss(v) for v in kernels])
