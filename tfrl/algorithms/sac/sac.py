"""SAC: soft actor-critic from a replay buffer (RLlib's `ray.rllib.algorithms.sac.sac`).

Plan: DQN's, from the execution operators (`tfrl.algorithms.off_policy_plan`): sampled
rows go into the algorithm's replay buffer; every learning phase (`training_intensity`
sets its size) runs its gradient steps, with the soft target updates after each
(`target_network_update_freq=0`; else every that many sampled steps, outside), in one
compiled call; for prioritized replay the replayed rows' priorities are set from their TD
errors. Box actions get the squashed-Gaussian SAC, Discrete actions the discrete variant
(see `SACTFPolicy`).

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored SAC continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.sac import SACConfig
    >>> SACConfig().training(tau=0.01).tau
    0.01
"""

from typing import Any, Mapping

from tfrl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from tfrl.algorithms.sac.sac_config import SACConfig
from tfrl.algorithms.sac.sac_tf_policy import SACTFPolicy


class SAC(OffPolicyAlgorithm):
    """Soft actor-critic (see `SACConfig`, `SACTFPolicy`); its replay buffer is
    `local_replay_buffer`.

    Example: `SAC(config={"env": "Pendulum-v1"}).train()`.
    """

    config_class = SACConfig
    default_policy_class = SACTFPolicy

    @staticmethod
    def target_updates_in_graph(config: Mapping[str, Any]) -> bool:
        """Soft target updates after every gradient step with
        `target_network_update_freq=0`, else every that many sampled steps (outside)."""
        return config["target_network_update_freq"] == 0


SACConfig.algo_class = SAC

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = SACConfig().to_dict()
