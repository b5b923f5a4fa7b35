"""WorkerSet with Ray actors as remote workers (real RolloutWorkers on CartPole).

Skipped without Ray; marked `ray` and `slow`. One local Ray runtime (2 CPUs, no
dashboard) and one WorkerSet of 2 remote workers (0.5 CPU each, so a recreated worker
fits too) serve the whole module, because actors importing TensorFlow take ~10 s to
start; the test that kills a worker's process runs last. Every wait has a timeout.
The policy is a numpy one (`LinearPolicy`), so the actors build no TF models.
"""

import os
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

import test_worker_set  # noqa: E402
from test_worker_set import LinearPolicy, make_cartpole  # noqa: E402

from tfrl.backends.ray.worker import RayWorkerHandle  # noqa: E402
from tfrl.evaluation.worker_set.handles import WorkerCrashedError  # noqa: E402
from tfrl.evaluation.worker_set import WorkerSet  # noqa: E402
from tfrl.policy.sample_batch import SampleBatch  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TIMEOUT = 60
# Ray workers cannot import the test modules: ship their classes by value.
for _module in (sys.modules[__name__], test_worker_set):
    ray.cloudpickle.register_pickle_by_value(_module)

CONFIG = {"num_cpus_per_worker": 0.5, "recreate_failed_workers": True, "seed": 10,
          "rollout_fragment_length": 10, "num_envs_per_worker": 2,
          "sample_timeout_s": TIMEOUT, "worker_restore_timeout_s": TIMEOUT,
          "worker_health_probe_timeout_s": TIMEOUT}


@pytest.fixture(scope="module")
def workers(ray_runtime):
    ws = WorkerSet(env_creator=make_cartpole, policy_class=LinearPolicy,
                   trainer_config=CONFIG, num_workers=2)
    yield ws
    ws.stop()


def _remote_w(ws):
    return [h.call("get_weights").result(TIMEOUT)["default_policy"]["w"]
            for h in ws.remote_workers()]


def test_remote_workers_are_actors_that_sample(workers):
    handles = workers.remote_workers()
    assert all(isinstance(h, RayWorkerHandle) for h in handles)
    assert [h.worker_index for h in handles] == [1, 2]
    pids = [h.pid().result(TIMEOUT) for h in handles]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert workers.local_worker().env is None  # Spaces came from worker 1.
    assert workers.foreach_worker_with_index(lambda w, i: (i, w.worker_index)) == [
        (0, 0), (1, 1), (2, 2)]
    batches = workers.sample_all()
    assert [b.count for b in batches] == [20, 20]
    assert all(isinstance(b, SampleBatch) for b in batches)


def test_sync_weights_sets_the_weights_inside_the_actors(workers):
    new_w = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    local = workers.local_worker()
    local.set_weights({"default_policy": {"w": new_w}})
    workers.sync_weights(global_vars={"timestep": 7})
    for w in _remote_w(workers):
        np.testing.assert_array_equal(w, new_w)
    assert workers.foreach_worker(lambda w: w.get_global_vars())[1:] == [{"timestep": 7}] * 2


def test_rllib_style_remote_calls_return_object_refs(workers):
    handle = workers.remote_workers()[0]
    batch = ray.get(handle.sample.remote(), timeout=TIMEOUT)
    assert batch.count == 20
    assert ray.get(handle.get_policy.remote("default_policy"), timeout=TIMEOUT) is not None


def test_method_errors_are_not_crashes(workers):
    handle = workers.remote_workers()[0]
    with pytest.raises(KeyError):
        handle.call("set_weights", {"no_such_policy": {"w": 0}}).result(TIMEOUT)
    assert handle.is_alive()


def test_as_remote_takes_rllibs_keywords(workers):
    """`RolloutWorker.as_remote()` builds an actor from RLlib's keyword arguments; an
    unknown keyword still names the closest one (Ray passes it through)."""
    from tfrl.evaluation.rollout_worker import RolloutWorker

    cls = RolloutWorker.as_remote(num_cpus=0.25)
    actor = cls.remote(env_creator=make_cartpole, policy_spec=LinearPolicy,
                       rollout_fragment_length=5, num_envs=2, seed=3)
    try:
        batch = ray.get(actor.sample.remote(), timeout=TIMEOUT)
        assert batch.count == 10
        assert ray.get(actor.creation_args.remote(), timeout=TIMEOUT)["num_envs"] == 2
    finally:
        ray.kill(actor, no_restart=True)
    bad = cls.remote(env_creator=make_cartpole, policy_spec=LinearPolicy, num_env=2)
    with pytest.raises(ray.exceptions.RayActorError, match="Did you mean 'num_envs'"):
        ray.get(bad.sample.remote(), timeout=TIMEOUT)
    ray.kill(bad, no_restart=True)


def test_killed_workers_are_recreated_within_sample_all(workers):
    """Kills worker 2's process and ray.kills worker 1; sample_all still returns both."""
    new_w = np.array([3.0, 1.0, -3.0, 0.5], np.float32)
    workers.local_worker().set_weights({"default_policy": {"w": new_w}})
    workers.sync_weights()
    old = workers.remote_workers()
    old_pid = old[1].pid().result(TIMEOUT)
    os.kill(old_pid, signal.SIGKILL)
    ray.kill(old[0].actor, no_restart=True)  # Behind the handle's back.
    # ray.kill returns before the actor is gone: a call sent at once may still be served.
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            old[0].call("sample").result(TIMEOUT)
        except WorkerCrashedError as e:
            assert "Worker 1 crashed: its Ray actor died" in str(e)
            break
        assert time.monotonic() < deadline, "the ray.killed actor still answers"
        time.sleep(0.1)
    batches = workers.sample_all()
    assert [b.count for b in batches] == [20, 20]  # The iteration lost nothing.
    new = workers.remote_workers()
    assert [h.worker_index for h in new] == [1, 2] and workers.healthy_worker_ids() == [1, 2]
    assert all(n is not o and not o.is_alive() for n, o in zip(new, old))
    assert new[1].pid().result(TIMEOUT) != old_pid
    for w in _remote_w(workers):
        np.testing.assert_array_equal(w, new_w)


def make_fail_once_cartpole(ctx):
    """CartPole whose 5th step raises, once per `ctx["marker"]` file (across processes)."""

    class FailOnce(gym.Wrapper):
        steps = 0

        def step(self, action):
            FailOnce.steps += 1
            if FailOnce.steps == 5 and not os.path.exists(ctx["marker"]):
                open(ctx["marker"], "w").close()
                raise ValueError("env failed at step 5")
            return super().step(action)

    return FailOnce(gym.make("CartPole-v1"))


@pytest.mark.parametrize("recreate", [True, False])
def test_a_worker_whose_env_raised_is_recreated(workers, tmp_path, recreate):
    ws = WorkerSet(env_creator=make_fail_once_cartpole, policy_class=LinearPolicy,
                   trainer_config={**CONFIG, "num_envs_per_worker": 1,
                                   "recreate_failed_workers": recreate,
                                   "env_config": {"marker": str(tmp_path / "failed")}},
                   num_workers=1)
    try:
        old = ws.remote_workers()[0]
        old_pid = old.pid().result(TIMEOUT)
        if recreate:
            batches = ws.sample_all()
            new = ws.remote_workers()[0]
            assert new is not old and not old.is_alive() and new.worker_index == 1
            assert new.pid().result(TIMEOUT) != old_pid
        else:  # The env's own error; the actor lives on and samples with new envs.
            with pytest.raises(ValueError, match="env failed at step 5"):
                ws.sample_all()
            batches = ws.sample_all()
            assert ws.remote_workers()[0] is old and old.pid().result(TIMEOUT) == old_pid
        assert [b.count for b in batches] == [10]  # One whole batch, counted once.
        assert (tmp_path / "failed").exists()
    finally:
        ws.stop()


def test_probe_finds_a_dead_worker(workers):
    """Last: leaves worker 2 dead (recreation via probe is tested with threads)."""
    workers._config["recreate_failed_workers"] = False
    ray.kill(workers.remote_workers()[1].actor, no_restart=True)
    deadline = time.monotonic() + TIMEOUT  # ray.kill returns before the actor is gone
    while True:
        assert workers.probe_unhealthy_workers() == []  # nothing recreated
        if workers.healthy_worker_ids() == [1]:
            break
        assert time.monotonic() < deadline, workers.healthy_worker_ids()
        time.sleep(0.1)
