"""`ray.tune.registry.register_env` for RLlib users: `from tfrl.tune.registry import register_env`."""

from tfrl.env.registry import register_env

__all__ = ["register_env"]
