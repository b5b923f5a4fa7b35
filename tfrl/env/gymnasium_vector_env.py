"""`GymnasiumVectorEnv`, the fast path over gymnasium's vector envs: re-exported here.

Defined in `tfrl.env.vector_env` (`VectorEnv.from_gymnasium` builds it, and it is a
VectorEnv).
"""

from tfrl.env.vector_env import GymnasiumVectorEnv, split_infos  # noqa: F401

__all__ = ["GymnasiumVectorEnv", "split_infos"]
