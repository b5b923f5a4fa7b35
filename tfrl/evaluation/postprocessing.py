"""Returns and advantages of one trajectory: discounted sums, GAE, the value a truncated
trajectory is bootstrapped with, and n-step rewards.

`compute_gae_for_sample_batch(policy, batch)` is what the on-policy algorithms' policies
(PG, A2C/A3C, PPO) do to each trajectory: `bootstrap_value` gives `last_r` (0 after a
termination, else the policy's value of the observation after the last step), then
`compute_advantages` adds `advantages` and `value_targets` with the policy's `gamma`,
`lambda`, `use_gae` and `use_critic`.

Reference: Schulman et al., "High-Dimensional Continuous Control Using Generalized
Advantage Estimation", ICLR 2016 (https://arxiv.org/abs/1506.02438).
"""

from typing import Any

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch


class Postprocessing:
    """Names of the columns that postprocessing adds."""

    ADVANTAGES = Columns.ADVANTAGES
    VALUE_TARGETS = Columns.VALUE_TARGETS


def discount_cumsum(x: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted cumulative sum along axis 0: `y[t] = sum_k gamma**k * x[t + k]`.

    Args:
        x: Array of shape [T, ...].
        gamma: Discount factor.

    Returns:
        Array of the same shape and dtype (float64 for integer input).

    Example:
        >>> discount_cumsum(np.array([1.0, 1.0, 1.0]), 0.5).tolist()
        [1.75, 1.5, 1.0]
    """
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"discount_cumsum() needs an array of shape [T, ...]; received a scalar {x!r}.")
    out = np.empty(x.shape, dtype=np.result_type(x.dtype, np.float64) if x.dtype.kind in "iub" else x.dtype)
    running = np.zeros(x.shape[1:], dtype=np.float64)
    for t in range(len(x) - 1, -1, -1):
        running = x[t] + gamma * running
        out[t] = running
    return out


def compute_advantages(
    rollout: SampleBatch,
    last_r: float,
    gamma: float = 0.9,
    lambda_: float = 1.0,
    use_gae: bool = True,
    use_critic: bool = True,
) -> SampleBatch:
    """Adds `advantages` and `value_targets` to a batch of one trajectory, in place.

    With GAE: `delta_t = r_t + gamma * V(s_t+1) - V(s_t)`, advantages are the
    `gamma * lambda_` discounted sums of `delta`, value targets `advantages + V`.
    Without GAE: the discounted return `G_t` (bootstrapped with `last_r`); with a
    critic, advantages `G_t - V(s_t)` and value targets `G_t`; without a critic,
    advantages `G_t` and value targets zeros.

    Args:
        rollout: One trajectory with `rewards` (and `vf_preds` if `use_critic`).
        last_r: Value of the observation after the last step; 0.0 if the episode
            terminated (not merely truncated).
        gamma: Discount factor.
        lambda_: GAE parameter.
        use_gae: Use generalized advantage estimation.
        use_critic: Use the critic's values (`vf_preds`) as a baseline.

    Returns:
        `rollout`, with float32 `advantages` and `value_targets` of shape [T].

    Raises:
        ValueError: If `vf_preds` are missing while `use_critic`, if `use_gae`
            without `use_critic`, or if the columns are not 1-D of equal length.
    """
    if use_gae and not use_critic:
        raise ValueError("Can't use gae without using a value function: pass use_critic=True.")
    if Columns.REWARDS not in rollout:
        raise ValueError(
            f"compute_advantages() needs a 'rewards' column; received columns {sorted(rollout.keys())}."
        )
    if use_critic and Columns.VF_PREDS not in rollout:
        raise ValueError(
            "use_critic=True but values not found: the batch needs a 'vf_preds' column "
            f"(received {sorted(rollout.keys())}), or pass use_critic=False."
        )
    rewards = np.asarray(rollout[Columns.REWARDS], dtype=np.float64)  # [T]
    if rewards.ndim != 1:
        raise ValueError(f"compute_advantages() needs rewards of shape [T]; received {rewards.shape}.")
    last_r = float(np.asarray(last_r).reshape(()))

    if use_critic:
        vf_preds = np.asarray(rollout[Columns.VF_PREDS], dtype=np.float64)  # [T]
        if vf_preds.shape != rewards.shape:
            raise ValueError(
                f"vf_preds {vf_preds.shape} and rewards {rewards.shape} must have the same shape."
            )
    if use_gae:
        v_t = np.append(vf_preds, last_r)  # [T + 1]
        delta_t = rewards + gamma * v_t[1:] - v_t[:-1]
        advantages = discount_cumsum(delta_t, gamma * lambda_)
        value_targets = advantages + vf_preds
    else:
        returns = discount_cumsum(np.append(rewards, last_r), gamma)[:-1]
        if use_critic:
            advantages = returns - vf_preds
            value_targets = returns
        else:
            advantages = returns
            value_targets = np.zeros_like(advantages)
    rollout[Postprocessing.ADVANTAGES] = advantages.astype(np.float32)
    rollout[Postprocessing.VALUE_TARGETS] = value_targets.astype(np.float32)
    return rollout


def bootstrap_value(policy: Any, batch: Any) -> float:
    """`last_r` for the trajectory `batch`.

    0.0 if its last step terminated the episode (and `no_done_at_end` is off);
    otherwise the policy's value estimate of `new_obs[-1]`, with the recurrent state
    after the last step.
    """
    terminateds = batch.get(Columns.TERMINATEDS)
    if terminateds is None:  # legacy batches carry only `dones`
        terminateds = batch.get(Columns.DONES)
    terminated = terminateds is not None and len(terminateds) > 0 and bool(terminateds[-1])
    if terminated and not policy.config["no_done_at_end"]:
        return 0.0
    next_obs = batch[Columns.NEXT_OBS][-1:]
    states = []
    i = 0
    while f"state_out_{i}" in batch:
        states.append(np.asarray(batch[f"state_out_{i}"][-1:]))
        i += 1
    kwargs = {}
    if Columns.ACTIONS in batch:
        kwargs["prev_action_batch"] = batch[Columns.ACTIONS][-1:]
    if Columns.REWARDS in batch:
        kwargs["prev_reward_batch"] = batch[Columns.REWARDS][-1:]
    if hasattr(policy, "value"):
        return float(np.asarray(policy.value(next_obs, states or None, **kwargs))[0])
    _, _, extras = policy.compute_actions(next_obs, states or None, explore=False, **kwargs)
    return float(extras[Columns.VF_PREDS][0])


def compute_gae_for_sample_batch(policy: Any, sample_batch: SampleBatch,
                                 other_agent_batches: Any = None, episode: Any = None
                                 ) -> SampleBatch:
    """Adds `advantages` and `value_targets` to one trajectory of `policy` (RLlib's name).

    `last_r` is `bootstrap_value(policy, sample_batch)` with a critic, else 0.0 (no value
    to bootstrap with, RLlib's PG); then `compute_advantages` with the policy config's
    `gamma`, `lambda`, `use_gae` and `use_critic`.
    """
    config = policy.config
    last_r = bootstrap_value(policy, sample_batch) if config["use_critic"] else 0.0
    return compute_advantages(sample_batch, last_r, config["gamma"], config["lambda"],
                              use_gae=config["use_gae"], use_critic=config["use_critic"])


class MalformedTrajectoryError(ValueError, AssertionError):
    """A batch that is not one trajectory: an episode ends before its last row.

    A ValueError (bad input) that is also an AssertionError, the type RLlib's
    `adjust_nstep` raises, so code written against either catches it.
    """


def adjust_nstep(n_step: int, gamma: float, batch: SampleBatch) -> None:
    """Rewrites one trajectory, in place, for n-step TD targets (Ape-X, DQN, DDPG).

    Row `t` afterwards holds `r_t + gamma r_{t+1} + ... + gamma^{n-1} r_{t+n-1}` (cut at
    the trajectory's end), the observation `n` steps later as `new_obs` (the last
    `new_obs` where fewer than `n` steps remain), and the terminated/truncated flags of
    step `t + n - 1` (of the last step where fewer remain). Observations and actions are
    unchanged.

    Args:
        n_step: The number of steps `n` (>= 1).
        gamma: Discount factor.
        batch: One trajectory: `obs`, `new_obs`, `rewards` and `terminateds` and
            `truncateds` (or RLlib 1.x's `dones`), with no episode end before the last row.

    Raises:
        MalformedTrajectoryError: If an episode ends before the last row.
        ValueError: If `n_step` < 1 or a column is missing.

    Example:
        >>> b = SampleBatch({"obs": [0, 1, 2], "new_obs": [1, 2, 3],
        ...                  "rewards": [1.0, 1.0, 1.0], "terminateds": [0, 0, 1],
        ...                  "truncateds": [0, 0, 0]})
        >>> adjust_nstep(2, 0.5, b)
        >>> b["rewards"].tolist(), b["new_obs"].tolist(), b["terminateds"].tolist()
        ([1.5, 1.5, 1.0], [2, 3, 3], [0, 1, 1])
    """
    if int(n_step) < 1:
        raise ValueError(f"adjust_nstep() needs n_step >= 1; received {n_step!r}.")
    n_step = int(n_step)
    flag_keys = [k for k in (Columns.TERMINATEDS, Columns.TRUNCATEDS) if k in batch]
    if not flag_keys and Columns.DONES in batch:
        flag_keys = [Columns.DONES]
    missing = [k for k in (Columns.OBS, Columns.NEXT_OBS, Columns.REWARDS) if k not in batch]
    if missing or not flag_keys:
        raise ValueError(
            f"adjust_nstep() needs the columns obs, new_obs, rewards and terminateds/"
            f"truncateds (or dones); missing {missing or ['terminateds']} in "
            f"{sorted(batch.keys())}."
        )
    for key in flag_keys:
        if np.any(np.asarray(batch[key])[:-1]):
            flag = "done" if key == Columns.DONES else "terminated|truncated"
            raise MalformedTrajectoryError(
                f"Unexpected {flag} in middle of trajectory: adjust_nstep() "
                f"needs one trajectory per batch, but {key!r} is set before the last row "
                f"({np.asarray(batch[key]).tolist()}). Split the batch by episode first."
            )
    length = len(np.asarray(batch[Columns.REWARDS]))
    tail = min(n_step, length)
    obs, next_obs = np.asarray(batch[Columns.OBS]), np.asarray(batch[Columns.NEXT_OBS])
    batch[Columns.NEXT_OBS] = np.concatenate(
        [obs[n_step:], np.stack([next_obs[-1]] * tail)], axis=0)
    for key in flag_keys:
        flags = np.asarray(batch[key])
        batch[key] = np.concatenate(
            [flags[n_step - 1:], np.repeat(flags[-1:], min(n_step - 1, length))], axis=0)
    rewards = np.asarray(batch[Columns.REWARDS])
    if rewards.dtype.kind not in "fc":
        rewards = rewards.astype(np.float64)
    summed = rewards.copy()
    for j in range(1, n_step):
        summed[:length - j] += gamma ** j * rewards[j:]
    batch[Columns.REWARDS] = summed
