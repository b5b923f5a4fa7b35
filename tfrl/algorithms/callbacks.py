"""RLlib's path `ray.rllib.algorithms.callbacks`: re-exports `tfrl.evaluation.callbacks`.

`DefaultCallbacks` lives in the evaluation layer, where the rollout worker calls it.
"""

from tfrl.evaluation.callbacks import (  # noqa: F401
    HOOK_NAMES,
    DefaultCallbacks,
    make_multi_callbacks,
)

__all__ = ["DefaultCallbacks", "make_multi_callbacks"]
