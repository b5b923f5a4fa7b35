"""`RemoteWorkers`: the remote workers of a `WorkerSet` and how they survive crashes —
sampling with recreation inside the call, broadcasting with recreation, recreation and
health probes.

The `WorkerSet` owns one `RemoteWorkers`; it gives it the functions that build a remote
worker (`make_remote(worker_index)`) and that tell the state a new worker gets
(`state_for_new(exclude)`: weights, filters and global vars; see `worker_set.state`),
and the trainer-config lookup for the timeouts and `recreate_failed_workers`.
"""

import concurrent.futures
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tfrl.evaluation.worker_set import state as worker_set_state
from tfrl.evaluation.worker_set.handles import (WorkerCrashedError, WorkerHandle,
                                                WorkerTimeoutError, get_results)

logger = logging.getLogger(__name__)

# How often one `sample_all` call recreates the same worker before giving up.
MAX_RECREATIONS_PER_CALL = 2
# Longest wait for a failed but living worker's `stop()` before it is killed.
_STOP_GRACE_S = 5.0


class RemoteWorkers:
    """The handles of a WorkerSet's remote workers, in index order, and what to do when
    one crashed (see the module docstring).

    Args:
        make_remote: `worker_index -> WorkerHandle`, a new remote worker.
        state_for_new: `exclude -> WorkerState`, what a new worker gets (not asking the
            handle `exclude`, e.g. the crashed worker being replaced).
        setting: `key -> value` of the trainer config (`sample_timeout_s`,
            `worker_restore_timeout_s`, `worker_health_probe_timeout_s`,
            `recreate_failed_workers`).

    Attributes:
        handles: The handles (a recreated worker replaces the old one in place).
    """

    def __init__(self, make_remote: Callable[[int], WorkerHandle],
                 state_for_new: Callable[[Optional[WorkerHandle]], Any],
                 setting: Callable[[str], Any]):
        self.handles: List[WorkerHandle] = []
        self._make_remote = make_remote
        self._state_for_new = state_for_new
        self._setting = setting

    def add(self, indices: Sequence[int]) -> List[WorkerHandle]:
        """Builds remote workers with these indices and appends them; the new handles."""
        new = [self._make_remote(i) for i in indices]
        self.handles.extend(new)
        return new

    def on_all(self, handles: Sequence[WorkerHandle], send: Callable, what: str,
                shared: Any = None) -> List[Any]:
        """`send(handle, shared)` on every handle; the results in order.

        A crashed worker raises, or, with `recreate_failed_workers`, is recreated (with
        the current state) and left out of the results.
        """
        if not handles:
            return []
        value = type(handles[0]).share(shared) if shared is not None else None
        futures = [send(h, value) for h in handles]  # A dead one fails its future.
        timeout_s = self._setting("sample_timeout_s")
        concurrent.futures.wait(futures, timeout=timeout_s)
        late = [h for h, f in zip(handles, futures) if not f.done()]
        if late:
            # A worker that does not answer is treated as one that failed: recreated
            # (it gets the current state, so a broadcast reaches it) or reported.
            if not self._setting("recreate_failed_workers"):
                raise self._timeout_error([h.worker_index for h in late], what, timeout_s)
            for h in late:
                logger.warning("Remote worker %d did not finish %s() within %s s; "
                               "recreating it.", h.worker_index, what, timeout_s)
                h.kill()
        results = []
        for h, f in zip(handles, futures):
            try:
                results.append(f.result())
            except WorkerCrashedError as e:
                if not self._setting("recreate_failed_workers"):
                    raise self._crash_error(h.worker_index, what, e) from e
        if any(not h.is_alive() for h in handles) and self._setting("recreate_failed_workers"):
            self.recreate_failed()
        return results

    def sample_all(self, timeout_s: Optional[float] = None) -> List[Any]:
        """One `sample()` per remote worker, in parallel.

        Args:
            timeout_s: Longest wait for the batches (default: `sample_timeout_s`); each
                recreation adds `worker_restore_timeout_s`.

        Returns:
            The batches, in worker-index order.

        With `recreate_failed_workers`, a worker that crashed or whose `sample()`
        raised (e.g. its env raised) is recreated and sampled again within the call.

        Raises:
            WorkerCrashedError: If a worker crashed and `recreate_failed_workers` is off
                (or it crashed or raised again after `MAX_RECREATIONS_PER_CALL`
                recreations).
            Exception: The error a worker's `sample()` raised, if
                `recreate_failed_workers` is off.
            TimeoutError: If batches are missing after the timeout.
        """
        recreate = self._setting("recreate_failed_workers")
        timeout_s = self._setting("sample_timeout_s") if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        pending: Dict[concurrent.futures.Future, Tuple[int, List]] = {}
        for pos, handle in enumerate(self.handles):
            state_futures = []
            if not handle.is_alive() and recreate:
                handle, state_futures = self._recreate(pos)
                deadline += self._setting("worker_restore_timeout_s")
            pending[handle.call("sample")] = (pos, state_futures)
        results: Dict[int, Any] = {}
        recreations: Dict[int, int] = {}
        timed_out = set()  # positions of the workers killed for not answering in time
        while pending:
            done, _ = concurrent.futures.wait(
                pending, timeout=max(0.0, deadline - time.monotonic()),
                return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                if not recreate:
                    late = sorted(self.handles[p].worker_index for p, _ in pending.values())
                    raise self._timeout_error(late, "sample", timeout_s)
                # Treated as failed: killed (its hung call is dropped), recreated and
                # sampled again below, up to MAX_RECREATIONS_PER_CALL times.
                for future, (pos, _) in list(pending.items()):
                    timed_out.add(pos)
                    logger.warning("Remote worker %d returned no sample within %s s; "
                                   "recreating it.", self.handles[pos].worker_index,
                                   timeout_s)
                    self.handles[pos].kill()
                continue
            for future in done:
                pos, state_futures = pending.pop(future)
                index = self.handles[pos].worker_index
                try:
                    results[pos] = future.result()
                    for f in state_futures:  # Ran before sample(); their callbacks may lag.
                        f.result(timeout=self._setting("worker_health_probe_timeout_s"))
                except Exception as e:
                    # A dead worker, or one whose sample() raised (its env failed: the
                    # worker's env and sampler are in an unknown state). Without
                    # recreation the error reaches the caller (a method's own error
                    # unchanged); with it, the worker is replaced and sampled again, and
                    # the failed call returned no batch, so none is counted twice.
                    crashed = isinstance(e, WorkerCrashedError)
                    if not recreate:
                        if crashed:
                            raise self._crash_error(index, "sample", e) from e
                        raise
                    recreations[pos] = recreations.get(pos, 0) + 1
                    if recreations[pos] > MAX_RECREATIONS_PER_CALL:
                        what = ("crashed" if crashed else f"raised {type(e).__name__}: {e}")
                        if pos in timed_out:
                            what = f"returned no sample within {timeout_s} s"
                        raise WorkerCrashedError(
                            index, f"it {what} again after {MAX_RECREATIONS_PER_CALL} "
                            "recreations in one sample_all() call.") from e
                    if not crashed:
                        logger.warning("Remote worker %d raised %s in sample(): %s", index,
                                       type(e).__name__, e)
                    timed_out.discard(pos)
                    handle, state_futures = self._recreate(pos)
                    deadline = max(deadline, time.monotonic()
                                   + self._setting("worker_restore_timeout_s"))
                    pending[handle.call("sample")] = (pos, state_futures)
        return [results[pos] for pos in sorted(results)]

    @staticmethod
    def _timeout_error(indices: List[int], what: str, timeout_s: float) -> WorkerTimeoutError:
        return WorkerTimeoutError(
            indices, what, timeout_s,
            " Set trainer_config['recreate_failed_workers'] = True to replace workers "
            "that do not answer, or raise sample_timeout_s if they are just slow.")

    @staticmethod
    def _crash_error(index: int, what: str, cause: WorkerCrashedError) -> WorkerCrashedError:
        return WorkerCrashedError(
            index, f"{cause.reason.rstrip('.')} (during {what}()). Set trainer_config["
            "'recreate_failed_workers'] = True to recreate crashed workers (with the current "
            "weights, filters and global vars) and carry on.")

    def _recreate(self, pos: int) -> Tuple[WorkerHandle, List[concurrent.futures.Future]]:
        """Replaces the worker at list position `pos` by a new one with the same index."""
        old = self.handles[pos]
        if old.is_alive():  # Its sample() raised: let it close its envs, briefly.
            try:
                old.call("stop").result(timeout=min(_STOP_GRACE_S,
                                                    self._setting("worker_health_probe_timeout_s")))
            except Exception as e:  # A broken worker may not stop cleanly; it is killed.
                logger.warning("Stopping remote worker %d before recreating it raised %s: %s",
                               old.worker_index, type(e).__name__, e)
        old.kill()
        logger.warning("Recreating remote worker %d, which failed.", old.worker_index)
        state = self._state_for_new(old)
        new = self._make_remote(old.worker_index)
        self.handles[pos] = new
        return new, worker_set_state.send_state(new, state)

    def recreate_failed(self) -> List[int]:
        """Recreates every dead remote worker (same index, current state); their indices.

        Waits at most `worker_restore_timeout_s` for them to start.
        """
        restored, futures = [], []
        for pos, handle in enumerate(self.handles):
            if not handle.is_alive():
                new, state_futures = self._recreate(pos)
                restored.append(new.worker_index)
                futures += state_futures + [new.ready()]
        get_results(futures, self._setting("worker_restore_timeout_s"), "recreated workers")
        return restored

    def probe_unhealthy(self) -> List[int]:
        """Pings every remote worker; dead ones are recreated if `recreate_failed_workers`.

        A worker that does not answer within `worker_health_probe_timeout_s` (e.g. busy
        with a long call) is left alone; one whose handle reports a crash is marked dead.

        Returns:
            The indices of the workers that were recreated.
        """
        pings = [(h, h.ready()) for h in self.handles if h.is_alive()]
        concurrent.futures.wait([f for _, f in pings],
                                timeout=self._setting("worker_health_probe_timeout_s"))
        for handle, ping in pings:
            if ping.done() and isinstance(ping.exception(), WorkerCrashedError):
                handle.kill()
        if self._setting("recreate_failed_workers"):
            return self.recreate_failed()
        return []
