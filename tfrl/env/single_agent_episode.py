"""RLlib's path `ray.rllib.env.single_agent_episode`: re-exports `tfrl.data`'s episode.

`SingleAgentEpisode` lives in the data layer (`tfrl.data.single_agent_episode`).
"""

from tfrl.data.single_agent_episode import REWARD_SPACE, SingleAgentEpisode  # noqa: F401

__all__ = ["REWARD_SPACE", "SingleAgentEpisode"]
