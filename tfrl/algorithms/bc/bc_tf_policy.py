"""BCTFPolicy: MARWILTFPolicy with BCConfig's defaults (`beta = 0`)."""

from tfrl.algorithms.bc.bc_config import BCConfig
from tfrl.algorithms.marwil.marwil_tf_policy import MARWILTFPolicy


class BCTFPolicy(MARWILTFPolicy):
    """Behavior cloning: `-mean(log pi(a_t | s_t))` on the logged actions (config:
    `BCConfig`'s fields)."""

    config_class = BCConfig
