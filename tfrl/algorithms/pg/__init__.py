"""Policy gradient (RLlib's `ray.rllib.algorithms.pg`)."""

from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy

__all__ = ["PGTFPolicy"]
