"""BaseEnv: the one asynchronous, always-vectorized interface samplers see.

This module holds the interface itself, which every adapter (`_VectorEnvToBaseEnv`,
`RemoteVectorEnv`, ...) subclasses; it imports none of them. The conversion of the
other env types (`convert_to_base_env`) knows every adapter, so it lives above them in
`tfrl.env.base_env` (RLlib's path, which also re-exports `BaseEnv`) and is handed to
this module with `set_converter` when that module is imported.

Every environment a rollout worker samples (a gymnasium env, a `VectorEnv`, a
`MultiAgentEnv`, an `ExternalEnv`, sub-environments in other processes) is converted
to a `BaseEnv` by `BaseEnv.to_base_env`. A sampler then loops:

    obs, rewards, terminateds, truncateds, infos, off_policy_actions = env.poll()
    env.send_actions({env_id: {agent_id: action for each agent in obs[env_id]}})

All five results of `poll()` are two-level dicts `env_id -> agent_id -> value` holding
only the agents that are ready to act (or whose episode just ended). Rewards are
`None` right after a (sub-)env reset. `terminateds` and `truncateds` (gymnasium
semantics, kept apart) carry an `"__all__"` key per env id: the whole sub-env episode
ended. Single-agent envs use env ids `0..num_envs-1` and agent id `"agent0"`.
"""

from typing import Any, Callable, Dict, Optional, Tuple

import gymnasium as gym

from tfrl.utils.typing import AgentID, EnvID, MultiEnvDict

# Returned by `try_reset` when the reset observation arrives through the next poll().
ASYNC_RESET_RETURN = "async_reset_return"
# Agent id of single-agent envs inside the two-level dicts.
_DUMMY_AGENT_ID = "agent0"

# `convert_to_base_env` of tfrl.env.base_env, set there (see the module docstring).
_converter: Optional[Callable[..., "BaseEnv"]] = None


class BaseEnv:
    """The lowest-level env interface: several agents in several sub-envs, asynchronously.

    Subclasses implement `poll` and `send_actions`, and usually `try_reset`,
    `get_sub_environments` and `stop`. `observation_space` and `action_space` are the
    spaces of one agent (required for single-agent envs; may be None for
    multi-agent envs whose agents differ).
    """

    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None

    def poll(
        self,
    ) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict]:
        """Returns observations of the agents ready to act, and what happened since.

        Returns:
            `(obs, rewards, terminateds, truncateds, infos, off_policy_actions)`, each
            a dict `env_id -> agent_id -> value`. `terminateds`/`truncateds` hold an
            `"__all__"` flag per env id. `off_policy_actions` holds actions that agents
            already took by themselves (those need no `send_actions`).
        """
        raise NotImplementedError

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        """Sends actions (`env_id -> agent_id -> action`) for agents of the last poll."""
        raise NotImplementedError

    def try_reset(
        self,
        env_id: Optional[EnvID] = None,
        *,
        seed: Optional[int] = None,
        options: Optional[dict] = None,
    ) -> Optional[Tuple[MultiEnvDict, MultiEnvDict]]:
        """Resets one sub-env (or all, if `env_id` is None), if supported.

        Returns:
            `(obs, infos)` two-level dicts of the reset sub-env(s); None if this env
            cannot be reset by the caller; `ASYNC_RESET_RETURN` if the reset
            observation will arrive through a later `poll()`.
        """
        return None

    def try_render(self, env_id: Optional[EnvID] = None) -> Any:
        """Renders one (or every) sub-env, if supported; returns an RGB array or None."""
        return None

    def get_sub_environments(self, as_dict: bool = False) -> Any:
        """The underlying sub-environments (list, or dict env_id -> env)."""
        return {} if as_dict else []

    def get_agent_ids(self) -> set:
        """Ids of the agents this env may have (`{"agent0"}` for single-agent envs)."""
        return {_DUMMY_AGENT_ID}

    def stop(self) -> None:
        """Closes every sub-environment that can be closed."""
        for env in self.get_sub_environments():
            close = getattr(env, "close", None)
            if callable(close):
                close()

    @staticmethod
    def to_base_env(
        env: Any,
        make_env: Optional[Callable[[int], Any]] = None,
        num_envs: int = 1,
        remote_envs: bool = False,
        remote_env_batch_wait_ms: int = 0,
        policy_config: Optional[dict] = None,
    ) -> "BaseEnv":
        """Converts any supported env into a BaseEnv (see `convert_to_base_env`).

        Raises:
            RuntimeError: If no converter is set (`tfrl.env.base_env` was never
                imported; importing `BaseEnv` from there, its public path, sets it).
        """
        if _converter is None:
            raise RuntimeError(
                "BaseEnv.to_base_env() needs the env converter of tfrl.env.base_env; "
                "import BaseEnv from tfrl.env.base_env (or tfrl.env), which sets it.")
        return _converter(
            env,
            make_env=make_env,
            num_envs=num_envs,
            remote_envs=remote_envs,
            remote_env_batch_wait_ms=remote_env_batch_wait_ms,
        )


def with_dummy_agent_id(
    env_id_to_values: Dict[EnvID, Any], dummy_id: AgentID = _DUMMY_AGENT_ID
) -> MultiEnvDict:
    """`{env_id: value}` -> `{env_id: {dummy_id: value}}` (single-agent to two-level)."""
    return {env_id: {dummy_id: value} for env_id, value in env_id_to_values.items()}


def set_converter(converter: Callable[..., BaseEnv]) -> None:
    """Sets the function behind `BaseEnv.to_base_env` (`tfrl.env.base_env` does)."""
    global _converter  # pylint: disable=global-statement
    _converter = converter
