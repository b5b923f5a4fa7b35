"""collect_episodes / summarize_episodes / collect_metrics on hand-made episode records."""

import collections
import concurrent.futures
import math

import numpy as np

from tfrl.evaluation.metrics import (RolloutMetrics, collect_episodes, collect_metrics,
                                     summarize_episodes)


def _ep(length, reward, **kw):
    return RolloutMetrics(episode_length=length, episode_reward=reward, **kw)


def test_summarize_rewards_lengths_and_policy_rewards():
    eps = [
        _ep(10, 1.0, agent_rewards={(0, "a"): 0.5, (1, "b"): 0.5}),
        _ep(20, 4.0, agent_rewards={(0, "a"): 3.0, (1, "b"): 1.0}),
        _ep(30, -2.0, agent_rewards={(0, "default_policy"): -2.0}),
    ]
    r = summarize_episodes(eps, eps[-1:])
    assert (r["episode_reward_min"], r["episode_reward_mean"], r["episode_reward_max"]) == (
        -2.0, 1.0, 4.0)
    assert r["episode_len_mean"] == 20.0
    assert r["episodes_this_iter"] == 1 and r["num_episodes"] == 1
    assert r["policy_reward_mean"] == {"a": 1.75, "b": 0.75}
    assert r["policy_reward_min"] == {"a": 0.5, "b": 0.5}
    assert r["policy_reward_max"] == {"a": 3.0, "b": 1.0}
    assert r["hist_stats"]["episode_reward"] == [1.0, 4.0, -2.0]
    assert r["hist_stats"]["episode_lengths"] == [10, 20, 30]
    assert r["hist_stats"]["policy_a_reward"] == [0.5, 3.0]
    assert "policy_default_policy_reward" not in r["hist_stats"]


def test_empty_gives_nan():
    r = summarize_episodes([])
    assert math.isnan(r["episode_reward_mean"]) and math.isnan(r["episode_reward_min"])
    assert math.isnan(r["episode_reward_max"]) and math.isnan(r["episode_len_mean"])
    assert r["episodes_this_iter"] == 0
    assert r["hist_stats"] == {"episode_reward": [], "episode_lengths": []}


def test_custom_metrics_hist_data_perf_and_faulty():
    eps = [
        _ep(1, 1.0, custom_metrics={"x": 1.0, "y": float("nan")}, hist_data={"h": [1, 2]},
            perf_stats={"mean_env_wait_ms": 2.0}, media={"v": "a"}),
        _ep(1, 3.0, custom_metrics={"x": 5.0, "y": float("nan")}, hist_data={"h": [3]},
            perf_stats={"mean_env_wait_ms": 4.0}),
        _ep(7, 100.0, episode_faulty=True, perf_stats={"mean_env_wait_ms": 6.0}),
    ]
    r = summarize_episodes(eps)
    assert r["custom_metrics"]["x_mean"] == 3.0
    assert r["custom_metrics"]["x_min"] == 1.0 and r["custom_metrics"]["x_max"] == 5.0
    assert math.isnan(r["custom_metrics"]["y_mean"])
    assert r["hist_stats"]["h"] == [1, 2, 3]
    assert r["sampler_perf"] == {"mean_env_wait_ms": 4.0}
    assert r["num_faulty_episodes"] == 1
    assert r["episode_reward_max"] == 3.0  # the faulty episode is not counted
    assert r["episode_media"] == {"v": ["a"]}
    kept = summarize_episodes(eps, keep_custom_metrics=True)
    assert kept["custom_metrics"] == {"x": [1.0, 5.0], "y": []}


def test_off_policy_estimates_are_averaged():
    Est = collections.namedtuple("Est", ["estimator_name", "metrics"])
    r = summarize_episodes([_ep(1, 1.0), Est("is", {"V_prev": 1.0}), Est("is", {"V_prev": 3.0})])
    assert r["off_policy_estimator"] == {"is": {"V_prev": 2.0}}
    assert r["episode_reward_mean"] == 1.0


class _LocalWorker:
    def __init__(self, eps):
        self.eps = eps

    def get_metrics(self):
        out, self.eps = self.eps, []
        return out


class _Handle:
    """A fake worker handle whose get_metrics reply is released by the test."""

    def __init__(self, eps, ready=True, fail=False):
        self.eps, self.ready, self.fail = eps, ready, fail
        self.futures = []

    def call(self, method, *args, **kwargs):
        assert method == "get_metrics"
        f = concurrent.futures.Future()
        if self.fail:
            f.set_exception(RuntimeError("worker died"))
        elif self.ready:
            f.set_result(self.eps)
        self.futures.append(f)
        return f


def test_collect_episodes_local_and_remote_in_order():
    local = _LocalWorker([_ep(1, 0.0)])
    remotes = [_Handle([_ep(2, 1.0)]), _Handle([_ep(3, 2.0), _ep(4, 3.0)])]
    episodes, pending = collect_episodes(local, remotes, timeout_seconds=1)
    assert [e.episode_length for e in episodes] == [2, 3, 4, 1]
    assert pending == []


def test_slow_worker_episodes_are_picked_up_next_call():
    slow = _Handle([_ep(5, 9.0)], ready=False)
    fast = _Handle([_ep(1, 1.0)])
    pending = []
    r1 = collect_metrics(None, [fast, slow], to_be_collected=pending, timeout_seconds=0.01)
    assert r1["episodes_this_iter"] == 1 and r1["episode_reward_mean"] == 1.0
    assert pending == slow.futures  # kept, in place
    slow.futures[0].set_result([_ep(5, 9.0)])
    slow.ready, slow.eps, fast.eps = True, [], []
    r2 = collect_metrics(None, [fast, slow], to_be_collected=pending, timeout_seconds=1)
    assert r2["episodes_this_iter"] == 1 and r2["episode_reward_mean"] == 9.0
    assert pending == []


def test_crashed_worker_is_skipped(caplog):
    r = collect_metrics(_LocalWorker([_ep(1, 2.0)]), [_Handle([], fail=True)], timeout_seconds=1)
    assert r["episodes_this_iter"] == 1
    assert "worker died" in caplog.text


def test_no_reply_at_all_warns(caplog):
    eps, pending = collect_episodes(None, [_Handle([], ready=False)], timeout_seconds=0.01)
    assert eps == [] and len(pending) == 1
    assert "Collected no metrics from remote workers in 0.01 s" in caplog.text


def test_collect_metrics_defaults():
    r = collect_metrics(_LocalWorker([_ep(2, 1.0), _ep(4, 2.0)]))
    np.testing.assert_allclose(r["episode_reward_mean"], 1.5)
    assert r["episode_len_mean"] == 3.0
    assert math.isnan(collect_metrics()["episode_reward_mean"])
