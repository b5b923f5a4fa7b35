"""A3CTFPolicy: the advantage actor-critic loss of A2C (`a2c_loss.a2c_loss`) with A3C's
defaults (`A3CConfig`); the asynchrony lives in the execution plan (`a3c.py`)."""

from tfrl.algorithms.a2c.a2c_tf_policy import A2CTFPolicy
from tfrl.algorithms.a3c.a3c_config import A3CConfig


class A3CTFPolicy(A2CTFPolicy):
    """A2C's policy (same loss, same stats; config: `A3CConfig`'s fields and defaults)."""

    config_class = A3CConfig
