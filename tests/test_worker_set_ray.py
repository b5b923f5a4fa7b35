"""WorkerSet with Ray actors as remote workers.

Skipped without Ray; marked `ray` and `slow`. One local Ray runtime (2 CPUs, no
dashboard) and one WorkerSet of 2 remote workers (0.5 CPU each, so they fit with room
to recreate one) serve the whole module, because starting actors takes seconds; the
test that kills a worker's process runs last. Every wait has a timeout.
"""

import os
import signal
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import test_worker_set  # noqa: E402
from test_worker_set import NumpyPolicy, StandInWorker, make_env  # noqa: E402

from tfrl.backends.ray import init_ray  # noqa: E402
from tfrl.backends.ray.worker import RayWorkerHandle  # noqa: E402
from tfrl.evaluation.worker_handle import WorkerCrashedError  # noqa: E402
from tfrl.evaluation.worker_set import WorkerSet  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TIMEOUT = 60
# Ray workers cannot import the test modules: ship their classes by value.
for _module in (sys.modules[__name__], test_worker_set):
    ray.cloudpickle.register_pickle_by_value(_module)

CONFIG = {"num_cpus_per_worker": 0.5, "recreate_failed_workers": True, "seed": 10,
          "create_env_on_driver": True, "sample_timeout_s": TIMEOUT,
          "worker_restore_timeout_s": TIMEOUT, "worker_health_probe_timeout_s": TIMEOUT}


@pytest.fixture(scope="module")
def workers():
    started = init_ray(num_cpus=2, log_to_driver=False, configure_logging=False)
    ws = WorkerSet(env_creator=make_env, policy_class=NumpyPolicy, trainer_config=CONFIG,
                   num_workers=2, worker_cls=StandInWorker)
    yield ws
    ws.stop()
    if started:
        ray.shutdown()


def _pids(ws):
    return [h.pid().result(TIMEOUT) for h in ws.remote_workers()]


def _remote_weights(ws):
    return ws.foreach_worker(lambda w: w.policy_map["default_policy"].w)[1:]


def test_remote_workers_are_actors_in_their_own_processes(workers):
    handles = workers.remote_workers()
    assert all(isinstance(h, RayWorkerHandle) for h in handles)
    assert [h.worker_index for h in handles] == [1, 2]
    pids = _pids(workers)
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert workers.foreach_worker_with_index(lambda w, i: (i, w.kwargs["seed"])) == [
        (0, 10), (1, 11), (2, 12)]
    batches = workers.sample_all()
    assert [b["worker_index"].tolist() for b in batches] == [[1] * 4, [2] * 4]


def test_sync_weights_sets_the_weights_inside_the_actors(workers):
    new_w = np.array([0.5, -1.0, 2.0], np.float32)
    workers.local_worker().policy_map["default_policy"].set_weights({"w": new_w})
    workers.sync_weights(global_vars={"timestep": 7})
    for w in _remote_weights(workers):
        np.testing.assert_array_equal(w, new_w)
    assert workers.foreach_worker(lambda w: w.global_vars)[1:] == [{"timestep": 7}] * 2
    for batch in workers.sample_all():
        np.testing.assert_array_equal(batch["obs"][0], new_w)


def test_rllib_style_remote_calls_return_object_refs(workers):
    handle = workers.remote_workers()[0]
    batch = ray.get(handle.sample.remote(), timeout=TIMEOUT)
    assert batch["worker_index"].tolist() == [1] * 4
    refs = [handle.set_weights.remote({"default_policy": {"w": np.ones(3)}}),
            handle.get_weights.remote()]
    assert ray.get(refs[0], timeout=TIMEOUT) is None
    np.testing.assert_array_equal(ray.get(refs[1], timeout=TIMEOUT)["default_policy"]["w"],
                                  np.ones(3))
    workers.sync_weights()


def test_method_errors_are_not_crashes(workers):
    handle = workers.remote_workers()[0]
    with pytest.raises(KeyError, match="no_such_policy"):
        handle.apply(lambda w: w.policy_map["no_such_policy"]).result(TIMEOUT)
    assert handle.is_alive()


def test_killed_worker_process_is_recreated_within_sample_all(workers):
    """Last: kills worker 2's process; sample_all still returns both batches."""
    new_w = np.array([3.0, 1.0, -3.0], np.float32)
    workers.local_worker().policy_map["default_policy"].set_weights({"w": new_w})
    workers.local_worker().filters["default_policy"] = {"count": 5}
    workers.sync_weights()
    old = workers.remote_workers()[1]
    old_pid = old.pid().result(TIMEOUT)
    os.kill(old_pid, signal.SIGKILL)
    batches = workers.sample_all()
    assert [b["worker_index"][0] for b in batches] == [1, 2]  # The iteration lost nothing.
    new = workers.remote_workers()[1]
    assert new is not old and new.worker_index == 2 and not old.is_alive()
    assert new.pid().result(TIMEOUT) != old_pid
    np.testing.assert_array_equal(batches[1]["obs"][0], new_w)
    assert new.apply(lambda w: w.filters).result(TIMEOUT) == {"default_policy": {"count": 5}}
    assert workers.healthy_worker_ids() == [1, 2]
    # ray.kill: the same crash error, and recreation through probe_unhealthy_workers.
    ray.kill(new.actor, no_restart=True)
    with pytest.raises(WorkerCrashedError, match="Worker 2 crashed: its Ray actor died"):
        new.call("sample").result(TIMEOUT)
    assert workers.probe_unhealthy_workers() == [2]
    assert [b["worker_index"][0] for b in workers.sample_all()] == [1, 2]
