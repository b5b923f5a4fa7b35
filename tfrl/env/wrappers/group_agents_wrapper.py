"""RLlib's path of `GroupAgentsWrapper` (`ray.rllib.env.wrappers.group_agents_wrapper`):
defined in `tfrl.env.multi_agent_env`, next to `MultiAgentEnv.with_agent_groups()` that
builds it."""

from tfrl.env.multi_agent_env import GROUP_INFO, GROUP_REWARDS, GroupAgentsWrapper

__all__ = ["GROUP_INFO", "GROUP_REWARDS", "GroupAgentsWrapper"]
