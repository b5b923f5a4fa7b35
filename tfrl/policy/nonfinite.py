"""What a learner does when an optimizer step's loss or gradients are not finite.

TensorFlow-free (the evaluation layer catches the error without loading TensorFlow);
the check itself is in `tfrl.policy.tf_train_step`, the setting in `PolicyConfig`
(`nonfinite_updates`).
"""

from typing import Any, Dict, Optional

# The values of `PolicyConfig.nonfinite_updates`.
NONFINITE_UPDATES = ("raise", "skip")


class NonFiniteUpdateError(FloatingPointError):
    """A learner step's loss or gradients were not finite (NaN or inf), so it was not applied.

    Raised by `learn_on_batch` with `nonfinite_updates="raise"` (the default); the
    policy's weights and optimizer state are those from before the offending step
    (that step and the rest of the call were skipped).

    Attributes:
        policy_class: The policy's class name.
        stats: `{stat: value}` of the non-finite stats at that step (`total_loss`, the
            loss' stats, `grad_norm`).
        step: The optimizer step of the call that went non-finite (0-based).
        num_steps: The optimizer steps the call was to run.
        num_grad_updates: The policy's applied optimizer updates so far.
        policy_id: The policy's id in its worker (None if not known; the worker's
            `learn_on_batch` sets it, see `with_policy_id`).
        call: The policy method that refused the update (`learn_on_batch` or
            `apply_gradients`).
    """

    def __init__(self, policy_class: str, stats: Dict[str, Any], step: int,
                 num_steps: int, num_grad_updates: int, policy_id: Optional[str] = None,
                 call: str = "learn_on_batch"):
        self.policy_class = policy_class
        self.stats = dict(stats)
        self.step = step
        self.num_steps = num_steps
        self.num_grad_updates = num_grad_updates
        self.policy_id = policy_id
        self.call = call
        who = policy_class if policy_id is None else f"Policy {policy_id!r} ({policy_class})"
        named = ", ".join(f"{k}={v}" for k, v in stats.items())
        super().__init__(
            f"{who}: {call}(): non-finite {named} at optimizer step {step} "
            f"of {num_steps} in this call (after {num_grad_updates} applied updates of this "
            "policy). The step was not applied, nor the rest of the call: the weights and "
            "optimizer state are as before it. Look for NaN/inf in the batch (rewards, "
            "observations, advantages) or a too large lr; or set "
            "nonfinite_updates='skip' to skip such steps and count them in "
            "num_nonfinite_updates_skipped.")

    def with_policy_id(self, policy_id: str) -> "NonFiniteUpdateError":
        """The same error, naming the policy's id."""
        return NonFiniteUpdateError(self.policy_class, self.stats, self.step, self.num_steps,
                                    self.num_grad_updates, policy_id, self.call)


class NonFiniteStateError(ValueError):
    """A policy state (from a checkpoint or `get_state()`) whose weights or optimizer
    variables hold NaN or inf; restoring it is refused before anything is changed."""


def learned_nothing(learner_stats: Dict[str, Any]) -> bool:
    """Whether a `learn_on_batch` call's learner stats say that it applied no update: with
    `nonfinite_updates="skip"` every step was non-finite (the stats then hold only the
    counts, no loss). What follows a learning call and persists (replay priorities, the
    KL coefficient) is then left as it was."""
    return bool(learner_stats.get("num_nonfinite_updates_skipped")) and (
        "total_loss" not in learner_stats)


__all__ = ["NONFINITE_UPDATES", "NonFiniteStateError", "NonFiniteUpdateError",
           "learned_nothing"]
