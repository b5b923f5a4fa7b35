"""AsyncSampler: background sampling, errors surfacing in the caller, filters, stop."""

import time

import numpy as np
import pytest

from tfrl.evaluation.sampler import AsyncSampler

from toy_envs import CounterEnv
from sampler_helpers import counter_vector_env, counter_worker, scripted_env, scripted_worker


def _async(worker, env, **kwargs):
    settings = dict(clip_rewards=False, rollout_fragment_length=6, callbacks=worker.callbacks,
                    multiple_episodes_in_batch=True)
    settings.update(kwargs)
    return AsyncSampler(worker=worker, env=env, **settings)


def test_fragments_come_from_the_thread():
    sampler = _async(counter_worker(), counter_vector_env(2))
    sampler.start()
    try:
        batches = [sampler.next() for _ in range(4)]
        assert [b.count for b in batches] == [6] * 4
        assert sampler.queue.maxsize == 5
        time.sleep(0.05)
        assert len(sampler.get_metrics()) >= 4
    finally:
        sampler.stop()
    assert not sampler.is_alive()


def test_an_env_exception_is_raised_in_the_caller():
    sampler = _async(scripted_worker(), scripted_env(1, length=10, raise_at=3))
    sampler.start()
    with pytest.raises(RuntimeError, match="env exploded at step 3"):
        sampler.get_data()
    sampler.join(5)
    with pytest.raises(RuntimeError, match="Sampling thread has died"):
        sampler.get_data()


def test_thread_that_stopped_without_an_error():
    sampler = _async(counter_worker(), counter_vector_env(1))
    sampler.stop()  # before start: the loop ends at its first item
    sampler.start()
    sampler.join(5)
    with pytest.raises(RuntimeError, match="Sampling thread has died"):
        sampler.get_data()


def test_filters_must_support_concurrent_updates():
    with pytest.raises(ValueError, match="Observation Filter must support concurrent updates: "
                                         "the filter of policy 'default_policy' is a "
                                         "MeanStdFilter"):
        _async(counter_worker(observation_filter="MeanStdFilter"), counter_vector_env(1))
    sampler = _async(counter_worker(observation_filter="ConcurrentMeanStdFilter"),
                     counter_vector_env(1))
    sampler.start()
    try:
        assert sampler.get_data().count == 6
    finally:
        sampler.stop()


def test_blackhole_outputs_keeps_metrics_only(monkeypatch):
    # The thread keeps sampling until stop(): keep the episode counter inside the
    # observation space's [0, 1000] however many episodes it runs before the checks.
    monkeypatch.setattr(CounterEnv, "_obs", lambda self: np.array(
        [self.index, self.episode % 1000, self.t], np.float32))
    sampler = _async(counter_worker(), counter_vector_env(1, lengths=[3]), blackhole_outputs=True)
    sampler.start()
    try:
        deadline = time.time() + 5
        while not sampler.metrics_queue.qsize() and time.time() < deadline:
            time.sleep(0.01)
        assert sampler.get_metrics()[0].episode_length == 3
        assert sampler.queue.empty()
        with pytest.raises(RuntimeError, match="No sample batch from the sampling thread"):
            sampler.get_data(timeout=0.2)
    finally:
        sampler.stop()
