"""OffPolicyEstimator: the value of a target policy estimated from logged episodes.

Logged data (from a behavior policy) holds, per step, the observation, the action taken,
its probability under the behavior policy (`action_prob`) and the reward. An estimator
computes, per episode, `v_behavior` (the discounted return that was logged) and
`v_target` (an estimate of the discounted return the target policy would get);
`v_gain = v_target / v_behavior`. Through `input_evaluation`, a RolloutWorker feeds each
sampled batch to `process`, and `get_metrics()` hands the estimates to the result dict's
`off_policy_estimator` entry (the mean over the episodes of each metric).

The target policy's action probabilities come from `policy.action_probs(obs)` when the
policy has that method, otherwise from `policy.compute_actions(obs, explore=False)`'s
`action_dist_inputs` (softmax logits: Discrete action spaces).
"""

import abc
import collections
from typing import Any, Dict, List

import gymnasium as gym
import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch

OffPolicyEstimate = collections.namedtuple("OffPolicyEstimate", ["estimator_name", "metrics"])


def action_probs(policy: Any, obs: Any) -> np.ndarray:
    """`pi(. | s)` of the target policy for each row of `obs`, `[B, num_actions]`.

    Raises:
        ValueError: If the policy's action space is not Discrete (and it has no
            `action_probs` method).
    """
    own = getattr(policy, "action_probs", None)
    if callable(own):
        return np.asarray(own(obs), dtype=np.float64)
    if not isinstance(policy.action_space, gym.spaces.Discrete):
        raise ValueError(
            "Off-policy estimation needs the target policy's action probabilities; tfrl "
            f"computes them for Discrete action spaces only; this policy has "
            f"{policy.action_space}. Give the policy an `action_probs(obs) -> [B, n]` method.")
    _, _, extras = policy.compute_actions(obs, explore=False)
    logits = np.asarray(extras[Columns.ACTION_DIST_INPUTS], dtype=np.float64)
    logits = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=-1, keepdims=True)


def target_action_prob(policy: Any, batch: SampleBatch) -> np.ndarray:
    """`pi(a_t | s_t)` of the logged actions under the target policy, `[T]`."""
    probs = action_probs(policy, batch[Columns.OBS])
    actions = np.asarray(batch[Columns.ACTIONS]).astype(np.int64)
    return probs[np.arange(len(actions)), actions]


class OffPolicyEstimator(abc.ABC):
    """Estimates a policy's value from episodes of another policy's data.

    Args:
        policy: The target policy.
        gamma: The discount factor.

    Attributes:
        name: The key of the estimates in `off_policy_estimator` ("is", "wis", ...).
    """

    name = "base"

    def __init__(self, policy: Any, gamma: float):
        if not 0.0 <= float(gamma) <= 1.0:
            raise ValueError(f"{type(self).__name__}: gamma must be in [0, 1]; received {gamma!r}.")
        self.policy = policy
        self.gamma = float(gamma)
        self.new_estimates: List[OffPolicyEstimate] = []

    def check_can_estimate_for(self, batch: SampleBatch) -> None:
        """Raises a ValueError if `batch` lacks a column the estimator needs."""
        need = (Columns.OBS, Columns.ACTIONS, Columns.REWARDS, Columns.ACTION_PROB)
        missing = [c for c in need if c not in batch]
        if missing:
            raise ValueError(
                f"{type(self).__name__} needs the columns {list(need)}; the batch lacks "
                f"{missing} (it has {sorted(batch.keys())}). Log `action_prob`, the behavior "
                "policy's probability of each action.")

    def batch_arrays(self, batch: SampleBatch) -> Dict[str, np.ndarray]:
        """Per-row model outputs for a whole batch in one call each (`[B]` arrays):
        `new_prob`, the target policy's probability of the logged action."""
        return {"new_prob": target_action_prob(self.policy, batch)}

    @abc.abstractmethod
    def estimate_from_arrays(self, episode: SampleBatch,
                             arrays: Dict[str, np.ndarray]) -> Dict[str, float]:
        """`{"v_behavior": ..., "v_target": ...}` of one episode, given its rows of
        `batch_arrays`."""

    def estimate_on_single_episode(self, episode: SampleBatch) -> Dict[str, float]:
        """`{"v_behavior": ..., "v_target": ...}` of one episode."""
        return self.estimate_from_arrays(episode, self.batch_arrays(episode))

    def _episode_values(self, batch: SampleBatch) -> List[Dict[str, float]]:
        arrays = self.batch_arrays(batch)
        values, start = [], 0
        for episode in batch.split_by_episode():
            end = start + len(episode)
            values.append(self.estimate_from_arrays(
                episode, {k: v[start:end] for k, v in arrays.items()}))
            start = end
        return values

    def estimate(self, batch: SampleBatch) -> Dict[str, float]:
        """Means (and standard deviations) over the episodes of `batch`:
        `v_behavior`, `v_behavior_std`, `v_target`, `v_target_std`, `v_gain`."""
        self.check_can_estimate_for(batch)
        values = self._episode_values(batch)
        vb = np.array([v["v_behavior"] for v in values])
        vt = np.array([v["v_target"] for v in values])
        return {"v_behavior": float(vb.mean()), "v_behavior_std": float(vb.std()),
                "v_target": float(vt.mean()), "v_target_std": float(vt.std()),
                "v_gain": float(vt.mean() / max(1e-8, vb.mean()))}

    def process(self, batch: Any) -> None:
        """Estimates each episode of a sampled batch; kept for `get_metrics`.

        Raises:
            TypeError: For a MultiAgentBatch (estimate per policy batch instead).
        """
        if isinstance(batch, MultiAgentBatch):
            raise TypeError(f"{type(self).__name__} estimates one policy's value; received a "
                            "MultiAgentBatch. Pass batch.policy_batches[policy_id].")
        self.check_can_estimate_for(batch)
        for v in self._episode_values(batch):
            v["v_gain"] = v["v_target"] / max(1e-8, v["v_behavior"])
            self.new_estimates.append(OffPolicyEstimate(self.name, v))

    def get_metrics(self) -> List[OffPolicyEstimate]:
        """The estimates since the last call (then cleared)."""
        out, self.new_estimates = self.new_estimates, []
        return out

    def train(self, batch: SampleBatch) -> Dict[str, float]:
        """Fits the estimator's model (if any) on `batch`; returns training stats."""
        del batch
        return {}


def discounted_return(rewards: Any, gamma: float) -> float:
    """`sum_t gamma^t r_t`."""
    rewards = np.asarray(rewards, dtype=np.float64)
    return float(np.sum(rewards * gamma ** np.arange(len(rewards))))
