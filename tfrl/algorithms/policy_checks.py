"""Checks that the value-based and actor-critic policies run on their spaces and config
before building anything: one source for the errors SAC, CQL, TD3, DDPG, DQN and IMPALA
raise.

- `check_no_recurrent_model`: the config's `model` asks for no LSTM or attention (the
  policies that learn from single replayed or time-major rows, not sequences);
- `check_box_actions`: a Box action space with finite bounds (a deterministic actor
  squashed into them: TD3, DDPG);
- `check_discrete`: a Discrete action space (one Q-value per action: DQN).

Each raises a `ValueError` naming the owner (the policy class), what it received and
how to fix it.
"""

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

__all__ = ["RECURRENT_MODEL_KEYS", "check_box_actions", "check_discrete",
           "check_no_recurrent_model"]

# The `model` config keys that make a catalog model recurrent.
RECURRENT_MODEL_KEYS = ("use_lstm", "use_attention")
_NO_RECURRENT_HINT = "Set them to False, or stack frames into the observation."


def check_no_recurrent_model(config: Mapping[str, Any], owner: str,
                             hint: str = _NO_RECURRENT_HINT) -> None:
    """Raises a `ValueError` if the config's `model` asks for an LSTM or attention.

    Args:
        config: The policy config (its `model` dict is read; None or missing: no model).
        owner: The name the error starts with (the policy class).
        hint: How to fix it (the error's last sentence).
    """
    model = (config or {}).get("model") or {}
    recurrent = [key for key in RECURRENT_MODEL_KEYS if model.get(key)]
    if recurrent:
        raise ValueError(
            f"{owner} does not support recurrent models; received model config "
            f"{', '.join(f'{k}=True' for k in recurrent)}. {hint}")


def check_box_actions(action_space: gym.Space, owner: str = "TD3") -> None:
    """Raises a `ValueError` unless `action_space` is a Box with finite bounds."""
    if isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"{owner} needs a Box action space (a deterministic actor over continuous "
            f"actions); received {action_space}. For Discrete actions use SAC's discrete "
            "variant (SAC on a Discrete action space) or DQN.")
    if not isinstance(action_space, gym.spaces.Box):
        raise ValueError(f"{owner} needs a Box action space; received {action_space!r}.")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError(f"{owner} squashes its actions into the action space's bounds, which "
                         f"must be finite; received {action_space}.")


def check_discrete(action_space: gym.Space, owner: str = "DQN") -> None:
    """Raises a `ValueError` unless `action_space` is `Discrete`."""
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"{owner} needs a Discrete action space (one Q-value per action); received "
            f"{action_space}. For continuous (Box) actions use SAC or TD3.")
