"""PPO: config, the KL update operator and the execution plan.

Plan: sample with every worker (`ParallelRollouts`, bulk sync) → keep the trained
policies' experiences → concatenate to `train_batch_size` → standardize advantages (`normalize_advantages=
"batch"`; "minibatch": the loss does, per minibatch) →
`TrainOneStep` (the policy runs its `num_sgd_iter` epochs of `sgd_minibatch_size`
minibatches in one compiled call) → `UpdateKL` → metrics.

Example:
    >>> from tfrl.algorithms.ppo import PPOConfig
    >>> config = PPOConfig().environment("CartPole-v1").training(lambda_=0.8, num_sgd_iter=20)
    >>> config.to_dict()["lambda"], config.sgd_minibatch_size
    (0.8, 128)
"""

import logging
from typing import Any, Dict, Tuple, Union

from tfrl.algorithms.algorithm import Algorithm, metrics_reporting
from tfrl.algorithms.ppo.ppo_config import PPOConfig
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.core import types
from tfrl.execution.common import LEARNER_STATS_KEY
from tfrl.execution.rollout_ops import (ConcatBatches, ParallelRollouts, SelectExperiences,
                                        StandardizeFields)
from tfrl.execution.train_ops import TrainOneStep
from tfrl.execution.iter import LocalIterator

logger = logging.getLogger(__name__)


class UpdateKL:
    """Adapts each trained policy's KL coefficient to the KL of the last update.

    Use with `.for_each()` after `TrainOneStep` (takes its `(batch, info)` or `info`);
    returns the info.
    """

    def __init__(self, workers: types.WorkerSet):
        self.workers = workers

    def __call__(self, item: Union[Tuple[Any, Dict[str, types.LearnerInfo]],
                                   Dict[str, types.LearnerInfo]]
                 ) -> Dict[str, types.LearnerInfo]:
        info = item[1] if isinstance(item, tuple) else item
        local = self.workers.local_worker()
        for pid, policy_info in info.items():
            stats = policy_info.get(LEARNER_STATS_KEY, policy_info)
            if "kl" not in stats:
                continue
            policy = local.get_policy(pid)
            if policy is not None and hasattr(policy, "update_kl"):
                new_coeff = policy.update_kl(float(stats["kl"]))
                stats["cur_kl_coeff"] = new_coeff
        remote = self.workers.remote_workers()
        if remote:  # remote policies only act, but keep their state consistent
            policies = {pid: local.get_policy(pid) for pid in info}
            coeffs = {pid: p.kl_coeff for pid, p in policies.items()
                      if p is not None and hasattr(p, "kl_coeff")}

            def set_coeffs(worker):
                for pid, coeff in coeffs.items():
                    worker.get_policy(pid).kl_coeff = coeff
            futures = [handle.apply(set_coeffs) for handle in remote]
            for future in futures:
                future.result(timeout=60)
        return info


def execution_plan(workers: types.WorkerSet, config: Dict[str, Any]
                   ) -> LocalIterator[types.ResultDict]:
    """PPO's LocalIterator of result dicts (see the module docstring)."""
    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    policies = workers.local_worker().policies_to_train
    if policies is not None and not callable(policies):
        rollouts = rollouts.for_each(SelectExperiences(list(policies)))
    rollouts = rollouts.combine(ConcatBatches(
        min_batch_size=config["train_batch_size"],
        count_steps_by=config["multiagent"]["count_steps_by"]))
    if config["normalize_advantages"] == "batch":
        rollouts = rollouts.for_each(StandardizeFields(["advantages"]))
    train_op = rollouts.for_each(TrainOneStep(
        workers, num_sgd_iter=config["num_sgd_iter"],
        sgd_minibatch_size=config["sgd_minibatch_size"])).for_each(UpdateKL(workers))
    return metrics_reporting(train_op, workers, config)


class PPO(Algorithm):
    """Proximal policy optimization (see `PPOConfig`, `PPOTFPolicy`).

    Example: `PPO(config={"env": "CartPole-v1", "num_workers": 0}).train()`.
    """

    config_class = PPOConfig
    default_policy_class = PPOTFPolicy
    execution_plan = staticmethod(execution_plan)


PPOConfig.algo_class = PPO

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = PPOConfig().to_dict()
