"""QMIX: monotonic value function factorisation for a group of cooperating agents (RLlib's
`ray.rllib.algorithms.qmix.qmix`).

The env's agents are grouped (`MultiAgentEnv.with_agent_groups()`): each group is one
agent of the algorithm, with the Tuple of its members' observations and actions and the
team's reward, and one `QMixTFPolicy` learns for it. The plan is DQN's (the off-policy
plan of `OffPolicyAlgorithm`): sampled transitions go into the replay buffer, each
sampling round is followed by a learning step on `train_batch_size` replayed transitions
once `num_steps_sampled_before_learning_starts` steps were sampled, and the target agent
network and mixer are copied from the online ones every `target_network_update_freq`
sampled steps.

Example:
    >>> from tfrl.algorithms.qmix import QMixConfig
    >>> QMixConfig().training(mixer="vdn").mixer
    'vdn'
"""

from tfrl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from tfrl.algorithms.qmix.qmix_config import QMixConfig
from tfrl.algorithms.qmix.qmix_tf_policy import QMixTFPolicy

__all__ = ["DEFAULT_CONFIG", "QMix", "QMixConfig", "QMixTrainer"]


class QMix(OffPolicyAlgorithm):
    """QMIX (see `QMixConfig`, `QMixTFPolicy`); its replay buffer is
    `local_replay_buffer`.

    Example: `QMix(config={"env": TwoStepGameWithGroupedAgents}).train()`.
    """

    config_class = QMixConfig
    default_policy_class = QMixTFPolicy


QMixConfig.algo_class = QMix

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = QMixConfig().to_dict()
QMixTrainer = QMix  # RLlib 1.x name
