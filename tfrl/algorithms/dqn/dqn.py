"""DQN: deep Q-learning from a replay buffer (RLlib's `ray.rllib.algorithms.dqn.dqn`).

Plan: RLlib's DQN plan from the operators (`StoreToReplayBuffer`, `Replay`,
`TrainOneStep`, `UpdateTargetNetwork`, `Concurrently`: `tfrl.algorithms.off_policy_plan`):
sampled rows go into the algorithm's replay buffer, learning phases of `steps_per_phase`
gradient steps run in one compiled call each, the replayed rows' priorities are set from
their TD errors, and `UpdateTargetNetwork` copies the weights into the target network
every `target_network_update_freq` sampled steps.

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored DQN continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.dqn import DQNConfig
    >>> DQNConfig().training(double_q=False).double_q
    False
"""

from tfrl.algorithms.dqn.dqn_config import DQNConfig
from tfrl.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
from tfrl.algorithms.off_policy_algorithm import OffPolicyAlgorithm


class DQN(OffPolicyAlgorithm):
    """Deep Q-Networks (see `DQNConfig`, `DQNTFPolicy`); its replay buffer is
    `local_replay_buffer` (RLlib 1.x's name).

    Example: `DQN(config={"env": "CartPole-v1"}).train()`.
    """

    config_class = DQNConfig
    default_policy_class = DQNTFPolicy


DQNConfig.algo_class = DQN

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = DQNConfig().to_dict()
DQNTrainer = DQN  # RLlib 1.x name
