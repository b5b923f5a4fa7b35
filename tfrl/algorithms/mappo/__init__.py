"""MAPPO: PPO with a centralized critic for cooperating agents (RLlib's centralized-critic
example, `rllib/examples/centralized_critic.py`, as an algorithm)."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.mappo.mappo_tf_policy": ["MAPPOTFPolicy"],
    "tfrl.algorithms.mappo.critic_input": ["CRITIC_INPUT", "critic_input_rows"],
    "tfrl.algorithms.mappo.mappo": ["DEFAULT_CONFIG", "MAPPO", "MAPPOConfig"],
})
