"""Execution operators: the building blocks of an algorithm's training plan.

A plan is a LocalIterator pipeline (`tfrl.execution.iter`) from rollouts to results:

    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    train_op = rollouts.combine(ConcatBatches(min_batch_size=4000)).for_each(TrainOneStep(workers))
    results = StandardMetricsReporting(train_op, workers, config)
    print(next(results)["episode_reward_mean"])
"""

from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, AGENT_STEPS_TRAINED_COUNTER,
                                   LAST_TARGET_UPDATE_TS, LEARNER_INFO, LEARNER_STATS_KEY,
                                   NUM_TARGET_UPDATES, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER)
from tfrl.execution.concurrency_ops import Concurrently, Dequeue, Enqueue
from tfrl.execution.iter import LocalIterator, NotReady, SharedMetrics, get_shared_metrics
from tfrl.execution.learner_thread import LearnerThread, MinibatchBuffer
from tfrl.execution.metric_ops import (CollectMetrics, OncePerTimeInterval,
                                       OncePerTimestepsElapsed, StandardMetricsReporting)
from tfrl.execution.multi_gpu_learner_thread import MultiGPULearnerThread
from tfrl.execution.replay_buffer import (LocalReplayBuffer, PrioritizedReplayBuffer,
                                          ReplayBuffer)
from tfrl.execution.replay_ops import (MixInReplay, Replay, SimpleReplayBuffer,
                                       StoreToReplayActors, StoreToReplayBuffer)
from tfrl.execution.rollout_ops import (AsyncGradients, ConcatBatches, ParallelRollouts,
                                        SelectExperiences, StandardizeFields)
from tfrl.execution.train_ops import (ApplyGradients, AverageGradients, ComputeGradients,
                                      MultiGPUTrainOneStep, TrainOneStep, UpdateTargetIfNeeded,
                                      UpdateTargetNetwork)

__all__ = [
    "AGENT_STEPS_SAMPLED_COUNTER", "AGENT_STEPS_TRAINED_COUNTER", "LAST_TARGET_UPDATE_TS",
    "LEARNER_INFO", "LEARNER_STATS_KEY", "NUM_TARGET_UPDATES", "STEPS_SAMPLED_COUNTER",
    "STEPS_TRAINED_COUNTER", "Concurrently", "Dequeue", "Enqueue", "LocalIterator", "NotReady",
    "SharedMetrics", "get_shared_metrics", "CollectMetrics", "OncePerTimeInterval",
    "OncePerTimestepsElapsed", "StandardMetricsReporting", "AsyncGradients", "ConcatBatches",
    "ParallelRollouts", "SelectExperiences", "StandardizeFields", "ApplyGradients",
    "AverageGradients", "ComputeGradients", "MultiGPUTrainOneStep", "TrainOneStep",
    "UpdateTargetIfNeeded", "UpdateTargetNetwork", "LearnerThread", "MinibatchBuffer",
    "MultiGPULearnerThread", "LocalReplayBuffer", "PrioritizedReplayBuffer", "ReplayBuffer",
    "MixInReplay", "Replay", "SimpleReplayBuffer", "StoreToReplayActors", "StoreToReplayBuffer",
]
