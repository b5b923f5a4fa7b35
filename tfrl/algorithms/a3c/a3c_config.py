"""A3CConfig: A3C's config dataclass (re-exported by `tfrl.algorithms.a3c.a3c`, RLlib's path).

A module of its own so that `A3CTFPolicy` takes its defaults from it
(`A3CTFPolicy.config_class`) while `a3c.py` imports the policy.

Example:
    >>> A3CConfig().rollout_fragment_length, A3CConfig().lr
    (10, 0.0001)
"""

import dataclasses
from typing import Optional

from tfrl.algorithms.a2c.a2c_config import A2CConfig


@dataclasses.dataclass(frozen=True)
class A3CConfig(A2CConfig):
    """A3C's config: A2C's keys with RLlib's A3C defaults.

    Every remote worker computes a gradient on each of its rollout fragments
    (`rollout_fragment_length` steps); the driver applies gradients as they arrive and
    sends the new weights back only to the worker that produced the gradient. With
    `num_workers=0` the driver's own worker samples, computes and applies in turn
    (synchronous; for tests and debugging). `train_batch_size` and `microbatch_size`
    are not used (one gradient per fragment).

    Deviation from RLlib: `sample_async` stays False (sampling happens in the worker's
    own `sample()` call; the asynchrony is between workers) and `num_workers` defaults to
    0 as everywhere in tfrl: set it (e.g. `.rollouts(num_workers=2)`) for A3C proper.
    """

    rollout_fragment_length: int = 10
    lr: float = 0.0001
    grad_clip: Optional[float] = 40.0
    min_iter_time_s: float = 5
