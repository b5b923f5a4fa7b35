"""APPOConfig: APPO's config dataclass (RLlib's classic `APPOConfig` keys).

APPO is IMPALA with PPO's surrogate: the config is `ImpalaConfig` plus PPO's keys
(and the on-policy keys of `OnPolicyConfig`: `lambda`, `use_gae`, `use_critic`).

Example:
    >>> APPOConfig().training(clip_param=0.2, use_kl_loss=True).to_dict()["clip_param"]
    0.2
    >>> APPOConfig().replay_buffer_num_slots, APPOConfig().entropy_coeff
    (100, 0.01)
"""

import dataclasses
from typing import Any, ClassVar, Dict

from tfrl.algorithms.algorithm_config import OnPolicyConfig
from tfrl.algorithms.impala.impala_config import ImpalaConfig
from tfrl.utils.config_values import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE


@dataclasses.dataclass(frozen=True)
class APPOConfig(ImpalaConfig, OnPolicyConfig):
    """APPO's config: ImpalaConfig (its defaults, e.g. `entropy_coeff` 0.01) and
    OnPolicyConfig's keys, plus the keys below (RLlib's defaults).

    Attributes:
        clip_param: The surrogate's clip range.
        use_kl_loss, kl_coeff, kl_target: The KL term `KL[pi_target || pi]`, its
            initial weight and the KL an adaptive weight moves toward.
        target_update_frequency: The target network is updated (and the KL weight
            adapted) after every `target_update_frequency * num_sgd_iter *
            minibatch_buffer_size` trained batches.
        (`vtrace=False`: GAE advantages, with `lambda`, `use_gae`, `use_critic`.)
    """

    clip_param: float = 0.4
    use_kl_loss: bool = False
    kl_coeff: float = 1.0
    kl_target: float = 0.01
    target_update_frequency: int = 1
    replay_buffer_num_slots: int = 100

    _RANGES: ClassVar[Dict[str, Any]] = {
        "clip_param": POSITIVE, "kl_coeff": NON_NEGATIVE, "kl_target": NON_NEGATIVE,
        "target_update_frequency": AT_LEAST_ONE}
