"""The sub-environment side of `RemoteVectorEnv`, shared by its process and Ray backends.

A `SubEnvRunner` owns one env inside a worker process (or Ray actor) and answers
`reset`/`step` in the two-level format of `BaseEnv.poll()` for that one sub-env:
single-agent envs get the agent id `"agent0"`, multi-agent envs pass their dicts
through, and both flag dicts always carry `"__all__"`. Wrapping and checking results
on the sub-env side keeps that work off the parent, which runs the policy. Requests
and replies are plain tuples, so the process backend's pipe and the Ray backend's
actor calls carry the same messages.
"""

import pickle
import traceback
from typing import Any, Callable, Dict, Optional, Tuple

# A gymnasium dependency: ships lambdas and closures to sub-env processes.
import cloudpickle

from tfrl.utils.typing import MultiAgentDict

# Agent id of single-agent sub-envs (`tfrl.env.base_env._DUMMY_AGENT_ID`).
DUMMY_AGENT_ID = "agent0"

# Requests a sub-env answers, and its replies: (True, result) or
# (False, (error type name, message, traceback text)).
METHODS = ("reset", "step", "call", "spaces")
Reply = Tuple[bool, Any]
ResetResult = Tuple[MultiAgentDict, MultiAgentDict]
StepResult = Tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


class SubEnvError(RuntimeError):
    """A sub-environment of a `RemoteVectorEnv` failed, or its process/actor died.

    Attributes:
        env_index: Index (env id) of the sub-environment that failed.
        remote_traceback: The traceback text from inside the sub-environment's process
            (or actor), or None if the process died without one.
    """

    def __init__(self, env_index: int, message: str, remote_traceback: Optional[str] = None):
        text = f"Sub-environment {env_index}: {message}"
        if remote_traceback:
            text += f"\n\nTraceback in sub-environment {env_index}'s process:\n{remote_traceback}"
        super().__init__(text)
        self.env_index = env_index
        self.remote_traceback = remote_traceback


def pickle_env_creator(make_env: Callable[[int], Any]) -> bytes:
    """Serializes `make_env` with cloudpickle so that another process can call it.

    cloudpickle (a gymnasium dependency) also ships lambdas and closures; what it cannot
    ship are objects bound to this process, such as locks, open files or sockets.

    Raises:
        TypeError: If `make_env` is not callable or cannot be pickled.
    """
    if not callable(make_env):
        raise TypeError(
            "make_env must be a callable taking the sub-env index and returning an env; "
            f"received {make_env!r} of type {type(make_env).__name__}."
        )
    try:
        return cloudpickle.dumps(make_env)
    except Exception as e:  # cloudpickle raises TypeError, PicklingError, AttributeError...
        raise TypeError(
            "make_env must be picklable to create sub-environments in their own processes "
            f"(remote_worker_envs=True); cloudpickle failed on {make_env!r} with "
            f"{type(e).__name__}: {e}. Use a module-level function (or a functools.partial "
            "of one) that builds the env inside the sub-process, and do not capture locks, "
            "open files, sockets or already-created envs in it."
        ) from e


def unpickle_env_creator(data: bytes) -> Callable[[int], Any]:
    """The inverse of `pickle_env_creator` (cloudpickle output loads with `pickle`)."""
    return pickle.loads(data)


class SubEnvRunner:
    """Steps one (single- or multi-agent) env and returns two-level-dict results.

    Args:
        env: A gymnasium env (`multiagent=False`) or a `MultiAgentEnv`-like env whose
            `reset` returns `(obs_dict, info_dict)` and whose `step` returns five dicts
            with `"__all__"` in both flag dicts (`multiagent=True`).
        multiagent: Whether `env` is multi-agent.
    """

    def __init__(self, env: Any, multiagent: bool):
        self.env = env
        self.multiagent = bool(multiagent)

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> ResetResult:
        """Resets the env; returns `(obs, infos)` keyed by agent id."""
        return format_reset(self.env.reset(seed=seed, options=options), self.multiagent,
                            type(self.env).__name__)

    def step(self, action: Any) -> StepResult:
        """Steps the env with `action` (an action dict for multi-agent envs)."""
        return format_step(self.env.step(action), self.multiagent, type(self.env).__name__)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Calls `env.<name>(*args, **kwargs)`, or returns the attribute if not callable."""
        attr = getattr(self.env, name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def spaces(self) -> Tuple[Any, Any]:
        """The env's `(observation_space, action_space)` (None where it has none)."""
        return (getattr(self.env, "observation_space", None),
                getattr(self.env, "action_space", None))

    def close(self) -> None:
        """Closes the env if it can be closed."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


def create_runner(
    creator: bytes, index: int, multiagent: bool
) -> Tuple[Optional[SubEnvRunner], Optional[Tuple[str, str, str]]]:
    """Builds sub-env `index` from a pickled `make_env`: `(runner, None)` or `(None, error)`."""
    try:
        return SubEnvRunner(unpickle_env_creator(creator)(index), multiagent), None
    except Exception as e:
        name, message, tb = error_payload(e)
        return None, (name, f"make_env({index}) failed: {message}", tb)


def answer(runner: Optional[SubEnvRunner], creation_error: Optional[tuple], method: str,
           args: tuple, kwargs: dict) -> Reply:
    """Runs one request on the sub-env side; exceptions become an error reply."""
    if creation_error is not None:
        return False, creation_error
    if method not in METHODS:
        return False, ("ValueError", f"unknown request {method!r}; expected one of {METHODS}", "")
    try:
        return True, getattr(runner, method)(*args, **kwargs)
    except Exception as e:
        return False, error_payload(e)


def unwrap_reply(index: int, method: str, reply: Reply) -> Any:
    """The result in `reply`, or raises its error as a `SubEnvError` for sub-env `index`."""
    ok, payload = reply
    if ok:
        return payload
    error_type, message, remote_traceback = payload
    raise SubEnvError(index, f"{method}() raised {error_type}: {message}", remote_traceback or None)


def error_payload(error: BaseException) -> Tuple[str, str, str]:
    """`(type name, message, traceback text)` of the exception being handled."""
    return type(error).__name__, str(error), traceback.format_exc()


def format_reset(result: Any, multiagent: bool, env_name: str = "env") -> ResetResult:
    """gymnasium `reset()` result -> `(obs, infos)` keyed by agent id."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValueError(
            "reset() must return gymnasium's (obs, info) pair; received "
            f"{_describe(result)} from {env_name}.reset()."
        )
    obs, info = result
    if not multiagent:
        return {DUMMY_AGENT_ID: obs}, {DUMMY_AGENT_ID: info}
    _check_dicts(env_name, "reset", {"obs": obs, "infos": info})
    return obs, info


def format_step(result: Any, multiagent: bool, env_name: str = "env") -> StepResult:
    """gymnasium `step()` result -> five dicts keyed by agent id, flags with `"__all__"`."""
    if not (isinstance(result, tuple) and len(result) == 5):
        raise ValueError(
            "step() must return gymnasium's 5-tuple (obs, reward, terminated, truncated, "
            f"info); received {_describe(result)} from {env_name}.step(). Old gym envs "
            "returning 4 values need gymnasium's compatibility wrapper."
        )
    obs, reward, terminated, truncated, info = result
    if not multiagent:
        terminated, truncated = bool(terminated), bool(truncated)
        return (
            {DUMMY_AGENT_ID: obs},
            {DUMMY_AGENT_ID: reward},
            {DUMMY_AGENT_ID: terminated, "__all__": terminated},
            {DUMMY_AGENT_ID: truncated, "__all__": truncated},
            {DUMMY_AGENT_ID: info},
        )
    _check_dicts(
        env_name, "step",
        {"obs": obs, "rewards": reward, "terminateds": terminated, "truncateds": truncated,
         "infos": info},
    )
    for name, flags in (("terminateds", terminated), ("truncateds", truncated)):
        if "__all__" not in flags:
            raise ValueError(
                f"A multi-agent env's step() must put the key '__all__' in {name} (True when "
                f"the whole episode ended); {env_name}.step() returned {name} with keys "
                f"{sorted(map(str, flags))}."
            )
    return obs, reward, terminated, truncated, info


def _check_dicts(env_name: str, method: str, values: Dict[str, Any]) -> None:
    for name, value in values.items():
        if not isinstance(value, dict):
            raise ValueError(
                f"A multi-agent env's {method}() must return dicts keyed by agent id; "
                f"{env_name}.{method}() returned {name} of type "
                f"{type(value).__name__}. Pass multiagent=False for single-agent envs."
            )


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    return f"a {type(value).__name__}"
