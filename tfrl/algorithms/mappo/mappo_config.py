"""MAPPOConfig: MAPPO's config dataclass (re-exported by `tfrl.algorithms.mappo.mappo`).

PPO's keys and defaults plus the centralized critic's. The critic's input is chosen by
`critic_input`; `MAPPO` resolves "auto" and fills `critic_agents`,
`critic_obs_sizes` and `critic_state_size` from the env before it builds the policies,
so a user sets at most `critic_input` (and `critic_agents` to fix a subset or an order).

Example:
    >>> config = MAPPOConfig().training(critic_input="all_obs", critic_agents=["a", "b"])
    >>> config.critic_input, config.critic_agents
    ('all_obs', ['a', 'b'])
    >>> MAPPOConfig().training(critic_input="state")
    Traceback (most recent call last):
    ...
    ValueError: MAPPOConfig: critic_input must be one of ('auto', 'global_state', ...
"""

import dataclasses
from typing import Any, Optional

from tfrl.algorithms.ppo.ppo_config import PPOConfig

# How the centralized critic's input is made (see `MAPPOConfig.critic_input`).
CRITIC_INPUTS = ("auto", "global_state", "all_obs")


@dataclasses.dataclass(frozen=True)
class MAPPOConfig(PPOConfig):
    """MAPPO's config: `PPOConfig` plus the centralized critic's keys.

    Each agent's policy acts on its own observation; the value function (a separate
    network, `model`'s `fcnet_hiddens` / `fcnet_activation`) sees a centralized input
    built in postprocessing: the agent's own observation (flattened) followed by

    - "global_state": the env's global state at that step (an env with a `state()`
      method, such as a PettingZoo Parallel env behind `ParallelPettingZooEnv`, or one
      whose step infos carry `"state"` and `"next_state"`);
    - "all_obs": the observations of the other agents of `critic_agents` at that step,
      in that order (zeros for an agent without an observation at that step).

    Attributes:
        critic_input: "global_state", "all_obs", or "auto" (the default: "global_state"
            when the env provides a global state, else "all_obs").
        critic_agents: The agent ids whose observations the "all_obs" input holds, in
            order; None: all of the env's agent ids (sorted by their string form).
        critic_obs_sizes: The flat observation size of each agent of `critic_agents`
            (filled in by `MAPPO` from the env). A policy built by hand without
            `critic_agents` sees its own observation only.
        critic_state_size: The flat size of the global state ("global_state"; filled
            in by `MAPPO` from the env).
    """

    critic_input: str = "auto"
    critic_agents: Optional[list] = None
    critic_obs_sizes: Optional[list] = None
    critic_state_size: Optional[int] = None


    def validate(self) -> None:
        super().validate()

        def fail(msg: str) -> None:
            raise ValueError(f"MAPPOConfig: {msg}")

        if self.critic_input not in CRITIC_INPUTS:
            fail(f"critic_input must be one of {CRITIC_INPUTS}; received "
                 f"{self.critic_input!r}. Use 'auto' to let MAPPO pick from the env.")
        if self.critic_agents is not None and (
                not isinstance(self.critic_agents, (list, tuple)) or not self.critic_agents):
            fail(f"critic_agents must be a non-empty list of agent ids or None; received "
                 f"{self.critic_agents!r}.")
        sizes = self.critic_obs_sizes
        if sizes is not None and (
                self.critic_agents is None or len(sizes) != len(self.critic_agents)
                or not all(_is_size(n) for n in sizes)):
            fail(f"critic_obs_sizes must list one int >= 1 per agent of critic_agents "
                 f"({self.critic_agents!r}); received {sizes!r}. Leave both to MAPPO.")
        if self.critic_state_size is not None and not _is_size(self.critic_state_size):
            fail(f"critic_state_size must be an int >= 1 or None; received "
                 f"{self.critic_state_size!r}.")
        if not self.use_critic:
            fail("use_critic must be True: the centralized critic is what MAPPO adds to PPO. "
                 "For PPO without a critic use PPO.")


def _is_size(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 1
