"""WorkerSet: the local rollout worker plus remote workers reached through handles.

The local worker (index 0) lives in the driver and holds the policies that learn; remote
workers (indices 1..n) sample in parallel, each behind a `WorkerHandle`: Ray actors
(`remote_backend="ray"`, the default, `pip install 'tfrl[ray]'`) or in-process threads
(`remote_backend="thread"`, for tests and one-box pipelines). Weights travel as numpy
dicts, put in the object store once per broadcast.

Failures: a remote worker that is gone raises `WorkerCrashedError`. With
`recreate_failed_workers=True` in the trainer config, `sample_all` recreates it under the
same index, gives it the local worker's current weights, observation filters and global
vars, and samples it again in the same call, so an iteration loses no batch (that part
lives in `failures.RemoteWorkers`); a worker whose `sample()` raised (its env
failed) is recreated the same way, for the thread and Ray backends alike. Without it,
that error reaches the caller, and the worker re-creates its own envs for its next
`sample()` (see `RolloutWorker.sample`).
Every wait has a timeout (`sample_timeout_s`, `worker_health_probe_timeout_s`,
`worker_restore_timeout_s` in the trainer config; see `tfrl.evaluation.rollout_worker.config`).

    workers = WorkerSet(env_creator=lambda ctx: gym.make("CartPole-v1"),
                        policy_class=PPOTFPolicy, num_workers=2,
                        trainer_config={"num_cpus_per_worker": 0.5,
                                        "recreate_failed_workers": True})
    batches = workers.sample_all()           # one batch per remote worker
    workers.local_worker().learn_on_batch(concat_samples(batches))
    workers.sync_weights()                   # the remotes act with the new weights
    workers.stop()
"""

import concurrent.futures
import functools
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tfrl.evaluation.rollout_worker import config as wsc
from tfrl.evaluation.worker_set import state as worker_set_state
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.evaluation.worker_set.handles import ThreadWorkerHandle, WorkerHandle, get_results
from tfrl.evaluation.worker_set.failures import MAX_RECREATIONS_PER_CALL, RemoteWorkers
from tfrl.evaluation.worker_set.state import WorkerState
from tfrl.utils.backend_registry import REMOTE_WORKER, load_backend

logger = logging.getLogger(__name__)

_STOP_GRACE_S = 5.0


class WorkerSet:
    """A local `RolloutWorker` and `num_workers` remote ones.

    Args:
        env_creator: `EnvContext -> env`; default: from `trainer_config["env"]`.
        validate_env: Optional `(env, env_context) -> None` check run on every env.
        policy_class: The policy class used when `multiagent.policies` is empty (as
            `"default_policy"`) and for entries that name no class.
        trainer_config: An `AlgorithmConfig` (what `Algorithm` passes), or an RLlib-style
            config dict whose keys are checked: unknown keys (not read by the
            workers, nor in the config of `policy_class` or of the classes in
            `multiagent.policies`, see `rollout_worker.config.valid_config_keys`) raise
            `ValueError`.
        num_workers: Number of remote workers.
        local_worker: Whether to build the local worker (in this process).
        logdir: Directory passed to the workers as `log_dir`.
        worker_cls: The worker class (default `tfrl.evaluation.rollout_worker.RolloutWorker`).

    Raises:
        ValueError: On an unknown config key, a bad `remote_backend`, num_workers < 0 or
            `restart_failed_sub_environments=True` (not supported yet).
        ImportError: If remote workers need Ray and it is not installed.
    """

    def __init__(self, *, env_creator: Optional[Callable] = None,
                 validate_env: Optional[Callable] = None, policy_class: Optional[type] = None,
                 trainer_config: Any = None, num_workers: int = 0,
                 local_worker: bool = True, logdir: Optional[str] = None,
                 worker_cls: Optional[type] = None):
        if hasattr(trainer_config, "to_dict"):
            # A frozen AlgorithmConfig: its keys were checked when it was built.
            trainer_config = trainer_config.to_dict()
        else:
            wsc.check_trainer_config(trainer_config if trainer_config is not None else {},
                                     [policy_class] if policy_class is not None else [])
        config = dict(trainer_config or {})
        wsc.check_unsupported(config)
        if int(num_workers) < 0:
            raise ValueError(f"num_workers must be >= 0; received {num_workers}.")
        self._config = config
        self._env_creator = env_creator or wsc.env_creator_from_config(config)
        self._validate_env = validate_env
        self._policy_class = policy_class
        self._policy_specs = wsc.policy_specs(config, policy_class)
        self._logdir = logdir
        self._cls = worker_cls or RolloutWorker
        self._num_workers = int(num_workers)
        self._remotes = RemoteWorkers(self._make_remote, self._current_state, self._setting)
        self._local_worker = None
        self._global_vars: Optional[dict] = None
        self._stopped = False
        try:
            self._add_remote(self._num_workers)
            if local_worker:
                spaces = None
                if self._remotes.handles and not wsc.setting(config, "create_env_on_driver"):
                    spaces = self._spaces_from(self._remotes.handles[0])
                self._local_worker = self._make_worker(
                    cls=self._cls, env_creator=self._env_creator, validate_env=validate_env,
                    policy_cls=policy_class, worker_index=0, num_workers=self._num_workers,
                    config=config, spaces=spaces)
                if self._remotes.handles:
                    self.sync_weights()
        except BaseException:
            self.stop()
            raise

    # ----------------------------------------------------------------------------------
    # Accessors.

    def local_worker(self) -> "RolloutWorker":
        """The local worker (None if built with `local_worker=False`)."""
        return self._local_worker

    def remote_workers(self) -> List[WorkerHandle]:
        """The remote workers' handles, in index order (recreated ones replace old ones)."""
        return list(self._remotes.handles)

    def num_remote_workers(self) -> int:
        """Number of remote workers, healthy or not."""
        return len(self._remotes.handles)

    def healthy_worker_ids(self) -> List[int]:
        """Indices of the remote workers not known to be dead."""
        return [h.worker_index for h in self._remotes.handles if h.is_alive()]

    def _setting(self, key: str) -> Any:
        return wsc.setting(self._config, key)

    # ----------------------------------------------------------------------------------
    # Creating workers.

    def _make_worker(self, *, cls: type, env_creator: Optional[Callable],
                     validate_env: Optional[Callable], policy_cls: Optional[type],
                     worker_index: int, num_workers: int, config: dict,
                     spaces: Optional[dict] = None) -> Any:
        """Builds one worker in this process from the trainer config (`rollout_worker.config`)."""
        specs = (self._policy_specs if policy_cls is self._policy_class
                 else wsc.policy_specs(config, policy_cls))
        return cls(**self._worker_kwargs(worker_index, num_workers, config, env_creator,
                                         validate_env, specs, spaces))

    def _worker_kwargs(self, worker_index, num_workers, config, env_creator, validate_env,
                       specs, spaces=None) -> Dict[str, Any]:
        return wsc.worker_kwargs(config, env_creator=env_creator, validate_env=validate_env,
                                 policy_spec=specs, worker_index=worker_index,
                                 num_workers=num_workers, log_dir=self._logdir, spaces=spaces)

    def _make_remote(self, worker_index: int) -> WorkerHandle:
        kwargs = self._worker_kwargs(worker_index, self._num_workers, self._config,
                                     self._env_creator, self._validate_env, self._policy_specs)
        factory = functools.partial(self._cls, **kwargs)
        if self._setting("remote_backend") == "thread":
            return ThreadWorkerHandle(factory, worker_index)
        try:  # `tfrl.backends` registers the Ray backend (this layer does not import it).
            handle_cls = load_backend(REMOTE_WORKER, "ray")
        except ImportError as e:
            raise ImportError(
                f"WorkerSet runs remote workers (num_workers={self._num_workers}) as Ray "
                "actors, but Ray is not installed. Install it with pip install 'tfrl[ray]', "
                "or sample in the local worker (num_workers=0), or set "
                "trainer_config['remote_backend'] = 'thread' for in-process workers."
            ) from e
        return handle_cls.create(factory, worker_index,
                                **wsc.remote_resources(self._config))

    def _add_remote(self, n: int) -> List[WorkerHandle]:
        start = len(self._remotes.handles) + 1
        self._num_workers = max(self._num_workers, start + n - 1)
        return self._remotes.add(range(start, start + n))

    def add_workers(self, num_workers: int) -> None:
        """Adds `num_workers` remote workers (next indices); they get the local weights.

        Waits (at most `worker_restore_timeout_s`) until they have started.
        """
        new = self._add_remote(int(num_workers))
        if new:
            state = self._current_state()
            futures = [f for h in new for f in worker_set_state.send_state(h, state)]
            futures += [h.ready() for h in new]
            get_results(futures, self._setting("worker_restore_timeout_s"), "new workers")

    def _spaces_from(self, handle: WorkerHandle) -> Dict[str, Tuple[Any, Any]]:
        """PolicyID -> (original obs space, action space) of a remote worker's policies."""
        return get_results([handle.apply(worker_set_state.policy_spaces)],
                           self._setting("worker_restore_timeout_s"), "workers")[0]

    # ----------------------------------------------------------------------------------
    # Weights and state.

    def sync_weights(self, policies: Optional[Sequence[str]] = None,
                     from_worker: Optional[Any] = None,
                     global_vars: Optional[dict] = None) -> None:
        """Sends the weights of `from_worker` (default: the local worker) to all workers.

        Args:
            policies: Policy ids to send (None: all).
            from_worker: A worker or handle to take the weights from; the local worker
                then gets them too.
            global_vars: Global vars (e.g. `{"timestep": t}`) set along with the weights.

        Raises:
            ValueError: If there is no local worker and no `from_worker`.
            WorkerCrashedError: If a worker is dead and `recreate_failed_workers` is off.
        """
        local = self._local_worker
        if local is None and from_worker is None:
            raise ValueError("sync_weights() needs a source: this WorkerSet has no local "
                             "worker, so pass from_worker=<worker or handle>.")
        if global_vars is not None:
            self._global_vars = dict(global_vars)
        if not self._remotes.handles and from_worker is None:
            if local is not None and global_vars is not None:
                local.set_global_vars(global_vars)
            return
        if from_worker is None:
            weights = local.get_weights(policies)
        elif isinstance(from_worker, WorkerHandle):
            weights = get_results([from_worker.call("get_weights", policies)],
                                  self._setting("sample_timeout_s"), "workers")[0]
        else:
            weights = from_worker.get_weights(policies)
        if from_worker is not None and local is not None:
            local.set_weights(weights, global_vars=global_vars)
        targets = [h for h in self._remotes.handles if h is not from_worker]
        self._remotes.on_all(targets, lambda h, w: h.call("set_weights", w, global_vars=global_vars),
                     "set_weights", shared=weights)

    def _current_state(self, exclude: Optional[WorkerHandle] = None) -> WorkerState:
        return worker_set_state.current_state(
            self._local_worker, [h for h in self._remotes.handles if h is not exclude],
            self._global_vars, self._setting("worker_health_probe_timeout_s"))

    # ----------------------------------------------------------------------------------
    # Running functions everywhere.

    def _remote_results(self, send: Callable[[WorkerHandle], concurrent.futures.Future],
                        what: str) -> List[Any]:
        return self._remotes.on_all(self._remotes.handles, lambda h, _: send(h), what)

    def foreach_worker(self, func: Callable[[Any], Any], *, local_worker: bool = True
                       ) -> List[Any]:
        """`[func(worker) for every worker]`, local first, then remotes in index order;
        with `local_worker=False` (RLlib 2.x's keyword) the remote workers only."""
        local = ([func(self._local_worker)]
                 if local_worker and self._local_worker is not None else [])
        return local + self._remote_results(lambda h: h.apply(func), "foreach_worker")

    def foreach_worker_with_index(self, func: Callable[[Any, int], Any]) -> List[Any]:
        """`func(worker, worker_index)` on every worker (local is index 0)."""
        local = [func(self._local_worker, 0)] if self._local_worker is not None else []
        return local + self._remote_results(
            lambda h: h.apply(func, h.worker_index), "foreach_worker_with_index")

    def _foreach_policy_like(self, method: str, func: Callable) -> List[Any]:
        results = []
        if self._local_worker is not None:
            results.extend(getattr(self._local_worker, method)(func))
        for remote in self._remote_results(lambda h: h.call(method, func), method):
            results.extend(remote)
        return results

    def foreach_policy(self, func: Callable[[Any, str], Any]) -> List[Any]:
        """`func(policy, policy_id)` for every policy of every worker, flattened."""
        return self._foreach_policy_like("foreach_policy", func)

    def foreach_trainable_policy(self, func: Callable[[Any, str], Any]) -> List[Any]:
        """As `foreach_policy`, for the policies in each worker's `policies_to_train`."""
        return self._foreach_policy_like("foreach_trainable_policy", func)

    def foreach_env(self, func: Callable[[Any], Any]) -> List[List[Any]]:
        """Per worker (local first), the list of `func(sub_env)` over its sub-envs."""
        local = ([self._local_worker.foreach_env(func)]
                 if self._local_worker is not None else [])
        return local + self._remote_results(lambda h: h.call("foreach_env", func), "foreach_env")

    # ----------------------------------------------------------------------------------
    # Sampling and failures (see `failures.RemoteWorkers`).

    def sample_all(self, timeout_s: Optional[float] = None) -> List[Any]:
        """One `sample()` per remote worker, in parallel (or the local worker's, if none):
        the batches in worker-index order. `timeout_s` and the recreation of failed
        workers as in `failures.RemoteWorkers.sample_all`.

        Raises:
            ValueError: If the set has no workers at all.
            WorkerCrashedError: If a worker crashed and `recreate_failed_workers` is off
                (or it crashed again after `MAX_RECREATIONS_PER_CALL` recreations).
            TimeoutError: If batches are missing after the timeout.
        """
        if not self._remotes.handles:
            if self._local_worker is None:
                raise ValueError("sample_all() on a WorkerSet without workers.")
            return [self._local_worker.sample()]
        return self._remotes.sample_all(timeout_s)

    def recreate_failed_workers(self) -> List[int]:
        """Recreates every dead remote worker (same index, current state); their indices.

        Waits at most `worker_restore_timeout_s` for them to start.
        """
        return self._remotes.recreate_failed()

    def probe_unhealthy_workers(self) -> List[int]:
        """Pings every remote worker; dead ones are recreated if `recreate_failed_workers`.

        A worker that does not answer within `worker_health_probe_timeout_s` (e.g. busy
        with a long call) is left alone; one whose handle reports a crash is marked dead.

        Returns:
            The indices of the workers that were recreated.
        """
        return self._remotes.probe_unhealthy()

    def stop(self) -> None:
        """Stops the local worker and every remote worker (then kills the remotes).

        Calling it again does nothing.
        """
        if self._stopped:
            return
        self._stopped = True
        if self._local_worker is not None:
            try:
                self._local_worker.stop()
            except Exception as e:  # Keep stopping the others.
                logger.warning("Stopping the local worker raised %s: %s", type(e).__name__, e)
        stopping = [h.call("stop") for h in self._remotes.handles if h.is_alive()]
        concurrent.futures.wait(stopping, timeout=_STOP_GRACE_S)
        for handle in self._remotes.handles:
            handle.kill()


__all__ = ["WorkerSet", "MAX_RECREATIONS_PER_CALL"]
