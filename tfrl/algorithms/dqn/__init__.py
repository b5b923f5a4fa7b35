"""Deep Q-Networks (RLlib's `ray.rllib.algorithms.dqn`): double Q, dueling heads, n-step
returns, prioritized replay, epsilon-greedy exploration."""

from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.dqn.dqn import DEFAULT_CONFIG, DQN, DQNConfig

__all__ = ["DQNTFPolicy", "DQN", "DQNConfig", "DEFAULT_CONFIG"]
