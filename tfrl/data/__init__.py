"""The data layer: experience containers on numpy, below every other tfrl layer.

`SampleBatch`, `MultiAgentBatch` and `concat_samples` (`tfrl.data.sample_batch`),
`SingleAgentEpisode` and its `InfiniteLookbackBuffer`, and `RolloutMetrics`. Nothing
here imports TensorFlow (except `SampleBatch.to_device`, when called) or any tfrl layer
above `tfrl.utils` / `tfrl.core`. The RLlib paths (`tfrl.policy.sample_batch`,
`tfrl.env.single_agent_episode`, `tfrl.evaluation.rollout_metrics`, ...) re-export
these names.
"""
