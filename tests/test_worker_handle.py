"""ThreadWorkerHandle: ordered calls on the worker's own thread, kill, crash errors."""

import concurrent.futures
import threading

import pytest

from tfrl.evaluation.worker_set.handles import (ThreadWorkerHandle, WorkerCrashedError,
                                           WorkerHandle, get_results)

TIMEOUT = 10


class Recorder:
    """Records the calls it gets and the threads they run on."""

    worker_index = 3

    def __init__(self):
        self.calls = []
        self.threads = set()

    def record(self, x, *, tag=""):
        self.calls.append((x, tag))
        self.threads.add(threading.get_ident())
        return len(self.calls)

    def fail(self):
        raise ValueError("worker method failed")

    def block(self, event):
        event.wait(TIMEOUT)
        return "unblocked"

    def apply(self, func, *args):
        return func(self, *args)


def test_calls_run_in_order_on_one_thread_of_their_own():
    handle = ThreadWorkerHandle(Recorder())
    assert isinstance(handle, WorkerHandle)
    assert handle.worker_index == 3  # From the worker's attribute.
    futures = [handle.call("record", i, tag="t") for i in range(20)]
    assert get_results(futures, TIMEOUT) == list(range(1, 21))
    worker = handle.worker
    assert worker.calls == [(i, "t") for i in range(20)]
    assert len(worker.threads) == 1 and threading.get_ident() not in worker.threads
    assert handle.apply(lambda w, a, b: (w is worker, a + b), 1, 2).result(TIMEOUT) == (True, 3)
    handle.kill()


def test_factory_is_built_on_the_worker_thread_and_index_is_explicit():
    built_on = []

    def factory():
        built_on.append(threading.get_ident())
        return Recorder()

    handle = ThreadWorkerHandle(factory, worker_index=7)
    assert handle.worker_index == 7
    handle.ready().result(TIMEOUT)
    assert handle.call("record", 0).result(TIMEOUT) == 1
    assert built_on == list(handle.worker.threads)
    assert repr(handle) == "ThreadWorkerHandle(worker_index=7, alive)"
    handle.kill()
    assert repr(handle) == "ThreadWorkerHandle(worker_index=7, dead)"


def test_factory_without_index_is_rejected():
    with pytest.raises(ValueError, match="needs worker_index when given a factory"):
        ThreadWorkerHandle(Recorder)


def test_method_exceptions_reach_the_caller_unchanged():
    handle = ThreadWorkerHandle(Recorder(), worker_index=1)
    with pytest.raises(ValueError, match="worker method failed"):
        handle.call("fail").result(TIMEOUT)
    with pytest.raises(AttributeError, match="no_such_method"):
        handle.call("no_such_method").result(TIMEOUT)
    assert handle.is_alive()  # A failing method is not a crash.
    with pytest.raises(TypeError, match="takes the method name as a str"):
        handle.call(len)
    handle.kill()


def test_kill_fails_pending_and_later_calls_with_worker_crashed_error():
    handle = ThreadWorkerHandle(Recorder(), worker_index=2)
    event = threading.Event()
    running = handle.call("block", event)
    queued = handle.call("record", 1)
    handle.kill()
    assert not handle.is_alive()
    with pytest.raises(WorkerCrashedError, match="Worker 2 crashed: it was killed") as info:
        queued.result(TIMEOUT)
    assert info.value.worker_index == 2
    with pytest.raises(WorkerCrashedError, match=r"cannot run record\(\) on it"):
        handle.call("record", 2).result(TIMEOUT)
    with pytest.raises(WorkerCrashedError):
        running.result(TIMEOUT)  # Failed at once, although its thread still runs.
    event.set()
    assert handle.worker.calls == []  # The queued call never ran.
    handle.kill()  # Idempotent.


def test_a_factory_that_raises_makes_the_worker_crashed():
    def factory():
        raise OSError("no env here")

    handle = ThreadWorkerHandle(factory, worker_index=4)
    with pytest.raises(WorkerCrashedError,
                       match="Worker 4 crashed: it failed to start: OSError: no env here"):
        handle.call("record", 1).result(TIMEOUT)
    assert not handle.is_alive()
    handle.kill()


def test_get_results_times_out_naming_the_stragglers():
    handle = ThreadWorkerHandle(Recorder(), worker_index=1)
    event = threading.Event()
    done = concurrent.futures.Future()
    done.set_result(0)
    with pytest.raises(TimeoutError, match=r"1 of 2 workers did not answer within "
                       r"timeout_s=0.05 s"):
        get_results([done, handle.call("block", event)], 0.05)
    event.set()
    handle.kill()
