"""RLlib's path `ray.rllib.env.policy_server_input`: a re-export of
`tfrl.serving.policy_server_input`, where the policy server lives (the serving layer sits
above evaluation; nothing in tfrl imports this module)."""

from tfrl.serving.policy_server_input import TOKEN_ENV_VAR, PolicyServerInput

__all__ = ["PolicyServerInput", "TOKEN_ENV_VAR"]
