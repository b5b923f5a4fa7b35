"""PPOConfig: PPO's config dataclass (re-exported by `tfrl.algorithms.ppo.ppo`, RLlib's path).

A module of its own so that `PPOTFPolicy` takes its defaults from it
(`PPOTFPolicy.config_class`) while `ppo.py` imports the policy.

Example:
    >>> PPOConfig().training(lambda_=0.8, num_sgd_iter=20).to_dict()["lambda"]
    0.8
"""

import dataclasses
from typing import Any, ClassVar, Dict

from tfrl.algorithms.algorithm_config import OnPolicyConfig
from tfrl.utils.config_values import NON_NEGATIVE, POSITIVE, OneOf

NORMALIZE_ADVANTAGES = ("batch", "minibatch", "none")


@dataclasses.dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO's config: OnPolicyConfig plus the keys below (RLlib's defaults).

    Attributes:
        kl_coeff, kl_target: Initial KL penalty coefficient and the KL it adapts toward.
        sgd_minibatch_size, num_sgd_iter: Minibatch SGD per batch.
        vf_loss_coeff: Weight of the value loss.
        clip_param, vf_clip_param: Surrogate and value clipping ranges.
        normalize_advantages: "batch" (RLlib's: the execution plan standardizes the
            advantages of each train batch, `(A - mean) / max(1e-4, std)`), "minibatch"
            (SB3's: the loss standardizes each minibatch's, `(A - mean) / (std + 1e-8)`
            with the Bessel-corrected std, over every replica's rows) or "none".
        (`lambda_`, `use_gae`, `use_critic`, `entropy_coeff(_schedule)`: see
        `OnPolicyConfig`; `shuffle_sequences`, `grad_clip`: see `PolicyConfig`.)
    """

    lr: float = 5e-5
    train_batch_size: int = 4000
    kl_coeff: float = 0.2
    kl_target: float = 0.01
    sgd_minibatch_size: int = 128
    num_sgd_iter: int = 30
    vf_loss_coeff: float = 1.0
    clip_param: float = 0.3
    vf_clip_param: float = 10.0
    normalize_advantages: str = "batch"

    _RANGES: ClassVar[Dict[str, Any]] = {
        "kl_coeff": NON_NEGATIVE, "kl_target": NON_NEGATIVE, "vf_loss_coeff": NON_NEGATIVE,
        "clip_param": POSITIVE, "vf_clip_param": POSITIVE,
        "normalize_advantages": OneOf(NORMALIZE_ADVANTAGES)}

    def validate(self) -> None:
        super().validate()
        if self.sgd_minibatch_size > self.train_batch_size:
            raise ValueError(
                f"PPOConfig: sgd_minibatch_size ({self.sgd_minibatch_size}) must be <= "
                f"train_batch_size ({self.train_batch_size}). Lower sgd_minibatch_size or "
                "raise train_batch_size.")
