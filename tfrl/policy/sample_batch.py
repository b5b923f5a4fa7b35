"""RLlib's path `ray.rllib.policy.sample_batch`: re-exports `tfrl.data.sample_batch`.

SampleBatch, MultiAgentBatch and concat_samples live in the data layer (`tfrl.data`),
so that env and evaluation can use them without importing the policy layer.
"""

from tfrl.data.sample_batch import (  # noqa: F401
    DEFAULT_POLICY_ID,
    MultiAgentBatch,
    SampleBatch,
    attempt_count_timesteps,
    concat_samples,
)

__all__ = ["DEFAULT_POLICY_ID", "MultiAgentBatch", "SampleBatch", "attempt_count_timesteps",
           "concat_samples"]
