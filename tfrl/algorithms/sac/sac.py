"""SAC: soft actor-critic from a replay buffer (RLlib's `ray.rllib.algorithms.sac.sac`).

Plan: `ParallelRollouts(bulk_sync)` → `OffPolicyLearnPhase` → metrics
(`tfrl.algorithms.off_policy_plan`), as DQN's: sampled rows go into the algorithm's replay
buffer; every learning phase (`training_intensity` sets its size) runs its gradient
steps, with the soft target updates after each (`target_network_update_freq=0`; else
every that many sampled steps, outside), in one compiled call; for prioritized
replay the replayed rows' priorities are set from their TD errors. Box actions get the
squashed-Gaussian SAC, Discrete actions the discrete variant (see `SACTFPolicy`).

With `store_buffer_in_checkpoints`, `save()` writes the buffer's contents too, and a
restored SAC continues exactly as the uninterrupted one.

Example:
    >>> from tfrl.algorithms.sac import SACConfig
    >>> SACConfig().training(tau=0.01).tau
    0.01
"""

from typing import Any, Dict, Optional

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.off_policy_plan import OffPolicyLearnPhase, make_replay_buffer
from tfrl.algorithms.sac.sac_config import SACConfig
from tfrl.algorithms.sac.sac_tf_policy import SACTFPolicy
from tfrl.core import types
from tfrl.execution.iter import LocalIterator
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.execution.rollout_ops import ParallelRollouts

REPLAY_BUFFER_STATE = "replay_buffer"


class SAC(Algorithm):
    """Soft actor-critic (see `SACConfig`, `SACTFPolicy`); its replay buffer is
    `local_replay_buffer`.

    Example: `SAC(config={"env": "Pendulum-v1"}).train()`.
    """

    config_class = SACConfig
    default_policy_class = SACTFPolicy
    local_replay_buffer: Optional[LocalReplayBuffer] = None

    # A method (as DQN's): the replay buffer belongs to the algorithm and its checkpoints.
    def execution_plan(self, workers: types.WorkerSet,  # type: ignore[override]
                       config: Dict[str, Any]) -> LocalIterator[types.ResultDict]:
        """SAC's LocalIterator of result dicts (see the module docstring)."""
        if self.local_replay_buffer is None:
            self.local_replay_buffer = make_replay_buffer(config)
        train_op = ParallelRollouts(workers, mode="bulk_sync").for_each(
            OffPolicyLearnPhase(
                workers, config, self.local_replay_buffer,
                target_updates_in_graph=config["target_network_update_freq"] == 0))
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


SACConfig.algo_class = SAC

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = SACConfig().to_dict()
