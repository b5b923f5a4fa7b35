"""BaseEnv (RLlib's path `ray.rllib.env.base_env`) and `convert_to_base_env`.

`BaseEnv`, the interface samplers poll, is defined in `tfrl.env.base_env_interface`
(every adapter subclasses it) and re-exported here. `convert_to_base_env` turns any
supported env (gymnasium env, gymnasium vector env, `VectorEnv`, `MultiAgentEnv`,
`ExternalEnv`, remote sub-envs) into a BaseEnv; it knows every adapter, so it sits
above them, and importing this module makes it the function behind
`BaseEnv.to_base_env`.
"""

from typing import Any, Callable, Optional

import gymnasium as gym

from tfrl.env import base_env_interface
from tfrl.env.base_env_interface import (  # noqa: F401  (re-exported)
    _DUMMY_AGENT_ID,
    ASYNC_RESET_RETURN,
    BaseEnv,
    with_dummy_agent_id,
)
from tfrl.env.external_env import ExternalEnv
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.remote_vector_env import RemoteVectorEnv
from tfrl.env.vector_env import VectorEnv


def convert_to_base_env(
    env: Any,
    make_env: Optional[Callable[[int], Any]] = None,
    num_envs: int = 1,
    remote_envs: bool = False,
    remote_env_batch_wait_ms: int = 0,
) -> BaseEnv:
    """Converts an env into a BaseEnv; `env` is sub-env 0 and `make_env(i)` makes the rest.

    Rules, in order: remote envs need `num_envs > 1`; a BaseEnv is returned as is; a
    MultiAgentEnv, an ExternalEnv (only `num_envs == 1`), a VectorEnv, a gymnasium
    vector env (`gymnasium.make_vec(...)`; `num_envs` is its own) and finally any
    gymnasium env (vectorized, in-process or in sub-processes) are wrapped.

    Raises:
        ValueError: For remote envs with `num_envs == 1`, or an ExternalEnv with
            `num_envs > 1`.
        TypeError: If the result is not a BaseEnv (an unsupported env type).
    """
    if remote_envs and num_envs == 1:
        raise ValueError(
            "Remote envs only make sense to use if num_envs > 1 (i.e. vectorization is "
            f"enabled); received num_envs={num_envs}. Raise num_envs or turn off "
            "remote_worker_envs."
        )
    if isinstance(env, BaseEnv):
        return env

    if isinstance(env, MultiAgentEnv):
        if remote_envs:
            result = RemoteVectorEnv(make_env, num_envs, multiagent=True,
                                     remote_env_batch_wait_ms=remote_env_batch_wait_ms,
                                     existing_envs=[env])
        else:
            result = env.to_base_env(make_env=make_env, num_envs=num_envs)
    elif isinstance(env, ExternalEnv):
        if num_envs != 1:
            raise ValueError(
                "External(MultiAgent)Env does not currently support num_envs > 1; "
                f"received num_envs={num_envs}. Run several clients against one "
                "ExternalEnv instead."
            )
        result = env.to_base_env()
    elif isinstance(env, VectorEnv):
        result = env.to_base_env()
    elif isinstance(env, gym.vector.VectorEnv):
        # gymnasium's own vector envs (e.g. make_vec's vector_entry_point) are fast.
        result = VectorEnv.from_gymnasium(env).to_base_env()
    elif remote_envs:
        result = RemoteVectorEnv(make_env, num_envs, multiagent=False,
                                 remote_env_batch_wait_ms=remote_env_batch_wait_ms,
                                 existing_envs=[env])
    else:
        result = VectorEnv.vectorize_gym_envs(
            make_env=make_env,
            existing_envs=[env],
            num_envs=num_envs,
            action_space=getattr(env, "action_space", None),
            observation_space=getattr(env, "observation_space", None),
        ).to_base_env()
    if not isinstance(result, BaseEnv):
        raise TypeError(
            f"Cannot convert {type(env).__name__} to a BaseEnv: expected a gymnasium.Env, "
            "VectorEnv, MultiAgentEnv, ExternalEnv or BaseEnv."
        )
    return result


base_env_interface.set_converter(convert_to_base_env)

__all__ = ["ASYNC_RESET_RETURN", "BaseEnv", "convert_to_base_env", "with_dummy_agent_id"]
