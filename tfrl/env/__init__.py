"""Environments: BaseEnv and the env types it wraps, external envs, episodes.

Names are imported lazily, so `import tfrl.env` stays cheap:
`from tfrl.env import PolicyClient` works as `from ray.rllib.env import PolicyClient`.
"""

import importlib

_EXPORTS = {
    "BaseEnv": "tfrl.env.base_env",
    "EnvContext": "tfrl.env.env_context",
    "ExternalEnv": "tfrl.env.external_env",
    "ExternalMultiAgentEnv": "tfrl.env.external_multi_agent_env",
    "MultiAgentEnv": "tfrl.env.multi_agent_env",
    "PolicyClient": "tfrl.env.policy_client",
    "PolicyServerInput": "tfrl.env.policy_server_input",
    "RemoteVectorEnv": "tfrl.env.remote_vector_env",
    "SingleAgentEpisode": "tfrl.env.single_agent_episode",
    "VectorEnv": "tfrl.env.vector_env",
    "make_multi_agent": "tfrl.env.multi_agent_env",
    "register_env": "tfrl.env.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tfrl.env' has no attribute {name!r}")
