"""Sub-environments as Ray actors: the Ray backend of `RemoteVectorEnv` (`backend="ray"`).

Each sub-env lives in a `SubEnvActor` (requesting `num_cpus=0`) that answers requests
in order, exactly like a process of the process backend, so both backends share the
reply format and error reporting of `tfrl.env.utils.sub_env_runner`. As in RLlib,
`existing_envs` may instead hold the user's own Ray actors exposing gymnasium's
`reset`/`step`; `make_env(i)` must then create the remaining actors, and their results
are put into the two-level format here, in the parent.
"""

import collections
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from tfrl.backends.ray import actor_runtime_env, init_ray
from tfrl.env.utils.sub_env_runner import (
    Reply,
    SubEnvError,
    answer,
    create_runner,
    format_reset,
    format_step,
    pickle_env_creator,
    unwrap_reply,
)

# Seconds `stop()` gives sub-envs to close their env before their actors are killed.
_CLOSE_GRACE_S = 2.0


class SubEnvActor:
    """Owns one sub-env inside a Ray actor.

    Args:
        creator: `make_env`, pickled by `pickle_env_creator`.
        index: The sub-env's index, passed to `make_env`.
        multiagent: Whether the env is multi-agent.
    """

    def __init__(self, creator: bytes, index: int, multiagent: bool):
        self._index = index
        self._runner, self._creation_error = create_runner(creator, index, multiagent)

    def request(self, method: str, args: tuple, kwargs: dict) -> Reply:
        """Answers one `RemoteVectorEnv` request (errors come back as a reply)."""
        return answer(self._runner, self._creation_error, method, args, kwargs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """`env.<name>(*args, **kwargs)` (or the attribute) for users of the actor handle."""
        return unwrap_reply(self._index, "call", self.request("call", (name, *args), kwargs))

    def close(self) -> None:
        """Closes the env."""
        if self._runner is not None:
            self._runner.close()


_RemoteSubEnvActor = ray.remote(num_cpus=0)(SubEnvActor)


class RayEnvPool:
    """`num_envs` sub-envs as Ray actors, with the interface of `ProcessEnvPool`.

    Args:
        make_env: `index -> env` (run inside the actor), or `index -> ActorHandle`
            when `existing_envs` holds actor handles.
        num_envs: Number of sub-envs.
        multiagent: Whether the envs are multi-agent.
        existing_envs: Actor handles to use as the first sub-envs; other objects are
            ignored (they cannot be moved into an actor).
        timeout_s: Longest wait for one result (None: no limit).
    """

    def __init__(self, make_env: Callable[[int], Any], num_envs: int, multiagent: bool,
                 existing_envs: Sequence[Any], timeout_s: Optional[float]):
        init_ray()
        self.multiagent = multiagent
        self.timeout_s = timeout_s
        given = [e for e in existing_envs if isinstance(e, ray.actor.ActorHandle)]
        self.make_env_creates_actors = bool(given)
        if len(given) > num_envs:
            raise ValueError(f"Received {len(given)} existing sub-env actors for num_envs="
                             f"{num_envs}; pass at most num_envs.")
        if given:
            self.actors = list(given)
            while len(self.actors) < num_envs:
                actor = make_env(len(self.actors))
                if not isinstance(actor, ray.actor.ActorHandle):
                    raise TypeError(
                        "existing_envs holds Ray actors, so make_env must create actors too; "
                        f"make_env({len(self.actors)}) returned {type(actor).__name__}."
                    )
                self.actors.append(actor)
        else:
            creator = pickle_env_creator(make_env)
            runtime_env = actor_runtime_env()  # TensorFlow as quiet as the driver's
            actor_class = (_RemoteSubEnvActor.options(runtime_env=runtime_env)
                           if runtime_env else _RemoteSubEnvActor)
            self.actors = [actor_class.remote(creator, i, multiagent)
                           for i in range(num_envs)]
        self._refs: Dict[int, Deque[Tuple[str, ray.ObjectRef]]] = {
            i: collections.deque() for i in range(num_envs)
        }

    def submit(self, index: int, method: str, *args: Any, **kwargs: Any) -> None:
        """Sends a request; its result is fetched later with `fetch(index)`."""
        actor = self.actors[index]
        if not self.make_env_creates_actors:
            ref = actor.request.remote(method, args, kwargs)
        else:
            name = args[0] if method == "call" else method
            try:
                remote_method = getattr(actor, name)
            except AttributeError as e:
                raise SubEnvError(index, f"its actor has no method {name}().") from e
            ref = remote_method.remote(*(args[1:] if method == "call" else args), **kwargs)
        self._refs[index].append((method, ref))

    def wait(self, indices: Sequence[int], timeout: Optional[float]) -> List[int]:
        """Those of `indices` whose oldest result is ready; returns when one is."""
        heads = {self._refs[i][0][1]: i for i in indices}
        ready, _ = ray.wait(list(heads), num_returns=1, timeout=timeout)
        if ready and len(heads) > 1:
            ready, _ = ray.wait(list(heads), num_returns=len(heads), timeout=0)
        return sorted(heads[ref] for ref in ready)

    def fetch(self, index: int) -> Any:
        """The result of the oldest request to sub-env `index` (raises `SubEnvError`)."""
        method, ref = self._refs[index].popleft()
        return self._get(index, method, ref)

    def call(self, index: int, method: str, *args: Any, **kwargs: Any) -> Any:
        """Sends a request and waits (at most `timeout_s`) for its result."""
        if method == "spaces" and self.make_env_creates_actors:
            return None, None  # A user's actor exposes no attributes through its handle.
        self.submit(index, method, *args, **kwargs)
        method, ref = self._refs[index].pop()
        return self._get(index, method, ref)

    def handles(self) -> List[Any]:
        """The actor handles."""
        return list(self.actors)

    def stop(self) -> None:
        """Closes every env (bounded wait), then kills every actor."""
        closing = []
        for actor in self.actors:
            try:
                closing.append(actor.close.remote())
            except AttributeError:  # A user's actor without close().
                pass
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_GRACE_S)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)

    def _get(self, index: int, method: str, ref: ray.ObjectRef) -> Any:
        try:
            value = ray.get(ref, timeout=self.timeout_s)
        except GetTimeoutError as e:
            raise TimeoutError(
                f"Sub-environment {index} did not answer {method}() within "
                f"timeout_s={self.timeout_s} s; raise timeout_s if it is just slow."
            ) from e
        except RayActorError as e:
            raise SubEnvError(index, f"its Ray actor died while running {method}(): {e}") from e
        except RayTaskError as e:  # Only the user's own actors raise; ours reply.
            raise SubEnvError(index, f"{method}() raised {type(e.cause).__name__}: {e.cause}",
                              str(e)) from e
        if not self.make_env_creates_actors:
            return unwrap_reply(index, method, value)
        try:
            if method == "reset":
                return format_reset(value, self.multiagent, f"sub-env actor {index}")
            if method == "step":
                return format_step(value, self.multiagent, f"sub-env actor {index}")
        except ValueError as e:
            raise SubEnvError(index, str(e)) from e
        return value
