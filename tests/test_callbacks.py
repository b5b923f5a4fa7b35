"""Tests of DefaultCallbacks, make_multi_callbacks and RolloutMetrics."""

import pickle

import pytest

from tfrl.algorithms.callbacks import DefaultCallbacks, make_multi_callbacks
from tfrl.evaluation.rollout_metrics import RolloutMetrics


class _StepCounter(DefaultCallbacks):
    def on_episode_step(self, *, episode, **kwargs):
        episode.append(("step", type(self).__name__))


class _EndRecorder(DefaultCallbacks):
    def on_episode_end(self, *, episode, env_index, **kwargs):
        episode.append(("end", env_index))


def test_default_hooks_are_keyword_only_no_ops():
    cb = DefaultCallbacks()
    assert cb.on_episode_start(worker=None, base_env=None, policies={}, episode=None,
                               env_index=0, extra_new_kwarg=1) is None
    assert cb.on_sample_end(worker=None, samples=None) is None
    assert cb.on_postprocess_trajectory(worker=None, episode=None, agent_id=0, policy_id="p",
                                        policies={}, postprocessed_batch=None,
                                        original_batches={}) is None
    with pytest.raises(TypeError):
        cb.on_sample_end(None, None)  # positional arguments are rejected


def test_overrides():
    assert _StepCounter.overrides("on_episode_step")
    assert not _StepCounter.overrides("on_episode_end")
    assert not DefaultCallbacks.overrides("on_episode_step")
    assert _StepCounter().overrides("on_episode_step")  # also on instances


def test_overrides_unknown_hook():
    with pytest.raises(ValueError, match="on_episode_stepp"):
        DefaultCallbacks.overrides("on_episode_stepp")


def test_legacy_dict_rejected():
    with pytest.raises(ValueError, match="on_episode_start"):
        DefaultCallbacks({"on_episode_start": lambda info: None})


def test_make_multi_callbacks_calls_in_order_and_reports_overrides():
    cls = make_multi_callbacks([_StepCounter, _EndRecorder])
    assert cls.overrides("on_episode_step") and cls.overrides("on_episode_end")
    assert not cls.overrides("on_sample_end")
    calls = []
    cb = cls()
    cb.on_episode_step(worker=None, base_env=None, policies={}, episode=calls, env_index=0)
    cb.on_episode_end(worker=None, base_env=None, policies={}, episode=calls, env_index=3)
    cb.on_sample_end(worker=None, samples=None)
    assert calls == [("step", "_StepCounter"), ("end", 3)]
    assert isinstance(cb, DefaultCallbacks)


def test_make_multi_callbacks_rejects_instances():
    with pytest.raises(TypeError, match="classes, not instances"):
        make_multi_callbacks([DefaultCallbacks()])


def test_rollout_metrics_defaults_and_replace():
    m = RolloutMetrics(episode_length=4, episode_reward=2.0,
                       agent_rewards={(0, "default_policy"): 2.0})
    assert m.custom_metrics == {} and m.perf_stats == {} and m.hist_data == {}
    assert m.media == {} and m.episode_faulty is False
    m2 = RolloutMetrics(1, 0.0)
    m.custom_metrics["x"] = 1.0
    assert m2.custom_metrics == {}  # defaults are not shared between records
    m3 = m._replace(perf_stats={"mean_env_wait_ms": 0.5})
    assert m3.perf_stats == {"mean_env_wait_ms": 0.5}
    assert m3.agent_rewards == {(0, "default_policy"): 2.0}
    assert m3._fields == ("episode_length", "episode_reward", "agent_rewards", "custom_metrics",
                          "perf_stats", "hist_data", "media", "episode_faulty")
    assert pickle.loads(pickle.dumps(m3)) == m3
