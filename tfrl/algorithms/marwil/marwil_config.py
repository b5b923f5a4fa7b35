"""MARWILConfig: MARWIL's config dataclass (re-exported by `tfrl.algorithms.marwil.marwil`,
RLlib's path).

Example:
    >>> MARWILConfig().training(beta=0.5).beta
    0.5
"""

import dataclasses
from typing import Any, ClassVar, Dict

from tfrl.algorithms.algorithm_config import OnPolicyConfig, _field
from tfrl.utils.config_values import NON_NEGATIVE, POSITIVE


@dataclasses.dataclass(frozen=True)
class MARWILConfig(OnPolicyConfig):
    """MARWIL's config (RLlib's MARWIL defaults, except as noted).

    Attributes:
        beta: Advantage temperature of the exponential weights; 0.0 is behavior cloning.
        vf_coeff: Weight of the value loss.
        moving_average_sqd_adv_norm_start: Start value of the moving average of the
            squared advantages.
        moving_average_sqd_adv_norm_update_rate: Its update rate per gradient step.
        postprocess_inputs: Input episodes go through `postprocess_trajectory` (returns);
            True, as MARWIL needs the returns of logged data.
        evaluation_config: Evaluation workers sample their env (`input: "sampler"`), so
            that `evaluate()` measures the learnt policy with real rollouts.
    """

    beta: float = 1.0
    vf_coeff: float = 1.0
    moving_average_sqd_adv_norm_start: float = 100.0
    moving_average_sqd_adv_norm_update_rate: float = 1e-8
    lr: float = 1e-4
    train_batch_size: int = 2000
    grad_clip: Any = None
    use_gae: bool = False
    use_critic: bool = False
    postprocess_inputs: bool = True
    evaluation_config: dict = _field({"input": "sampler"})

    _RANGES: ClassVar[Dict[str, Any]] = {
        "beta": NON_NEGATIVE, "vf_coeff": NON_NEGATIVE,
        "moving_average_sqd_adv_norm_start": POSITIVE,
        "moving_average_sqd_adv_norm_update_rate": NON_NEGATIVE}
