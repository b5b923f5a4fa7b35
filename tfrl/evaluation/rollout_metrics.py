"""`RolloutMetrics` at its former tfrl path: re-exported from the data layer.

The record lives in `tfrl.data.rollout_metrics`, so that env (the policy server) can
build it without importing evaluation. RLlib's path, `tfrl.evaluation.metrics`, has it
too.
"""

from tfrl.data.rollout_metrics import RolloutMetrics  # noqa: F401

__all__ = ["RolloutMetrics"]
