"""ImpalaConfig: IMPALA's config dataclass (RLlib's classic `ImpalaConfig` keys).

Example:
    >>> ImpalaConfig().training(vtrace_clip_rho_threshold=2.0).vtrace_clip_rho_threshold
    2.0
    >>> ImpalaConfig().rollout_fragment_length, ImpalaConfig().grad_clip
    (50, 40.0)
"""

import dataclasses
from typing import Any, ClassVar, Dict, Optional

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.utils.config_values import (
    AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, SCHEDULE, UNIT_INTERVAL, OneOf)


@dataclasses.dataclass(frozen=True)
class ImpalaConfig(AlgorithmConfig):
    """IMPALA's config: AlgorithmConfig plus the keys below, with RLlib's defaults.

    Deviations from RLlib's defaults, as for every tfrl algorithm: `num_workers` 0
    (RLlib: 2) and `num_gpus` 0 (RLlib: 1); `vtrace_drop_last_ts` False; the loss
    averages over steps where RLlib's summed (see `tfrl.algorithms.impala.impala_loss`).

    Attributes:
        vtrace: V-trace targets and advantages (False: A3C's loss on the batch as is).
        vtrace_clip_rho_threshold: V-trace's `rho_bar` (the clip of the ratios in the
            value targets).
        vtrace_clip_pg_rho_threshold: The clip of the ratios of the policy-gradient
            advantages.
        vtrace_drop_last_ts: Bootstrap each trajectory piece from its last step's value
            and drop that step from the loss (`vtrace.drop_last_step`; RLlib's legacy
            layout). Default False (RLlib 1.x: True; RLlib 2.x later turned it off):
            tfrl bootstraps from the value of the last step's `new_obs`, so no step is
            dropped.
        num_multi_gpu_tower_stacks: Batches loaded on the devices ahead of the learner
            (`MultiGPULearnerThread`).
        minibatch_buffer_size: Train batches kept to be learned from `num_sgd_iter`
            times each.
        replay_proportion, replay_buffer_num_slots: Replayed batches per new batch
            (`MixInReplay`; 0: no replay) and the replay buffer's size in batches.
        learner_queue_size, learner_queue_timeout: The learner thread's input queue
            bound, and how long (s) it waits for a batch.
        max_sample_requests_in_flight_per_worker: Sample requests outstanding per
            worker (`ParallelRollouts(mode="async", num_async=...)`).
        broadcast_interval: Batches received from a worker between two sends of the
            learner's weights to it.
        opt_type: "adam" or "rmsprop"; `decay`, `momentum`, `epsilon` are RMSProp's.
        vf_loss_coeff, entropy_coeff, entropy_coeff_schedule: The loss weights.
        _separate_vf_optimizer, _lr_vf: A second optimizer (learning rate `_lr_vf`)
            for the value function.
    """

    rollout_fragment_length: int = 50
    train_batch_size: int = 500
    min_iter_time_s: float = 10
    lr: float = 0.0005
    grad_clip: Optional[float] = 40.0
    vtrace: bool = True
    vtrace_clip_rho_threshold: float = 1.0
    vtrace_clip_pg_rho_threshold: float = 1.0
    vtrace_drop_last_ts: bool = False
    num_multi_gpu_tower_stacks: int = 1
    minibatch_buffer_size: int = 1
    replay_proportion: float = 0.0
    replay_buffer_num_slots: int = 0
    learner_queue_size: int = 16
    learner_queue_timeout: float = 300
    max_sample_requests_in_flight_per_worker: int = 2
    broadcast_interval: int = 1
    opt_type: str = "adam"
    decay: float = 0.99
    momentum: float = 0.0
    epsilon: float = 0.1
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = 0.01
    entropy_coeff_schedule: Optional[list] = None
    _separate_vf_optimizer: bool = False
    _lr_vf: float = 0.0005

    _RANGES: ClassVar[Dict[str, Any]] = {
        "vtrace_clip_rho_threshold": POSITIVE, "vtrace_clip_pg_rho_threshold": POSITIVE,
        "num_multi_gpu_tower_stacks": AT_LEAST_ONE, "minibatch_buffer_size": AT_LEAST_ONE,
        "replay_proportion": NON_NEGATIVE, "replay_buffer_num_slots": NON_NEGATIVE,
        "learner_queue_size": AT_LEAST_ONE, "learner_queue_timeout": POSITIVE,
        "max_sample_requests_in_flight_per_worker": AT_LEAST_ONE,
        "broadcast_interval": AT_LEAST_ONE, "opt_type": OneOf(("adam", "rmsprop")),
        "decay": UNIT_INTERVAL, "momentum": NON_NEGATIVE, "epsilon": POSITIVE,
        "vf_loss_coeff": NON_NEGATIVE, "entropy_coeff": NON_NEGATIVE,
        "entropy_coeff_schedule": SCHEDULE, "_lr_vf": POSITIVE,
    }

    def validate(self) -> None:
        super().validate()
        if self.replay_proportion > 0 and self.replay_buffer_num_slots < 1:
            raise ValueError(
                f"{type(self).__name__}: replay_proportion={self.replay_proportion} replays "
                "from a buffer that holds no batch (replay_buffer_num_slots=0); set "
                "replay_buffer_num_slots >= 1 or replay_proportion=0.")
