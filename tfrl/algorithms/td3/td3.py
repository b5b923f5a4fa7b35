"""TD3: twin delayed deep deterministic policy gradient (RLlib's
`ray.rllib.algorithms.td3.td3`; Fujimoto et al., 2018).

Plan: DQN's, from the execution operators (`tfrl.algorithms.off_policy_plan`): sampled
rows go into the algorithm's replay buffer, and each learning phase (`steps_per_phase`
gradient steps, from `training_intensity`) runs in one compiled call: the critics'
updates, every `policy_delay`-th step the actor's and the soft (`tau`) update of the
target networks (`TD3TFPolicy.apply_update`). The targets move there only, so
`target_network_update_freq` is not used. With prioritized replay the replayed rows'
priorities are set from their TD errors.

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored TD3 continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.td3 import TD3Config
    >>> TD3Config().training(policy_delay=3).policy_delay
    3
"""

from typing import Any, ClassVar, Mapping, Type

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from tfrl.algorithms.td3.td3_config import TD3Config
from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy


class TD3(OffPolicyAlgorithm):
    """TD3 (see `TD3Config`, `TD3TFPolicy`); its replay buffer is `local_replay_buffer`.

    Example: `TD3(config={"env": "Pendulum-v1"}).train()`.
    """

    config_class: ClassVar[Type[AlgorithmConfig]] = TD3Config
    default_policy_class = TD3TFPolicy

    @staticmethod
    def target_updates_in_graph(config: Mapping[str, Any]) -> bool:
        """The targets move with the delayed actor updates, inside the learning call."""
        return True


TD3Config.algo_class = TD3

# RLlib 1.x name: the default config as a flat dict.
TD3_DEFAULT_CONFIG = TD3Config().to_dict()
