"""Rollout workers as Ray actors: `RayWorkerHandle`, the Ray backend of `WorkerHandle`.

Each remote worker is one `WorkerActor` holding a worker built from a factory (e.g.
`functools.partial(RolloutWorker, **kwargs)`) inside the actor's process. The handle
turns Ray's ObjectRefs into `concurrent.futures.Future`s (`ObjectRef.future()`), so the
WorkerSet and the execution operators never touch Ray:

- a method that raises: the future fails with the method's own exception;
- an actor that is gone (killed with `ray.kill`, its process died, its constructor
  raised): the future fails with `WorkerCrashedError`, as with `ThreadWorkerHandle`.

Large arguments sent to several workers (weights) go through `share()` (`ray.put` once);
Ray resolves the reference when it is a top-level argument of `call`. For code ported
from RLlib, `handle.<method>.remote(...)` returns Ray's ObjectRef as an actor handle
would, for every worker method except the handle's own (`call`, `apply`, `ready`, `pid`,
`kill`): `handle.apply(func)` returns a future. Resources: actors
ask for `num_cpus` (default 1, RLlib's `num_cpus_per_worker`; use a fraction such as 0.5
on small machines, since an actor that cannot get its CPUs waits forever for them) and
`num_gpus`. Nothing here waits without a timeout: callers wait on the futures.
"""

import concurrent.futures
import logging
import os
from typing import Any, Callable, Dict, Optional

import ray
from ray.exceptions import RayActorError, RayError, RayTaskError

from tfrl.backends.ray import actor_runtime_env, init_ray
from tfrl.evaluation.worker_set.handles import WorkerCrashedError, WorkerHandle

logger = logging.getLogger(__name__)

# CPUs a rollout-worker actor asks for when none are configured (RLlib's default).
DEFAULT_NUM_CPUS = 1.0


class WorkerActor:
    """Owns one worker inside a Ray actor.

    Args:
        factory: Zero-argument callable building the worker (shipped by cloudpickle).
    """

    def __init__(self, factory: Callable[[], Any]):
        self.worker = factory()

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`worker.<method>(*args, **kwargs)`."""
        return getattr(self.worker, method)(*args, **kwargs)

    def apply(self, func: Callable[..., Any], *args: Any) -> Any:
        """`func(worker, *args)`."""
        return func(self.worker, *args)

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()


_RemoteWorkerActor = ray.remote(WorkerActor)


class RayWorkerHandle(WorkerHandle):
    """A worker in a Ray actor.

    Create with `RayWorkerHandle.create(factory, worker_index, ...)`, or wrap an existing
    `WorkerActor` handle.

    Args:
        actor: The `WorkerActor`'s Ray actor handle.
        worker_index: The worker's index.
    """

    def __init__(self, actor: "ray.actor.ActorHandle", worker_index: int):
        self.actor = actor
        self.worker_index = int(worker_index)
        self._death: Optional[str] = None  # Why the actor is gone, once it is.

    @classmethod
    def create(cls, factory: Callable[[], Any], worker_index: int, *,
               num_cpus: Optional[float] = None, num_gpus: float = 0,
               resources: Optional[Dict[str, float]] = None,
               memory: Optional[float] = None) -> "RayWorkerHandle":
        """Starts an actor building `factory()`; returns at once (the actor starts async).

        Args:
            factory: Builds the worker inside the actor; must be picklable by cloudpickle.
            worker_index: The worker's index (also used in the actor's name in logs).
            num_cpus: CPUs the actor reserves (None: `DEFAULT_NUM_CPUS`).
            num_gpus: GPUs the actor reserves (fractions allowed).
            resources: Custom Ray resources.
            memory: Heap memory (bytes) the actor reserves.

        Raises:
            ValueError: If `num_cpus` or `num_gpus` is negative.
        """
        num_cpus = DEFAULT_NUM_CPUS if num_cpus is None else float(num_cpus)
        if num_cpus < 0 or num_gpus < 0:
            raise ValueError(f"Worker resources must be >= 0; received num_cpus={num_cpus}, "
                             f"num_gpus={num_gpus}.")
        init_ray()
        _warn_if_unschedulable(num_cpus, num_gpus)
        options: Dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus,
                                   "max_restarts": 0, "max_task_retries": 0}
        if resources:
            options["resources"] = dict(resources)
        if memory:
            options["memory"] = memory
        runtime_env = actor_runtime_env()  # TensorFlow's notices as quiet as the driver's
        if runtime_env:
            options["runtime_env"] = runtime_env
        actor = _RemoteWorkerActor.options(**options).remote(factory)
        return cls(actor, worker_index)

    @staticmethod
    def share(value: Any) -> "ray.ObjectRef":
        """Puts `value` in the object store once; pass the result to many `call`s."""
        return ray.put(value)

    def call(self, method: str, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        if not isinstance(method, str):
            raise TypeError(f"call() takes the method name as a str; received {method!r}. "
                            "Use apply(func, *args) to run a function on the worker.")
        return self._future(method, self.actor.call.remote(method, *args, **kwargs))

    def apply(self, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        return self._future(getattr(func, "__name__", "apply"),
                            self.actor.apply.remote(func, *args))

    def pid(self) -> concurrent.futures.Future:
        """A future of the actor's process id."""
        return self._future("pid", self.actor.pid.remote())

    def __getattr__(self, name: str) -> "_RemoteMethod":
        """RLlib-style access for ported code: `ray.get(handle.sample.remote())`."""
        if name.startswith("_"):
            raise AttributeError(name)
        return _RemoteMethod(self.actor, name)

    def kill(self) -> None:
        if self._death is None:
            self._death = "it was killed"
        try:
            ray.kill(self.actor, no_restart=True)
        except (RayError, ValueError) as e:  # Already gone.
            logger.debug("ray.kill of worker %d: %s", self.worker_index, e)

    def is_alive(self) -> bool:
        return self._death is None

    def _future(self, what: str, ref: "ray.ObjectRef") -> concurrent.futures.Future:
        """A future of `ref` whose errors are translated (see the module docstring)."""
        outer: concurrent.futures.Future = concurrent.futures.Future()
        if self._death is not None:
            outer.set_exception(WorkerCrashedError(
                self.worker_index, f"{self._death}; cannot run {what}() on it."))
            return outer

        def settle(inner: concurrent.futures.Future) -> None:
            try:
                outer.set_result(inner.result())
            except RayTaskError as e:  # The method raised: hand on its own exception.
                cause = getattr(e, "cause", None)
                outer.set_exception(cause if isinstance(cause, BaseException) else e)
            except (RayActorError, RayError) as e:
                if self._death is None:
                    self._death = f"its Ray actor died ({type(e).__name__})"
                outer.set_exception(WorkerCrashedError(
                    self.worker_index, f"its Ray actor died while running {what}(): "
                    f"{type(e).__name__}: {e}"))
            except BaseException as e:  # E.g. a deserialization error.
                outer.set_exception(e)

        ref.future().add_done_callback(settle)
        return outer


class _RemoteMethod:
    """`handle.<name>.remote(*args, **kwargs)` -> an ObjectRef of `worker.<name>(...)`."""

    def __init__(self, actor: "ray.actor.ActorHandle", name: str):
        self._actor, self._name = actor, name

    def remote(self, *args: Any, **kwargs: Any) -> "ray.ObjectRef":
        return self._actor.call.remote(self._name, *args, **kwargs)


def _warn_if_unschedulable(num_cpus: float, num_gpus: float) -> None:
    """Warns when the cluster can never give one actor what it asks for."""
    total = ray.cluster_resources()
    for name, wanted in (("CPU", num_cpus), ("GPU", num_gpus)):
        if wanted > total.get(name, 0.0):
            logger.warning(
                "A rollout-worker actor asks for %s %s but the Ray cluster has %s; it will "
                "wait until such a node joins. Lower num_%ss_per_worker if that is not "
                "intended.", wanted, name, total.get(name, 0.0), name.lower())


__all__ = ["DEFAULT_NUM_CPUS", "RayWorkerHandle", "WorkerActor"]
