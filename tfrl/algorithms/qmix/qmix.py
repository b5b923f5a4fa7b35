"""QMIX: monotonic value function factorisation for a group of cooperating agents (RLlib's
`ray.rllib.algorithms.qmix.qmix`).

The env's agents are grouped (`MultiAgentEnv.with_agent_groups()`): each group is one
agent of the algorithm, with the Tuple of its members' observations and actions and the
team's reward, and one `QMixTFPolicy` learns for it. The plan is DQN's (the off-policy
plan of `OffPolicyAlgorithm`): sampled steps go into the replay buffer, each sampling
round is followed by a learning step once `num_steps_sampled_before_learning_starts`
steps were sampled, and the target agent network and mixer are copied from the online
ones every `target_network_update_freq` sampled steps.

With the recurrent agent network (`agent_network="gru"`, the default) the buffer stores
sequences: each episode cut into pieces of at most `L = model["max_seq_len"]` steps,
each with the GRU's state at its first step (sampled with the actions); a learning step
replays `max(1, train_batch_size // L)` sequences. With the feed-forward network it
stores transitions and a learning step replays `train_batch_size` of them.

Example:
    >>> from tfrl.algorithms.qmix import QMixConfig
    >>> QMixConfig().training(mixer="vdn").mixer
    'vdn'
"""

from tfrl.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from tfrl.algorithms.off_policy_plan import LearningRounds, learning_schedule, make_replay_buffer
from tfrl.algorithms.qmix.qmix_config import MODEL_DEFAULTS, QMixConfig
from tfrl.algorithms.qmix.qmix_tf_policy import QMixTFPolicy
from tfrl.models.model_defaults import model_setting

__all__ = ["DEFAULT_CONFIG", "QMix", "QMixConfig", "QMixTrainer"]


class QMix(OffPolicyAlgorithm):
    """QMIX (see `QMixConfig`, `QMixTFPolicy`); its replay buffer is
    `local_replay_buffer`.

    Example: `QMix(config={"env": TwoStepGameWithGroupedAgents}).train()`.
    """

    config_class = QMixConfig
    default_policy_class = QMixTFPolicy

    def _init_training(self) -> None:
        """The replay buffer: of sequences for recurrent policies (see the module
        docstring), of transitions for feed-forward ones.

        Raises:
            ValueError: If some policies are recurrent and others not.
        """
        policies = self.workers.local_worker().policy_map
        recurrent = {pid: policy.is_recurrent() for pid, policy in policies.items()}
        if len(set(recurrent.values())) > 1:
            raise ValueError(
                "QMix: one replay buffer stores either sequences (agent_network='gru') or "
                f"transitions (agent_network='fcnet'); received a mix: {recurrent}. Give "
                "every policy the same agent_network.")
        length = 1
        if any(recurrent.values()):
            length = int(model_setting({**MODEL_DEFAULTS, **self.config["model"]},
                                       "max_seq_len"))
        # A sequence starts from the GRU's state stored with its first step (zeros at an
        # episode's start).
        self.local_replay_buffer = make_replay_buffer(self.config, sequence_length=length,
                                                      zero_init_states=False)
        self._learning_rounds = LearningRounds(self.local_replay_buffer,
                                               learning_schedule(self.config)[0])


QMixConfig.algo_class = QMix

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = QMixConfig().to_dict()
QMixTrainer = QMix  # RLlib 1.x name
