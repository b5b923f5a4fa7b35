"""PPO: config, training step, the KL update operator and the execution plan.

`PPO.training_step`: sample with every worker (bulk sync), keeping the trained policies'
experiences, until `train_batch_size` steps → standardize advantages
(`normalize_advantages="batch"`; "minibatch": the loss does, per minibatch) → learn (the
policy runs its `num_sgd_iter` epochs of `sgd_minibatch_size` minibatches in one
compiled call) → update the KL coefficients → sync weights. With `in_graph=True` (a
TF-native env such as `"tfrl/CartPole-v1"`) the first three are one compiled call
(`tfrl.execution.in_graph`). `execution_plan` is the same
as RLlib's plan of operators (`ParallelRollouts` → `SelectExperiences` →
`ConcatBatches` → `StandardizeFields` → `TrainOneStep` → `UpdateKL` → metrics).

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
                                        StandardizeFields, standardize_fields,
                                        synchronous_parallel_sample)
from tfrl.execution.train_ops import TrainOneStep, sync_weights, train_one_step
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
        update_kl(self.workers, info)
        return info


def update_kl(workers: types.WorkerSet, info: Dict[str, types.LearnerInfo]) -> None:
    """Adapts each trained policy's KL coefficient to the KL in its learner `info` (and
    records it there as `cur_kl_coeff`); the remote workers' policies get the new
    coefficients too."""
    local = workers.local_worker()
    for pid, policy_info in info.items():
        stats = policy_info.get(LEARNER_STATS_KEY, policy_info)
        if "kl" not in stats:
            continue
        policy = local.get_policy(pid)
        if policy is not None and hasattr(policy, "update_kl"):
            stats["cur_kl_coeff"] = policy.update_kl(float(stats["kl"]))
    remote = workers.remote_workers()
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
    supports_in_graph = True
    execution_plan = staticmethod(execution_plan)

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """Sample → concat → standardize → learn → update KL → sync weights (with
        `in_graph=True`, the first four in one compiled call)."""
        config, workers, metrics = self.config, self.workers, self.shared_metrics
        if self.in_graph_iteration is not None:
            info = self.in_graph_training_step()
        else:
            trained = workers.local_worker().policies_to_train
            batch = synchronous_parallel_sample(
                workers, metrics, min_batch_size=config["train_batch_size"],
                count_steps_by=config["multiagent"]["count_steps_by"],
                policies=None if trained is None or callable(trained) else list(trained))
            if config["normalize_advantages"] == "batch":
                batch = standardize_fields(batch, ["advantages"])
            info = train_one_step(workers, batch, metrics,
                                  num_sgd_iter=config["num_sgd_iter"],
                                  sgd_minibatch_size=config["sgd_minibatch_size"])
        update_kl(workers, info)
        sync_weights(workers, metrics)
        return info


PPOConfig.algo_class = PPO

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = PPOConfig().to_dict()
