"""A2CConfig: A2C's config dataclass (re-exported by `tfrl.algorithms.a2c.a2c`, RLlib's path).

A module of its own so that `A2CTFPolicy` takes its defaults from it
(`A2CTFPolicy.config_class`) while `a2c.py` imports the policy.

Example:
    >>> A2CConfig().training(microbatch_size=50).microbatch_size
    50
"""

import dataclasses
from typing import Any, ClassVar, Dict, Optional

from tfrl.algorithms.algorithm_config import OnPolicyConfig
from tfrl.utils.config_values import AT_LEAST_ONE, NON_NEGATIVE


@dataclasses.dataclass(frozen=True)
class A2CConfig(OnPolicyConfig):
    """A2C's config (RLlib's A2C/A3C defaults; `min_iter_time_s` 10 as in RLlib).

    Attributes:
        microbatch_size: If set, gradients of microbatches of this many steps are
            averaged into one update per `train_batch_size` steps.
        vf_loss_coeff: Weight of the value loss.
    """

    rollout_fragment_length: int = 20
    train_batch_size: int = 200
    microbatch_size: Optional[int] = None
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = 0.01
    grad_clip: Optional[float] = 40.0
    min_iter_time_s: float = 10

    _RANGES: ClassVar[Dict[str, Any]] = {
        "microbatch_size": AT_LEAST_ONE, "vf_loss_coeff": NON_NEGATIVE}

    def validate(self) -> None:
        super().validate()
        if self.microbatch_size is not None and not (
                1 <= self.microbatch_size <= self.train_batch_size):
            raise ValueError(
                f"A2CConfig: microbatch_size must be None or in [1, train_batch_size="
                f"{self.train_batch_size}]; received {self.microbatch_size}.")
