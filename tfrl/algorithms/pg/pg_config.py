"""PGConfig: PG's config dataclass (re-exported by `tfrl.algorithms.pg.pg`, RLlib's path).

A module of its own so that `PGTFPolicy` takes its defaults from it
(`PGTFPolicy.config_class`) while `pg.py` imports the policy.

Example:
    >>> PGConfig().training(lr=0.01).lr
    0.01
"""

import dataclasses

from tfrl.algorithms.algorithm_config import OnPolicyConfig


@dataclasses.dataclass(frozen=True)
class PGConfig(OnPolicyConfig):
    """PG's config: RLlib's PG defaults (lr 0.0004, batches of 200 steps); whole episodes
    per batch, since PG does not bootstrap cut episodes; returns-to-go, no critic
    (`use_gae=False`, `use_critic=False`)."""

    lr: float = 0.0004
    train_batch_size: int = 200
    rollout_fragment_length: int = 200
    batch_mode: str = "complete_episodes"
    use_gae: bool = False
    use_critic: bool = False
