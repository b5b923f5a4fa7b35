"""RLlib's path `ray.rllib.evaluation.metrics.RolloutMetrics` module: re-exports it.

`RolloutMetrics` lives in the data layer (`tfrl.data.rollout_metrics`), so that env
(the policy server) can build it without importing evaluation.
"""

from tfrl.data.rollout_metrics import RolloutMetrics  # noqa: F401

__all__ = ["RolloutMetrics"]
