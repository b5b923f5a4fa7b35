"""Observation filters: running statistics, normalisation, buffers and worker sync."""

import pickle
import threading
import concurrent.futures

import numpy as np
import pytest

from tfrl.utils.filter import (ConcurrentMeanStdFilter, MeanStdFilter, NoFilter, RunningStat,
                               filter_from_state, get_filter)
from tfrl.utils.filter_manager import FilterManager


def _data(n, shape=(3,), seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(loc=[1.0, -2.0, 5.0], scale=[0.5, 2.0, 3.0], size=(n,) + shape)


def test_no_filter_returns_input_object():
    f = get_filter("NoFilter", (3,))
    x = np.ones(3)
    assert f(x) is x
    batch = x[None]
    assert f.apply_batch(batch) is batch
    assert f.is_concurrent
    assert f.as_serializable() is f and f.copy() is f
    assert f.get_state() == {"type": "NoFilter"}


def test_running_stat_matches_numpy_one_by_one_and_batched():
    data = _data(50)
    one, batched = RunningStat((3,)), RunningStat((3,))
    for row in data:
        one.push(row)
    batched.push_batch(data[:7])
    batched.push_batch(data[7:])
    for rs in (one, batched):
        assert rs.n == 50
        np.testing.assert_allclose(rs.mean, data.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(rs.std, data.std(axis=0, ddof=1), rtol=1e-12)


def test_running_stat_std_before_two_items():
    rs = RunningStat((2,))
    np.testing.assert_array_equal(rs.std, [1.0, 1.0])
    rs.push([3.0, 4.0])
    # RLlib's convention (rllib/tests/test_filters.py::testRunningStat): with one item the
    # variance is the mean's square, so the item itself normalises to 0.
    np.testing.assert_array_equal(rs.std, [3.0, 4.0])


def test_mean_std_filter_normalises_with_running_stats():
    data = _data(20)
    f = get_filter("MeanStdFilter", (3,))
    assert not f.is_concurrent
    out = [f(row) for row in data]
    # The last output is normalised with the statistics of all 20 rows.
    expected = (data[-1] - data.mean(0)) / (data.std(0, ddof=1) + 1e-8)
    np.testing.assert_allclose(out[-1], expected, rtol=1e-10)
    assert out[-1].dtype == np.float64
    # update=False leaves the statistics alone.
    f(np.zeros(3), update=False)
    assert f.running_stats.n == 20 and f.buffer.n == 20


def test_apply_batch_updates_with_every_row_then_normalises():
    data = _data(10).astype(np.float32)
    f = MeanStdFilter((3,), clip=None)
    out = f.apply_batch(data)
    assert out.dtype == np.float32 and out.shape == (10, 3)
    np.testing.assert_allclose(
        out, (data - data.mean(0)) / (data.std(0, ddof=1) + 1e-8), rtol=1e-4, atol=1e-5)
    assert f.running_stats.n == 10


def test_clip():
    f = MeanStdFilter((1,), clip=1.0)
    f.apply_batch(np.array([[0.0], [1.0]]))
    assert f(np.array([100.0]), update=False)[0] == 1.0


def test_wrong_shape_errors():
    f = get_filter("MeanStdFilter", (3,))
    with pytest.raises(ValueError, match=r"shape \(3,\) received an observation of shape \(2,\)"):
        f(np.zeros(2))
    with pytest.raises(ValueError, match=r"expected \[N, 3\]"):
        f.apply_batch(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="received a batch of shape"):
        f.apply_batch(np.zeros((4, 2)), update=False)
    with pytest.raises(ValueError, match="Cannot merge statistics of shape"):
        f.running_stats.update(RunningStat((2,)))


def test_unknown_filter_name_names_closest():
    with pytest.raises(ValueError, match="Did you mean 'MeanStdFilter'"):
        get_filter("MeanStdFiltr", (3,))
    assert isinstance(get_filter(lambda shape: NoFilter(), (3,)), NoFilter)


def test_sync_of_two_workers_equals_one_filter_that_saw_all_data():
    data = _data(60)
    driver = get_filter("MeanStdFilter", (3,))
    workers = [get_filter("ConcurrentMeanStdFilter", (3,)) for _ in range(2)]
    reference = MeanStdFilter((3,), clip=None)
    # Two rounds of sampling and synchronisation.
    for start in (0, 30):
        workers[0].apply_batch(data[start:start + 10])
        workers[1].apply_batch(data[start + 10:start + 30])
        reference.apply_batch(data[start:start + 30])
        for w in workers:
            snapshot = w.as_serializable()
            w.clear_buffer()
            driver.apply_changes(snapshot)
        for w in workers:
            w.sync(driver.as_serializable())
    for f in [driver] + workers:
        assert f.running_stats.n == 60
        np.testing.assert_allclose(f.running_stats.mean, data.mean(0), rtol=1e-12)
        np.testing.assert_allclose(f.running_stats.std, data.std(0, ddof=1), rtol=1e-12)
    x = data[5]
    np.testing.assert_allclose(workers[1](x, update=False), reference(x, update=False))


def test_sync_keeps_unreported_data():
    driver = MeanStdFilter((1,))
    driver.apply_batch(np.array([[0.0], [2.0]]))
    driver.clear_buffer()
    worker = MeanStdFilter((1,))
    worker.apply_batch(np.array([[10.0]]))
    worker.sync(driver)
    assert worker.running_stats.n == 3 and worker.buffer.n == 1
    np.testing.assert_allclose(worker.running_stats.mean, [4.0])


def test_apply_changes_with_buffer():
    a, b = MeanStdFilter((1,)), MeanStdFilter((1,))
    b.apply_batch(np.array([[1.0], [3.0]]))
    a.apply_changes(b, with_buffer=True)
    assert a.running_stats.n == 2 and a.buffer.n == 2
    b.clear_buffer()
    assert a.buffer.n == 2  # a copy, not shared


def test_copy_state_pickle_round_trip():
    f = get_filter("ConcurrentMeanStdFilter", (3,))
    f.apply_batch(_data(5))
    for g in (f.copy(), pickle.loads(pickle.dumps(f)), filter_from_state(f.get_state())):
        assert type(g) is ConcurrentMeanStdFilter
        np.testing.assert_array_equal(g.running_stats.mean, f.running_stats.mean)
        assert g.buffer.n == 5
    ser = f.as_serializable()
    assert type(ser) is MeanStdFilter
    ser.apply_batch(_data(1))
    assert f.running_stats.n == 5
    assert isinstance(filter_from_state(NoFilter().get_state()), NoFilter)
    with pytest.raises(ValueError, match="Cannot restore a NoFilter state into a MeanStdFilter"):
        f.set_state({"type": "NoFilter"})
    with pytest.raises(ValueError, match=r"of shape \(2,\) into one of shape \(3,\)"):
        f.set_state(MeanStdFilter((2,)).get_state())


def test_concurrent_filter_is_thread_safe():
    f = ConcurrentMeanStdFilter((2,))
    data = np.arange(4000, dtype=np.float64).reshape(2000, 2)

    def push(chunk):
        for row in chunk:
            f(row)

    threads = [threading.Thread(target=push, args=(data[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.running_stats.n == 2000
    np.testing.assert_allclose(f.running_stats.mean, data.mean(0))
    np.testing.assert_allclose(f.running_stats.std, data.std(0, ddof=1))


class _FakeWorker:
    def __init__(self, filters):
        self.filters = filters

    def get_filters(self, flush_after=False):
        out = {k: f.as_serializable() for k, f in self.filters.items()}
        if flush_after:
            for f in self.filters.values():
                f.clear_buffer()
        return out

    def sync_filters(self, new_filters):
        for k, f in self.filters.items():
            f.sync(new_filters[k])


class _Handle:
    def __init__(self, worker):
        self.worker = worker
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def call(self, method, *args, **kwargs):
        return self.pool.submit(getattr(self.worker, method), *args, **kwargs)


def test_filter_manager_synchronize():
    data = _data(30)
    workers = [_FakeWorker({"p": MeanStdFilter((3,)), "q": NoFilter()}) for _ in range(2)]
    workers[0].filters["p"].apply_batch(data[:12])
    workers[1].filters["p"].apply_batch(data[12:])
    local = {"p": MeanStdFilter((3,)), "q": NoFilter()}
    FilterManager.synchronize(local, [_Handle(w) for w in workers])
    for f in [local["p"]] + [w.filters["p"] for w in workers]:
        assert f.running_stats.n == 30
        np.testing.assert_allclose(f.running_stats.mean, data.mean(0))
    assert all(w.filters["p"].buffer.n == 0 for w in workers)


def test_filter_manager_timeout():
    class Never:
        def call(self, method, *args, **kwargs):
            return concurrent.futures.Future()

    with pytest.raises(TimeoutError, match="1 of 1 workers did not answer within 0.01 s"):
        FilterManager.synchronize({"p": NoFilter()}, [Never()], timeout_seconds=0.01)
