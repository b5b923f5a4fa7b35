"""IMPALA (RLlib's `ray.rllib.algorithms.impala`): V-trace (`vtrace`), the loss
(`impala_loss`), the config (`impala_config`), the policy (`impala_tf_policy`) and the
algorithm with its asynchronous plan (`impala`)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.impala.impala": ["DEFAULT_CONFIG", "Impala", "ImpalaConfig"],
    "tfrl.algorithms.impala.impala_tf_policy": ["ImpalaTFPolicy", "VTraceTFPolicy"],
})
