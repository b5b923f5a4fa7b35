"""Policy gradient (RLlib's `ray.rllib.algorithms.pg`)."""

from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
from tfrl.algorithms.pg.pg import DEFAULT_CONFIG, PG, PGConfig

__all__ = ["PGTFPolicy", "PG", "PGConfig", "DEFAULT_CONFIG"]
