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


def test_a_learning_call_that_applied_nothing_leaves_the_kl_coefficient():
    # Issue 29, item 3: with nonfinite_updates="skip" and every step non-finite, the stats
    # were means over no step (zeros), and kl=0 halved the coefficient although nothing
    # was learned. Now such a call reports only its counts, and UpdateKL skips it.
    import gymnasium as gym
    import numpy as np

    from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
    from tfrl.policy.sample_batch import SampleBatch

    policy = PPOTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2),
                         {"seed": 0, "model": {"fcnet_hiddens": [8]}, "num_sgd_iter": 2,
                          "sgd_minibatch_size": None, "kl_coeff": 0.2,
                          "nonfinite_updates": "skip"})
    rng = np.random.default_rng(0)
    batch = SampleBatch(obs=rng.uniform(-1, 1, (8, 4)).astype(np.float32),
                        actions=rng.integers(0, 2, 8), action_logp=np.full(8, -0.7, np.float32),
                        action_dist_inputs=np.zeros((8, 2), np.float32),
                        advantages=np.full(8, np.nan, np.float32),
                        value_targets=np.zeros(8, np.float32), vf_preds=np.zeros(8, np.float32))
    stats = policy.learn_on_batch(batch)["learner_stats"]
    assert stats == {"num_nonfinite_updates_skipped": 2, "num_grad_updates": 0,
                     "num_traces": 1}
    workers = FakeWorkers()
    workers.worker.policies = {"default_policy": policy}
    UpdateKL(workers)(("batch", {"default_policy": {"learner_stats": stats}}))
    assert policy.kl_coeff == pytest.approx(0.2)
    assert policy.get_state()["kl_coeff"] == pytest.approx(0.2)


def test_updated_kl_coeff_hand_numbers():
    from tfrl.algorithms.ppo.ppo_loss import updated_kl_coeff

    # kl_target = 0.01: above 2 * 0.01 = 0.02 -> 0.2 * 1.5 = 0.3; below 0.01 / 2 = 0.005
    # -> 0.2 * 0.5 = 0.1; in [0.005, 0.02] (bounds included) -> 0.2 unchanged.
    assert updated_kl_coeff(0.2, 0.03, 0.01) == pytest.approx(0.3, rel=1e-15)
    assert updated_kl_coeff(0.2, 0.004, 0.01) == pytest.approx(0.1, rel=1e-15)
    assert updated_kl_coeff(0.2, 0.01, 0.01) == 0.2
    assert updated_kl_coeff(0.2, 0.02, 0.01) == 0.2
    assert updated_kl_coeff(0.2, 0.005, 0.01) == 0.2
    # Two raises in a row: 0.2 * 1.5 * 1.5 = 0.45.
    assert updated_kl_coeff(updated_kl_coeff(0.2, 1.0, 0.01), 1.0, 0.01) == pytest.approx(0.45)
