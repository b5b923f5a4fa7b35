"""`RolloutMetrics`: the record a sampler produces for each completed episode.

Part of the data layer (`tfrl.data`); `tfrl.evaluation.metrics` (RLlib's path) and
`tfrl.evaluation.rollout_metrics` re-export it.
"""

import collections

__all__ = ["RolloutMetrics"]


_Base = collections.namedtuple(
    "RolloutMetrics",
    ["episode_length", "episode_reward", "agent_rewards", "custom_metrics", "perf_stats",
     "hist_data", "media", "episode_faulty"])


class RolloutMetrics(_Base):
    """Metrics of one completed episode.

    Attributes:
        episode_length: Number of env steps of the episode.
        episode_reward: Sum of the rewards of all agents.
        agent_rewards: `(agent_id, policy_id) -> summed reward`.
        custom_metrics: `Episode.custom_metrics` (name -> float).
        perf_stats: Sampler timings (`mean_env_wait_ms`, ...), attached when the sampler
            hands the metrics out.
        hist_data: `Episode.hist_data` (name -> list of floats).
        media: `Episode.media`.
        episode_faulty: True when the episode ended because its sub-environment failed.

    Example:
        >>> m = RolloutMetrics(episode_length=3, episode_reward=1.5)
        >>> m.agent_rewards, m.episode_faulty
        ({}, False)
        >>> m._replace(perf_stats={"mean_env_wait_ms": 0.1}).perf_stats
        {'mean_env_wait_ms': 0.1}
    """

    __slots__ = ()

    def __new__(cls, episode_length, episode_reward, agent_rewards=None, custom_metrics=None,
                perf_stats=None, hist_data=None, media=None, episode_faulty=False):
        # Fresh dicts per record: a shared mutable default would leak between episodes.
        return super().__new__(
            cls, episode_length, episode_reward,
            {} if agent_rewards is None else agent_rewards,
            {} if custom_metrics is None else custom_metrics,
            {} if perf_stats is None else perf_stats,
            {} if hist_data is None else hist_data,
            {} if media is None else media,
            episode_faulty)
