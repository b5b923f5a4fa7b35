"""UpdateKL with fake workers: adapts each trained policy's coefficient, passes info on."""

import pytest

from tfrl.algorithms.ppo import UpdateKL


class FakePolicy:
    def __init__(self):
        self.kl_coeff, self.kl_target = 0.2, 0.01

    def update_kl(self, kl):
        self.kl_coeff *= 1.5 if kl > 2 * self.kl_target else (0.5 if kl < 0.5 * self.kl_target else 1)
        return self.kl_coeff


class FakeWorker:
    def __init__(self):
        self.policies = {"a": FakePolicy(), "b": FakePolicy()}

    def get_policy(self, pid):
        return self.policies[pid]


class FakeWorkers:
    def __init__(self):
        self.worker = FakeWorker()

    def local_worker(self):
        return self.worker

    def remote_workers(self):
        return []


def test_update_kl_per_policy_and_passes_info():
    workers = FakeWorkers()
    info = {"a": {"learner_stats": {"kl": 0.1}}, "b": {"learner_stats": {"kl": 0.001}},
            "c": {"learner_stats": {}}}
    out = UpdateKL(workers)(("batch", info))
    assert out is info
    assert workers.worker.policies["a"].kl_coeff == pytest.approx(0.3)
    assert workers.worker.policies["b"].kl_coeff == pytest.approx(0.1)
    assert info["a"]["learner_stats"]["cur_kl_coeff"] == pytest.approx(0.3)
