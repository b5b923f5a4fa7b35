"""Execution operators: the building blocks of an algorithm's training plan.

A plan is a LocalIterator pipeline (`tfrl.execution.iter`) from rollouts to results:

    rollouts = ParallelRollouts(workers, mode="bulk_sync")
    train_op = rollouts.combine(ConcatBatches(min_batch_size=4000)).for_each(TrainOneStep(workers))
    results = StandardMetricsReporting(train_op, workers, config)
    print(next(results)["episode_reward_mean"])
"""

from tfrl.utils.lazy_exports import lazy_exports

# Imported on first use: a run imports only the operators its algorithm uses.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.execution.common": [
        "AGENT_STEPS_SAMPLED_COUNTER", "AGENT_STEPS_TRAINED_COUNTER",
        "LAST_TARGET_UPDATE_TS", "LEARNER_INFO", "LEARNER_STATS_KEY",
        "NUM_TARGET_UPDATES", "STEPS_SAMPLED_COUNTER", "STEPS_TRAINED_COUNTER"
    ],
    "tfrl.execution.concurrency_ops": ["Concurrently", "Dequeue", "Enqueue"],
    "tfrl.execution.iter": ["LocalIterator", "NotReady", "SharedMetrics", "get_shared_metrics"],
    "tfrl.execution.learner_thread": ["LearnerThread", "MinibatchBuffer"],
    "tfrl.execution.metric_ops": [
        "CollectMetrics", "OncePerTimeInterval", "OncePerTimestepsElapsed",
        "StandardMetricsReporting"
    ],
    "tfrl.execution.multi_gpu_learner_thread": ["MultiGPULearnerThread"],
    "tfrl.execution.replay_buffer": [
        "LocalReplayBuffer", "PrioritizedReplayBuffer", "ReplayBuffer"
    ],
    "tfrl.execution.replay_ops": [
        "MixInReplay", "Replay", "SimpleReplayBuffer", "StoreToReplayActors",
        "StoreToReplayBuffer"
    ],
    "tfrl.execution.rollout_ops": [
        "AsyncGradients", "ConcatBatches", "ParallelRollouts", "SelectExperiences",
        "StandardizeFields"
    ],
    "tfrl.execution.train_ops": [
        "ApplyGradients", "AverageGradients", "ComputeGradients", "MultiGPUTrainOneStep",
        "TrainOneStep", "UpdateTargetIfNeeded", "UpdateTargetNetwork"
    ],
})
