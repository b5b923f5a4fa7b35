"""TD3: twin delayed deep deterministic policy gradient (RLlib's
`ray.rllib.algorithms.td3.td3`; Fujimoto et al., 2018).

Plan: `ParallelRollouts(bulk_sync)` → `OffPolicyLearnPhase` → metrics
(`tfrl.algorithms.off_policy_plan`): sampled rows go into the algorithm's replay buffer,
and each learning phase (`steps_per_phase` gradient steps, from `training_intensity`)
runs in one compiled call: the critics' updates, every `policy_delay`-th step the
actor's and the soft (`tau`) update of the target networks (`TD3TFPolicy.apply_update`).
The targets move there only, so `target_network_update_freq` is not used. With
prioritized replay the replayed rows' priorities are set from their TD errors.

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored TD3 continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.td3 import TD3Config
    >>> TD3Config().training(policy_delay=3).policy_delay
    3
"""

from typing import Any, ClassVar, Dict, Optional, Type

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.off_policy_plan import OffPolicyLearnPhase, make_replay_buffer
from tfrl.algorithms.td3.td3_config import TD3Config
from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.rollout_ops import ParallelRollouts

REPLAY_BUFFER_STATE = "replay_buffer"


class TD3(Algorithm):
    """TD3 (see `TD3Config`, `TD3TFPolicy`); its replay buffer is `local_replay_buffer`.

    Example: `TD3(config={"env": "Pendulum-v1"}).train()`.
    """

    config_class: ClassVar[Type[AlgorithmConfig]] = TD3Config
    default_policy_class = TD3TFPolicy
    local_replay_buffer: Optional[LocalReplayBuffer] = None

    # A method: the replay buffer belongs to the algorithm (its checkpoints hold it) and
    # outlives a plan rebuilt after an error.
    def execution_plan(self, workers: types.WorkerSet,  # type: ignore[override]
                       config: Dict[str, Any]) -> LocalIterator[types.ResultDict]:
        """The LocalIterator of result dicts (see the module docstring)."""
        if self.local_replay_buffer is None:
            self.local_replay_buffer = make_replay_buffer(config)
        train_op = ParallelRollouts(workers, mode="bulk_sync").for_each(
            OffPolicyLearnPhase(workers, config, self.local_replay_buffer,
                                target_updates_in_graph=True))
        return metrics_reporting(train_op, workers, config)

    def __getstate__(self) -> Dict[str, Any]:
        state = super().__getstate__()
        if self.config["store_buffer_in_checkpoints"] and self.local_replay_buffer is not None:
            state[REPLAY_BUFFER_STATE] = self.local_replay_buffer.get_state()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        buffer_state = state.get(REPLAY_BUFFER_STATE)
        if buffer_state is not None and self.local_replay_buffer is not None:
            self.local_replay_buffer.set_state(buffer_state)


TD3Config.algo_class = TD3

# RLlib 1.x name: the default config as a flat dict.
TD3_DEFAULT_CONFIG = TD3Config().to_dict()
