"""Environments: BaseEnv and the env types it wraps, external envs, episodes.

Names are imported lazily, so `import tfrl.env` stays cheap:
`from tfrl.env import PolicyClient` works as `from ray.rllib.env import PolicyClient`.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.env.base_env": ["BaseEnv"],
    "tfrl.env.env_context": ["EnvContext"],
    "tfrl.env.external_env": ["ExternalEnv"],
    "tfrl.env.external_multi_agent_env": ["ExternalMultiAgentEnv"],
    "tfrl.env.multi_agent_env": ["MultiAgentEnv", "make_multi_agent"],
    "tfrl.env.policy_client": ["PolicyClient"],
    "tfrl.env.policy_server_input": ["PolicyServerInput"],
    "tfrl.env.registry": ["register_env"],
    "tfrl.env.remote_vector_env": ["RemoteVectorEnv"],
    "tfrl.env.single_agent_episode": ["SingleAgentEpisode"],
    "tfrl.env.vector_env": ["VectorEnv"],
    "tfrl.env.wrappers.pettingzoo_env": ["ParallelPettingZooEnv", "PettingZooEnv"],
})
