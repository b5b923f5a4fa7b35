"""SyncSampler on single-agent vectorized envs: fragments, episodes, flags, metrics,
and the array-based loop against the generic one."""

import numpy as np
import pytest

from tfrl.evaluation.sampling.loop import SamplingLoop
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop
from tfrl.policy.sample_batch import SampleBatch

from sampler_helpers import (DictOnlyBaseEnv, counter_vector_env, counter_worker,
                             make_sampler)

PATHS = ["vector", "generic"]


def _env(path, num_envs, **kwargs):
    env = counter_vector_env(num_envs, **kwargs)
    return env if path == "vector" else DictOnlyBaseEnv(env)


def _rows_by_env(batches):
    """env_id -> list of (eps_id, t) over the batches, in order."""
    out = {}
    for b in batches:
        for env_id, eps, t in zip(b["env_id"], b["eps_id"], b["t"]):
            out.setdefault(int(env_id), []).append((int(eps), int(t)))
    return out


@pytest.mark.parametrize("path", PATHS)
def test_truncate_mode_fragments_have_exactly_the_fragment_length(path):
    sampler = make_sampler(counter_worker(), _env(path, 3), rollout_fragment_length=10)
    expected = VectorSamplingLoop if path == "vector" else SamplingLoop
    assert type(sampler.runner) is expected
    batches = [sampler.next() for _ in range(6)]
    assert [b.count for b in batches] == [10] * 6
    assert all(isinstance(b, SampleBatch) for b in batches)
    # Every sub-env's rows continue across fragments: t counts up within an episode and
    # restarts at 0 with a new eps_id after an episode's last (terminated) row.
    for env_id, rows in _rows_by_env(batches).items():
        length = 3 + env_id
        assert [t for _, t in rows] == [i % length for i in range(len(rows))]
        episodes = [rows[i:i + length] for i in range(0, len(rows), length)]
        assert all(len({eps for eps, _ in ep}) == 1 for ep in episodes)
        assert len({ep[0][0] for ep in episodes}) == len(episodes)
    all_rows = SampleBatch.concat_samples(batches)
    ends = all_rows["t"] == 2 + all_rows["env_id"]
    np.testing.assert_array_equal(all_rows["terminateds"], ends)
    assert not all_rows["truncateds"].any()
    np.testing.assert_array_equal(all_rows["dones"], ends)


@pytest.mark.parametrize("path", PATHS)
def test_cut_episodes_end_with_false_flags_and_continue(path):
    sampler = make_sampler(counter_worker(), _env(path, 1, lengths=[7]),
                           rollout_fragment_length=4)
    first, second = sampler.next(), sampler.next()
    assert first["t"].tolist() == [0, 1, 2, 3] and second["t"].tolist() == [4, 5, 6, 0]
    assert not first["terminateds"][-1] and not first["truncateds"][-1]
    assert first["eps_id"][0] == second["eps_id"][0] != second["eps_id"][3]
    np.testing.assert_array_equal(first["new_obs"][-1], second["obs"][0])
    assert second["terminateds"].tolist() == [False, False, True, False]


@pytest.mark.parametrize("path", PATHS)
def test_row_columns_and_values(path):
    sampler = make_sampler(counter_worker(), _env(path, 2), rollout_fragment_length=8)
    b = sampler.next()
    # CounterEnv: obs = [index, episode, t], reward = 10 * action + t (after the step);
    # FakePolicy: action = floor(10 * sum|obs|) % 3.
    env0 = b["env_id"] == 0
    np.testing.assert_array_equal(b["obs"][env0][:3], [[0, 0, 0], [0, 0, 1], [0, 0, 2]])
    np.testing.assert_array_equal(b["new_obs"][env0][:3], [[0, 0, 1], [0, 0, 2], [0, 0, 3]])
    assert b["actions"][env0][:3].tolist() == [0, 1, 2]
    assert b["rewards"][env0][:3].tolist() == [1.0, 12.0, 23.0]
    assert b["prev_actions"][env0][:3].tolist() == [0, 0, 1]
    assert b["prev_rewards"][env0][:3].tolist() == [0.0, 1.0, 12.0]
    assert b["vf_preds"][env0][:3].tolist() == [0.0, 1.0, 2.0]
    assert b["infos"][env0][0] == {"t": 1}
    assert b["rewards"].dtype == np.float32 and b["eps_id"].dtype == np.int64
    assert b["terminateds"].dtype == bool and b["agent_index"].tolist() == [0] * 8
    assert len(set(b["unroll_id"][env0][:3].tolist())) == 1
    # FakePolicy.postprocess_trajectory added returns-to-go per trajectory chunk.
    assert b["advantages"][env0][:3].tolist() == [36.0, 35.0, 23.0]


@pytest.mark.parametrize("path", PATHS)
def test_complete_mode_returns_whole_episodes(path):
    sampler = make_sampler(counter_worker(), _env(path, 2, lengths=[3, 5]),
                           rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    batches = [sampler.next() for _ in range(5)]
    for b in batches:
        assert b["t"].tolist() == list(range(b.count))
        assert len(set(b["eps_id"].tolist())) == 1 and b["terminateds"][-1]
        assert not b["terminateds"][:-1].any()
        assert b.count == (3 if b["env_id"][0] == 0 else 5)


@pytest.mark.parametrize("path", PATHS)
def test_env_truncation_is_carried_through(path):
    sampler = make_sampler(counter_worker(), _env(path, 1, lengths=[3], truncate=True),
                           rollout_fragment_length=6)
    b = sampler.next()
    assert b["truncateds"].tolist() == [False, False, True] * 2
    assert not b["terminateds"].any()


@pytest.mark.parametrize("path", PATHS)
def test_metrics_one_per_finished_episode(path):
    sampler = make_sampler(counter_worker(), _env(path, 2, lengths=[3, 4]),
                           rollout_fragment_length=8)
    sampler.next()
    metrics = sampler.get_metrics()
    assert [(m.episode_length, m.episode_reward) for m in metrics] == [(3, 36.0), (4, 50.0)]
    assert metrics[0].agent_rewards == {("agent0", "default_policy"): 36.0}
    assert set(metrics[0].perf_stats) == {"mean_env_wait_ms", "mean_inference_ms",
                                          "mean_action_processing_ms",
                                          "mean_raw_obs_processing_ms"}
    assert sampler.get_metrics() == []


@pytest.mark.parametrize("fragment", [1, 4, 7, 10])
@pytest.mark.parametrize("settings", [
    {}, {"clip_rewards": True}, {"clip_rewards": 5.0}, {"no_done_at_end": True},
    {"soft_horizon": True, "horizon": 4}, {"observation_filter": "MeanStdFilter"},
    {"multiple_episodes_in_batch": False},
])
def test_vector_path_equals_generic_path(settings, fragment):
    import random

    settings = dict(settings)
    filt = settings.pop("observation_filter", "NoFilter")
    outputs = []
    for path in PATHS:
        random.seed(3)
        worker = counter_worker(observation_filter=filt)
        sampler = make_sampler(worker, _env(path, 3, lengths=[3, 5, 2]),
                               rollout_fragment_length=fragment, **settings)
        batches = [sampler.next() for _ in range(6)]
        outputs.append((batches, sampler.get_metrics()))
    _assert_same_batches(outputs)


@pytest.mark.parametrize("mode", ["truncate", "complete"])
def test_vector_path_equals_generic_path_over_many_fragments(mode):
    import random

    outputs = []
    for path in PATHS:
        random.seed(5)
        sampler = make_sampler(counter_worker(observation_filter="MeanStdFilter"),
                               _env(path, 4, lengths=[3, 9, 2, 30]),
                               rollout_fragment_length=5 if mode == "truncate" else float("inf"),
                               multiple_episodes_in_batch=mode == "truncate")
        outputs.append(([sampler.next() for _ in range(80)], sampler.get_metrics()))
    _assert_same_batches(outputs)


def _assert_same_batches(outputs):
    (vec, vec_metrics), (gen, gen_metrics) = outputs
    assert len(vec) == len(gen)
    for a, b in zip(vec, gen):
        assert list(a.keys()) == list(b.keys())
        for key in a.keys():
            if key == "unroll_id":  # process-wide counters: compare the grouping
                np.testing.assert_array_equal(a[key] - a[key][0], b[key] - b[key][0])
            elif key == "infos":
                assert a[key].tolist() == b[key].tolist()
            else:
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
                assert a[key].dtype == b[key].dtype, key
    strip = [m._replace(perf_stats={}) for m in vec_metrics]
    assert strip == [m._replace(perf_stats={}) for m in gen_metrics]


def test_vector_path_buffers_stay_bounded_in_complete_mode():
    sampler = make_sampler(counter_worker(), counter_vector_env(2, lengths=[3, 4]),
                           rollout_fragment_length=float("inf"), multiple_episodes_in_batch=False)
    batches = [sampler.next() for _ in range(200)]
    assert all(b["t"].tolist() == list(range(b.count)) for b in batches)
    assert all(b["terminateds"][-1] for b in batches)
    assert sampler.runner.chunks.capacity <= 32
