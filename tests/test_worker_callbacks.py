"""RolloutWorker.set_callbacks / SamplerInput.refresh_callbacks, and fit()'s hook routing
built on them: new episode hooks fire on the running sampler (both loops), once per
finished episode."""

import gymnasium as gym
import pytest

from rollout_worker_helpers import CountingPolicy
from test_fit_workers import EpisodeRecorder
from toy_envs import CounterEnv
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.fit_callbacks import Callback, HookRouter
from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop


class CountEnds(DefaultCallbacks):
    def __init__(self):
        super().__init__()
        self.ends = []

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index=None, **kwargs):
        self.ends.append((env_index, episode.length))


def make_worker(kind, **kw):
    if kind == "vector":  # gymnasium's own vector env: the array loop
        creator = lambda ctx: gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point")  # noqa: E731
    else:  # the generic loop (a hard horizon needs it)
        creator = lambda ctx: CounterEnv(index=ctx.vector_index, length=3)  # noqa: E731
        kw.setdefault("episode_horizon", 100)
    return RolloutWorker(env_creator=creator, policy_spec=CountingPolicy, num_envs=2,
                         rollout_fragment_length=10, seed=0, **kw)


@pytest.mark.parametrize("kind, runner",
                         [("vector", VectorSamplingLoop), ("generic", SamplingLoop)])
def test_set_callbacks_on_a_running_sampler_fires_one_end_per_episode(kind, runner):
    worker = make_worker(kind)
    try:
        assert type(worker.sampler.runner) is runner
        worker.sample()  # episodes under way with the default (no-op) callbacks
        worker.get_metrics()
        counter = CountEnds()
        worker.set_callbacks(counter)
        assert worker.callbacks is counter
        for _ in range(4):
            worker.sample()
        metrics = worker.get_metrics()
        assert metrics and len(counter.ends) == len(metrics)
        assert [length for _, length in counter.ends] == [m.episode_length for m in metrics]
        worker.set_callbacks(DefaultCallbacks)  # a class is instantiated
        assert type(worker.callbacks) is DefaultCallbacks
        worker.sample()
        assert len(counter.ends) == len(metrics)
    finally:
        worker.stop()


def test_a_changed_callbacks_class_fires_only_after_set_callbacks():
    worker = make_worker("vector")
    try:
        callbacks = worker.callbacks
        callbacks.ends = []
        callbacks.__class__ = CountEnds
        worker.sample()
        assert callbacks.ends == []  # the sampler still skips on_episode_end
        worker.get_metrics()
        worker.set_callbacks()
        worker.sample()
        assert len(callbacks.ends) == len(worker.get_metrics()) > 0
    finally:
        worker.stop()


def test_set_callbacks_rejects_other_objects():
    worker = make_worker("generic")
    try:
        with pytest.raises(TypeError, match="set_callbacks.. takes a DefaultCallbacks subclass "
                                            "or instance; received Callback"):
            worker.set_callbacks(Callback())
    finally:
        worker.stop()


class OneWorker:
    def __init__(self, worker):
        self.worker = worker

    def local_worker(self):
        return self.worker

    def remote_workers(self):
        return []


@pytest.mark.parametrize("kind", ["vector", "generic"])
def test_hook_router_counts_equal_the_episodes_and_uninstall_restores(kind):
    worker = make_worker(kind)
    recorder = EpisodeRecorder()
    router = HookRouter([recorder])
    try:
        worker.sample()
        worker.get_metrics()
        router.install(OneWorker(worker))
        for _ in range(3):
            worker.sample()
        metrics = worker.get_metrics()
        assert metrics and len(recorder.episodes) == len(metrics)
        assert [e["episode_length"] for e in recorder.episodes] == [
            m.episode_length for m in metrics]
        assert [s["env_steps"] for s in recorder.samples] == [20, 20, 20]
        router.uninstall()
        assert type(worker.callbacks) is DefaultCallbacks
        worker.sample()
        assert worker.get_metrics() and len(recorder.episodes) == len(metrics)
        assert worker.sampler.runner.callbacks_end is False  # back to skipping the hook
    finally:
        worker.stop()
