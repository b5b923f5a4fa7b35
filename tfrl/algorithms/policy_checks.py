"""Checks that the value-based and actor-critic policies run on their spaces and config
before building anything: one source for the errors SAC, CQL, TD3, DDPG and DQN raise.

- `check_no_recurrent_model`: the config's `model` asks for no LSTM or attention (the
  policies that learn from single replayed or time-major rows, not sequences);
- `check_box_actions`: a Box action space with finite bounds (a deterministic actor
  squashed into them: TD3, DDPG);
- `check_discrete`: a Discrete action space (one Q-value per action: DQN);
- `policy_action_space`: the Box the actions of SAC, CQL, TD3 and DDPG live in
  (`[-1, 1]` with `normalize_actions`, else the env's bounds).

Each raises a `ValueError` naming the owner (the policy class), what it received and
how to fix it.
"""

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

__all__ = ["RECURRENT_MODEL_KEYS", "check_box_actions", "check_discrete",
           "check_no_recurrent_model", "policy_action_space"]

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
        raise ValueError(f"{owner} needs a Box action space of continuous actions; received "
                         f"{action_space!r}. Give the env a Box action space (e.g. flatten "
                         "the space with an action wrapper), or use SAC's discrete variant "
                         "or DQN for Discrete actions.")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError(f"{owner} squashes its actions into the action space's bounds, which "
                         f"must be finite; received {action_space}.")


def check_discrete(action_space: gym.Space, owner: str = "DQN") -> None:
    """Raises a `ValueError` unless `action_space` is `Discrete`."""
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"{owner} needs a Discrete action space (one Q-value per action); received "
            f"{action_space}. For continuous (Box) actions use SAC or TD3.")


def policy_action_space(action_space: gym.Space, config: Mapping[str, Any]) -> gym.Space:
    """The space a squashing policy's actions live in: with `normalize_actions` (the
    default) and a Box with finite bounds, `Box(-1, 1)` of its shape, and the sampler
    (and `compute_single_action`) unsquash the actions into the env's bounds, as RLlib
    and Stable-Baselines3 do; otherwise the space itself (the policy acts in env units).
    The policy's `action_space` stays the env's; the batches hold the policy's actions.

    Example:
        >>> policy_action_space(gym.spaces.Box(0.0, 3.0, (2,)), {"normalize_actions": True})
        Box(-1.0, 1.0, (2,), float32)
        >>> policy_action_space(gym.spaces.Box(0.0, 3.0, (2,)), {"normalize_actions": False})
        Box(0.0, 3.0, (2,), float32)
    """
    if (isinstance(action_space, gym.spaces.Box) and config["normalize_actions"]
            and np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        return gym.spaces.Box(-1.0, 1.0, action_space.shape, np.float32)
    return action_space
