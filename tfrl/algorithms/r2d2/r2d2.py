"""R2D2: recurrent experience replay (RLlib's `ray.rllib.algorithms.r2d2.r2d2`).

Kapturowski et al., "Recurrent Experience Replay in Distributed Reinforcement Learning",
ICLR 2019. DQN's loop with a replay buffer of sequences: each sampling round's rows are
cut into sequences of `replay_sequence_length = model["max_seq_len"] + replay_burn_in`
steps (at episode ends too; shorter ones are zero-padded) and stored with the recurrent
state of their first step; a learning step replays `train_batch_size //
replay_sequence_length` sequences (at least one) and runs `R2D2TFPolicy`'s loss on them;
the target network is copied every `target_network_update_freq` sampled steps.

With a feed-forward model the buffer stores single transitions and R2D2 is DQN with
value rescaling (see `R2D2TFPolicy`).

Example:
    >>> from tfrl.algorithms.r2d2 import R2D2Config
    >>> R2D2Config().training(use_h_function=False).use_h_function
    False
"""

from typing import Any, Dict

from tfrl.algorithms.dqn.dqn import DQN
from tfrl.algorithms.off_policy_plan import LearningRounds, learning_schedule
from tfrl.algorithms.r2d2.r2d2_config import R2D2Config, replay_sequence_length
from tfrl.algorithms.r2d2.r2d2_tf_policy import R2D2TFPolicy
from tfrl.core import types
from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.rollout_ops import sample_round
from tfrl.execution.train_ops import sync_weights, train_one_step, update_target_network


class R2D2(DQN):
    """Recurrent Replay Distributed DQN (see `R2D2Config`, `R2D2TFPolicy`); its replay
    buffer of sequences is `local_replay_buffer`.

    Example: `R2D2(config={"env": "CartPole-v1", "model": {"use_lstm": True}}).train()`.

    Raises:
        ValueError: If some of the policies are recurrent and others not (one buffer
            stores either sequences or transitions).
    """

    config_class = R2D2Config
    default_policy_class = R2D2TFPolicy

    def _init_training(self) -> None:
        config = self.config
        local = self.workers.local_worker()
        recurrent = {pid: policy.is_recurrent() for pid, policy in local.policy_map.items()}
        if len(set(recurrent.values())) > 1:
            raise ValueError(
                "R2D2: one replay buffer stores either sequences (recurrent policies) or "
                f"transitions (feed-forward ones); received a mix: {recurrent}. Give every "
                "policy a recurrent model (model['use_lstm']=True), or none.")
        self._sequence_length = (replay_sequence_length(config)
                                 if all(recurrent.values()) else 1)
        rounds_per_phase, self._steps_per_phase = learning_schedule(config)
        items_per_step = max(1, config["train_batch_size"] // self._sequence_length)
        rb = config["replay_buffer_config"]
        self.local_replay_buffer = LocalReplayBuffer(
            capacity=rb["capacity"], replay_batch_size=self._steps_per_phase * items_per_step,
            learning_starts=config["num_steps_sampled_before_learning_starts"],
            seed=config["seed"], storage_unit=("sequences" if self._sequence_length > 1
                                               else "timesteps"),
            replay_sequence_length=self._sequence_length,
            replay_zero_init_states=config["zero_init_states"],
            compress_observations=config["compress_observations"])
        self._learning_rounds = LearningRounds(self.local_replay_buffer, rounds_per_phase)

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """One sampling round: store its sequences; every `rounds_per_phase`-th round
        (once the buffer is ready) learn on a replay in one compiled call of
        `steps_per_phase` gradient steps and send the weights; copy the target network
        when its interval has passed."""
        config, workers, metrics = self.config, self.workers, self.shared_metrics
        self.local_replay_buffer.add_batch(sample_round(workers, metrics))
        replayed = self._learning_rounds.replay(metrics)
        info: Dict[str, types.LearnerInfo] = {}
        if replayed is not None and replayed.count:
            info = train_one_step(workers, replayed, metrics, num_sgd_iter=1,
                                  sgd_minibatch_size=self._minibatch_size(replayed))
            sync_weights(workers, metrics)
        update_target_network(workers, metrics, config["target_network_update_freq"])
        return info

    def _minibatch_size(self, replayed: types.Batch) -> int:
        """`sgd_minibatch_size` that cuts a replay into `steps_per_phase` steps: 0 (the
        whole replay) for one; else `train_batch_size` rows, or for sequences (counted
        in real timesteps by the learner) the replay's fewest real timesteps of a
        policy divided by the steps."""
        if self._steps_per_phase == 1:
            return 0
        if self._sequence_length == 1:
            return self.config["train_batch_size"]
        batches: Any = (replayed.policy_batches.values()
                        if isinstance(replayed, MultiAgentBatch) else [replayed])
        fewest = min(int(b[Columns.SEQ_LENS].sum()) for b in batches)
        return max(1, fewest // self._steps_per_phase)


R2D2Config.algo_class = R2D2

# RLlib 1.x name: the default config as a flat dict.
R2D2_DEFAULT_CONFIG = DEFAULT_CONFIG = R2D2Config().to_dict()
