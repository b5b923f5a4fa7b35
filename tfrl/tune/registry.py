"""`ray.tune.registry.register_env` / `register_input` for RLlib users:
`from tfrl.tune.registry import register_env, register_input`.

`register_env` registers the creator with tfrl's registry and, when Ray Tune is
installed, with Tune's too, so that Tune's trial processes find it by name.
"""

from typing import Any, Callable

from tfrl.env.registry import register_env as _register_tfrl_env
from tfrl.offline.input_creators import register_input

try:
    from ray.tune.registry import register_env as _register_tune_env
except ImportError:  # Ray is not installed
    _register_tune_env = None


def register_env(name: str, env_creator: Callable[[Any], Any]) -> None:
    """Registers `env_creator(env_config)` under `name` for `env=name` in a config (and
    with Ray Tune's registry when Ray is installed)."""
    _register_tfrl_env(name, env_creator)
    if _register_tune_env is not None:
        _register_tune_env(name, env_creator)


__all__ = ["register_env", "register_input"]
