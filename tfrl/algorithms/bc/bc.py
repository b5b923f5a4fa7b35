"""BC: behavior cloning, MARWIL with `beta = 0` (RLlib's `ray.rllib.algorithms.bc`).

Example:
    >>> from tfrl.algorithms.bc import BCConfig
    >>> BCConfig().training(lr=1e-3).lr
    0.001
"""

from tfrl.algorithms.bc.bc_config import BCConfig
from tfrl.algorithms.bc.bc_tf_policy import BCTFPolicy
from tfrl.algorithms.marwil.marwil import MARWIL


class BC(MARWIL):
    """Behavior cloning (see `BCTFPolicy`)."""

    config_class = BCConfig
    default_policy_class = BCTFPolicy


BCConfig.algo_class = BC

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = BCConfig().to_dict()
