"""Sub-environments in their own OS processes: the process backend of `RemoteVectorEnv`.

Why this is hand-written: gymnasium's `AsyncVectorEnv` runs sub-envs in worker
processes, but `step_async`/`step_wait` always address all of them at once and wait
for all, and it batches (and auto-resets) observations; `RemoteVectorEnv` must step
only the sub-envs that were ready and return whichever answer first. So each sub-env
gets one process and one duplex pipe, requests are answered in order, and the parent
waits on any subset with `multiprocessing.connection.wait(timeout)`.

Processes start with the "spawn" method: TensorFlow is usually imported in the
parent by the time envs are made, and forking a process with TF's threads running is
unsafe. `make_env` is shipped with cloudpickle. As always with "spawn", a script that
creates sub-processes must guard its entry point with `if __name__ == "__main__":`.
"""

import collections
import logging
import multiprocessing
import signal
import time
import weakref
from multiprocessing import connection
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence

from tfrl.env.utils.sub_env_runner import (
    Reply,
    SubEnvError,
    answer,
    create_runner,
    error_payload,
    pickle_env_creator,
    unwrap_reply,
)

logger = logging.getLogger(__name__)

START_METHOD = "spawn"
# Seconds `stop()` gives sub-envs to close their env and exit before terminating them.
_CLOSE_GRACE_S = 2.0


def _worker_loop(conn: connection.Connection, index: int, creator: bytes, multiagent: bool):
    """Runs in the sub-env process: builds the env, then answers requests in order."""
    # Ctrl-C goes to the whole process group; let the parent decide what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runner, creation_error = create_runner(creator, index, multiagent)
    try:
        while True:
            try:
                method, args, kwargs = conn.recv()
            except (EOFError, OSError):  # The parent closed the pipe or died.
                return
            if method == "close":
                if runner is not None:
                    try:
                        runner.close()
                    except Exception:
                        logger.exception("Closing sub-environment %d failed.", index)
                conn.send((True, None))
                return
            reply = answer(runner, creation_error, method, args, kwargs)
            try:
                conn.send(reply)
            except OSError:  # The parent closed the pipe or died.
                return
            except Exception as e:  # The result could not be pickled.
                name, message, tb = error_payload(e)
                conn.send((False, (name, f"its {method}() result cannot be sent to the "
                                         f"parent process: {message}", tb)))
    except OSError:  # The parent went away while we answered.
        pass
    finally:
        conn.close()


def _shutdown(processes: List[multiprocessing.Process], conns: List[connection.Connection]):
    """Asks every sub-env to close, then terminates (and finally kills) stragglers."""
    for conn in conns:
        try:
            conn.send(("close", (), {}))
        except (OSError, ValueError):  # Already dead or closed.
            pass
    deadline = time.monotonic() + _CLOSE_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.terminate()
            process.join(1.0)
        if process.is_alive():
            process.kill()
            process.join(1.0)
    for conn in conns:
        conn.close()


class SubEnvProcess:
    """Handle of one sub-env process; `RemoteVectorEnv.get_sub_environments()` lists them.

    Attributes:
        index: The sub-env's index (its env id).
        process: The `multiprocessing.Process` running it.
    """

    def __init__(self, pool: "ProcessEnvPool", index: int):
        self._pool = pool
        self.index = index
        self.process = pool.processes[index]

    @property
    def pid(self) -> Optional[int]:
        """The OS process id."""
        return self.process.pid

    def is_alive(self) -> bool:
        """Whether the process is running."""
        return self.process.is_alive()

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Calls `env.<name>(*args, **kwargs)` in the sub-process and returns the result.

        Blocks until the sub-env has answered its earlier requests too (their results
        stay queued for `poll()`); a non-callable attribute is returned as is.
        """
        return self._pool.call(self.index, "call", name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"SubEnvProcess(index={self.index}, pid={self.pid}, alive={self.is_alive()})"


class ProcessEnvPool:
    """`num_envs` sub-envs, each in its own process, answering requests in order.

    Args:
        make_env: Picklable (by cloudpickle) callable `index -> env`, called in the
            sub-process.
        num_envs: Number of sub-envs (indices `0..num_envs-1`).
        multiagent: Whether the envs are multi-agent.
        timeout_s: Longest wait for one answer in `call` (None: no limit).
    """

    def __init__(self, make_env: Callable[[int], Any], num_envs: int, multiagent: bool,
                 timeout_s: Optional[float]):
        creator = pickle_env_creator(make_env)
        self.timeout_s = timeout_s
        ctx = multiprocessing.get_context(START_METHOD)
        self.processes: List[multiprocessing.Process] = []
        self._conns: List[connection.Connection] = []
        # Per sub-env, oldest first: requests sent but not fetched, as [method, abandoned]
        # (a `call` that timed out abandons its reply), and replies read but not fetched.
        self._inflight: Dict[int, Deque[list]] = {i: collections.deque() for i in range(num_envs)}
        self._stash: Dict[int, Deque[Reply]] = {i: collections.deque() for i in range(num_envs)}
        self._finalizer = weakref.finalize(self, _shutdown, self.processes, self._conns)
        try:
            for index in range(num_envs):
                parent_conn, child_conn = ctx.Pipe()
                process = ctx.Process(
                    target=_worker_loop, args=(child_conn, index, creator, multiagent),
                    name=f"tfrl-sub-env-{index}", daemon=True,
                )
                process.start()
                child_conn.close()  # The child's end lives in the child: EOF when it dies.
                self.processes.append(process)
                self._conns.append(parent_conn)
        except BaseException:
            self._finalizer()
            raise
        self._handles = [SubEnvProcess(self, i) for i in range(num_envs)]

    def submit(self, index: int, method: str, *args: Any, **kwargs: Any) -> None:
        """Sends a request; its reply is fetched later with `fetch(index)`."""
        try:
            self._conns[index].send((method, args, kwargs))
        except (BrokenPipeError, ConnectionResetError, EOFError) as e:
            raise self._died(index, f"before it could run {method}()") from e
        self._inflight[index].append([method, False])

    def wait(self, indices: Sequence[int], timeout: Optional[float]) -> List[int]:
        """Those of `indices` (all with a request in flight) whose next reply is ready.

        Returns as soon as at least one is ready, or after `timeout` seconds (an empty
        list). A sub-env whose process died counts as ready: `fetch` then raises.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ready = [i for i in indices if self._has_reply(i)]
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if ready or remaining == 0.0:
                return ready
            waitables = {}
            for i in indices:
                waitables[self._conns[i]] = i
                waitables[self.processes[i].sentinel] = i
            if not connection.wait(list(waitables), remaining):
                return []

    def fetch(self, index: int) -> Any:
        """Returns the result of the oldest request in flight to sub-env `index`.

        Raises:
            SubEnvError: If the request raised inside the sub-env (with its traceback),
                or the sub-env process died.
        """
        while self._inflight[index]:
            reply = self._stash[index].popleft() if self._stash[index] else self._receive(index)
            method, abandoned = self._inflight[index].popleft()
            if not abandoned:
                return unwrap_reply(index, method, reply)
        raise RuntimeError(f"No request in flight to sub-env {index}.")

    def call(self, index: int, method: str, *args: Any, **kwargs: Any) -> Any:
        """Sends a request and waits (at most `timeout_s`) for its own reply.

        Replies to earlier requests are read and kept for `fetch`.
        """
        self.submit(index, method, *args, **kwargs)
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        while len(self._stash[index]) < len(self._inflight[index]):
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not connection.wait([self._conns[index], self.processes[index].sentinel],
                                   remaining):
                self._inflight[index][-1][1] = True  # Its late reply will be dropped.
                raise TimeoutError(
                    f"Sub-environment {index} did not answer {method}() within "
                    f"timeout_s={self.timeout_s} s; raise timeout_s if it is just slow."
                )
            self._stash[index].append(self._receive(index))
        reply = self._stash[index].pop()
        return unwrap_reply(index, self._inflight[index].pop()[0], reply)

    def handles(self) -> List[SubEnvProcess]:
        """One `SubEnvProcess` handle per sub-env."""
        return list(self._handles)

    def stop(self) -> None:
        """Closes every sub-env and ends its process (idempotent, bounded in time)."""
        self._finalizer()

    def _has_reply(self, index: int) -> bool:
        """Whether `fetch(index)` would return (or raise) without blocking.

        Reads available replies into the stash, dropping those of abandoned requests.
        """
        inflight, stash, conn = self._inflight[index], self._stash[index], self._conns[index]
        while True:
            if stash and inflight[0][1]:
                stash.popleft()
                inflight.popleft()
                continue
            if stash:
                return True
            if not inflight:
                return False
            if not conn.poll(0):
                return self.processes[index].exitcode is not None  # Dead: fetch raises.
            try:
                stash.append(conn.recv())
            except (EOFError, OSError):
                return True  # The process died: fetch raises.

    def _receive(self, index: int) -> Reply:
        try:
            return self._conns[index].recv()
        except (EOFError, OSError) as e:
            method = self._inflight[index][len(self._stash[index])][0]
            raise self._died(index, f"while running {method}()") from e

    def _died(self, index: int, when: str) -> SubEnvError:
        process = self.processes[index]
        process.join(1.0)
        return SubEnvError(
            index,
            f"its process (pid {process.pid}) died unexpectedly (exit code "
            f"{process.exitcode}) {when}. A negative exit code is the signal that killed "
            "it (e.g. -9: killed, often for lack of memory).",
        )
