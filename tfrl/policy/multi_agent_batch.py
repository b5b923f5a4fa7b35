"""`MultiAgentBatch` at the path tfrl used before the data layer: re-exports it.

The class lives in `tfrl.data.sample_batch` (RLlib's path is
`tfrl.policy.sample_batch.MultiAgentBatch`).
"""

from tfrl.data.sample_batch import MultiAgentBatch  # noqa: F401

__all__ = ["MultiAgentBatch"]
