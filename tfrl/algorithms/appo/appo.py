"""APPO: IMPALA's asynchronous plan with the APPO policy and its target network.

The plan is IMPALA's (`tfrl.algorithms.impala.impala.execution_plan`) with one more
operator on the learner's outputs, `UpdateTargetAndKL`: every
`target_update_frequency * num_sgd_iter * minibatch_buffer_size` learner passes it
copies each trained policy's weights into its target network (counted in
`num_target_updates`) and, with `use_kl_loss`, adapts the KL coefficient to the KL of
the last pass.

Example:
    >>> from tfrl.algorithms.appo import APPOConfig
    >>> config = APPOConfig().environment("CartPole-v1").training(use_kl_loss=True)
    >>> config.algo_class.__name__, config.use_kl_loss
    ('APPO', True)
"""

from typing import Any, ClassVar, Dict, List, Optional, Tuple, Type

from tfrl.algorithms.appo.appo_config import APPOConfig
from tfrl.algorithms.appo.appo_tf_policy import APPOTFPolicy
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.impala.impala import NUM_LEARNER_PASSES, AfterTrainOp, Impala, LearnerPlan
from tfrl.algorithms.impala.impala import execution_plan as impala_execution_plan
from tfrl.core import types
from tfrl.execution.common import LEARNER_STATS_KEY, NUM_TARGET_UPDATES
from tfrl.execution.iter import get_shared_metrics

#: The learner pass of the last target update (a counter, so checkpoints keep it).
LAST_TARGET_UPDATE_PASS = "last_target_update_pass"


class UpdateTargetAndKL:
    """Updates the target networks (and KL coefficients) on APPO's schedule.

    Use with `.for_each()` on the learner's outputs `(count, info)`, after they are
    counted in `num_learner_passes`; returns the item.

    Args:
        workers: The WorkerSet (the local worker's trained policies are updated).
        config: The algorithm config (`target_update_frequency`, `num_sgd_iter`,
            `minibatch_buffer_size`, `use_kl_loss`).
    """

    def __init__(self, workers: types.WorkerSet, config: Dict[str, Any]):
        self.workers = workers
        self.period = (config["target_update_frequency"] * config["num_sgd_iter"]
                       * config["minibatch_buffer_size"])
        self.use_kl_loss = bool(config["use_kl_loss"])

    def __call__(self, item: Tuple[int, Dict[str, Any]]) -> Tuple[int, Dict[str, Any]]:
        counters = get_shared_metrics().counters
        passes = counters[NUM_LEARNER_PASSES]
        if passes - counters[LAST_TARGET_UPDATE_PASS] < self.period:
            return item
        counters[LAST_TARGET_UPDATE_PASS] = passes
        counters[NUM_TARGET_UPDATES] += 1
        _, info = item
        local = self.workers.local_worker()
        for pid in local.policies_to_train:
            policy: Any = local.get_policy(pid)  # an APPOTFPolicy
            policy.update_target()
            stats = (info.get(pid) or {}).get(LEARNER_STATS_KEY, {})
            if self.use_kl_loss and "kl" in stats:
                stats["cur_kl_coeff"] = policy.update_kl(float(stats["kl"]))
        return item


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any],
                   after_train: Optional[List[AfterTrainOp]] = None) -> LearnerPlan:
    """APPO's LocalIterator of result dicts (see the module docstring); `after_train`
    operators run after the target update."""
    return impala_execution_plan(
        workers, config, after_train=[UpdateTargetAndKL(workers, config), *(after_train or [])])


class APPO(Impala):
    """Asynchronous PPO (see `APPOConfig`, `APPOTFPolicy` and the module docstring)."""

    config_class: ClassVar[Type[AlgorithmConfig]] = APPOConfig
    default_policy_class: Optional[type] = APPOTFPolicy
    execution_plan = staticmethod(execution_plan)


APPOConfig.algo_class = APPO
APPOTrainer = APPO  # RLlib 1.x name

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = APPOConfig().to_dict()
