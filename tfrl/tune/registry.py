"""`ray.tune.registry.register_env` / `register_input` for RLlib users:
`from tfrl.tune.registry import register_env, register_input`."""

from tfrl.env.registry import register_env
from tfrl.offline.input_creators import register_input

__all__ = ["register_env", "register_input"]
