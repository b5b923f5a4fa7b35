"""IMPALA (RLlib's `ray.rllib.algorithms.impala`): V-trace (`vtrace`), the loss
(`impala_loss`), the config (`impala_config`), the policy (`impala_tf_policy`) and the
algorithm with its asynchronous plan (`impala`)."""

from tfrl.algorithms.impala.impala import DEFAULT_CONFIG, Impala, ImpalaConfig
from tfrl.algorithms.impala.impala_tf_policy import ImpalaTFPolicy, VTraceTFPolicy

__all__ = ["Impala", "ImpalaConfig", "ImpalaTFPolicy", "VTraceTFPolicy", "DEFAULT_CONFIG"]
