"""Ape-X DQN (RLlib's `ray.rllib.algorithms.apex_dqn`): DQN with many exploring workers,
worker-side priorities, sharded prioritized replay and a learner thread."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.apex_dqn.apex_dqn_tf_policy": ["ApexDQNTFPolicy"],
    "tfrl.algorithms.apex_dqn.apex_dqn": ["APEX_DEFAULT_CONFIG", "ApexDQN", "ApexDQNConfig",
                                          "ApexTrainer"],
})
