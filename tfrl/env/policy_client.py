"""RLlib's path `ray.rllib.env.policy_client`: a re-export of `tfrl.serving.policy_client`,
where the policy client lives (the serving layer sits above evaluation; nothing in tfrl
imports this module)."""

from tfrl.serving.policy_client import PolicyClient

__all__ = ["PolicyClient"]
