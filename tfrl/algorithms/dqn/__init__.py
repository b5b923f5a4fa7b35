"""Deep Q-Networks (RLlib's `ray.rllib.algorithms.dqn`): double Q, dueling heads, n-step
returns, prioritized replay, epsilon-greedy exploration."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.dqn.dqn_tf_policy": ["DQNTFPolicy"],
    "tfrl.algorithms.dqn.dqn": ["DEFAULT_CONFIG", "DQN", "DQNConfig", "DQNTrainer"],
})
