"""RLlib's filter tests (RunningStat, MeanStdFilter, FilterManager), ported to tfrl.

Ports `rllib/tests/test_filters.py` of ray-project/ray at commit
048f73e1902d1e464c92b7a0c7f0101e44ac11e7: `testRunningStat`, `testCombiningStat`,
`testBasic`, `test_synchronize`. Ray start-up is dropped: RLlib's `_MockWorker`
(`rllib/tests/mock_worker.py`) runs in-process behind a handle whose `call(method, ...)`
returns a future, the protocol `FilterManager.synchronize` speaks to workers.
"""

import concurrent.futures

import numpy as np
import pytest

from tfrl.utils.filter import MeanStdFilter, RunningStat
from tfrl.utils.filter_manager import FilterManager

RLLIB_PATH = "rllib/tests/test_filters.py"
RLLIB_COMMIT = "048f73e1902d1e464c92b7a0c7f0101e44ac11e7"


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)


def testRunningStat():  # noqa: N802 (RLlib's name)
    for shp in ((), (3,), (3, 4)):
        li = []
        rs = RunningStat(shp)
        for _ in range(5):
            val = np.random.randn(*shp)
            rs.push(val)
            li.append(val)
            m = np.mean(li, axis=0)
            assert np.allclose(rs.mean, m)
            v = np.square(m) if (len(li) == 1) else np.var(li, ddof=1, axis=0)
            assert np.allclose(rs.var, v)


def testCombiningStat():  # noqa: N802
    for shape in [(), (3,), (3, 4)]:
        li = []
        rs1 = RunningStat(shape)
        rs2 = RunningStat(shape)
        rs = RunningStat(shape)
        for _ in range(5):
            val = np.random.randn(*shape)
            rs1.push(val)
            rs.push(val)
            li.append(val)
        for _ in range(9):
            rs2.push(val)
            rs.push(val)
            li.append(val)
        rs1.update(rs2)
        assert np.allclose(rs.mean, rs1.mean)
        assert np.allclose(rs.std, rs1.std)


def testBasic():  # noqa: N802
    for shape in [(), (3,), (3, 4, 4)]:
        filt = MeanStdFilter(shape)
        for _ in range(5):
            filt(np.ones(shape))
        assert filt.rs.n == 5
        assert filt.buffer.n == 5

        filt2 = MeanStdFilter(shape)
        filt2.sync(filt)
        assert filt2.rs.n == 5
        assert filt2.buffer.n == 5

        filt.reset_buffer()
        assert filt.buffer.n == 0
        assert filt2.buffer.n == 5

        filt.apply_changes(filt2, with_buffer=False)
        assert filt.buffer.n == 0
        assert filt.rs.n == 10

        filt.apply_changes(filt2, with_buffer=True)
        assert filt.buffer.n == 5
        assert filt.rs.n == 15


class _MockWorker:
    """RLlib's `_MockWorker`: observation and reward filters fed with random data."""

    def __init__(self, sample_count=10):
        self._sample_count = sample_count
        self.obs_filter = MeanStdFilter(())
        self.rew_filter = MeanStdFilter(())
        self.filters = {"obs_filter": self.obs_filter, "rew_filter": self.rew_filter}

    def sample(self):
        samples = {"observations": [], "rewards": []}
        for _ in range(self._sample_count):
            samples["observations"].append(self.obs_filter(np.random.randn()))
            samples["rewards"].append(self.rew_filter(np.random.randn()))
        return samples

    def get_filters(self, flush_after=False):
        obs_filter = self.obs_filter.copy()
        rew_filter = self.rew_filter.copy()
        if flush_after:
            self.obs_filter.clear_buffer(), self.rew_filter.clear_buffer()
        return {"obs_filter": obs_filter, "rew_filter": rew_filter}

    def sync_filters(self, new_filters):
        assert all(k in new_filters for k in self.filters)
        for k in self.filters:
            self.filters[k].sync(new_filters[k])


class _Remote:
    """Stands in for `ray.remote(_MockWorker).remote(...)`: calls run on one thread."""

    def __init__(self, worker):
        self.worker = worker
        self._pool = concurrent.futures.ThreadPoolExecutor(1)

    def call(self, method, *args, **kwargs):
        return self._pool.submit(getattr(self.worker, method), *args, **kwargs)


def test_synchronize():
    """Synchronize applies the remote filters' buffers onto the local filters."""
    filt1 = MeanStdFilter(())
    for i in range(10):
        filt1(i)
    assert filt1.rs.n == 10
    filt1.reset_buffer()
    assert filt1.buffer.n == 0

    remote_e = _Remote(_MockWorker(sample_count=10))
    remote_e.call("sample").result()

    FilterManager.synchronize({"obs_filter": filt1, "rew_filter": filt1.copy()}, [remote_e])

    filters = remote_e.call("get_filters").result()
    obs_f = filters["obs_filter"]
    assert filt1.rs.n == 20
    assert filt1.buffer.n == 0
    assert obs_f.rs.n == filt1.rs.n
    assert obs_f.buffer.n == filt1.buffer.n
