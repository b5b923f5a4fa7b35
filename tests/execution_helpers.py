"""Fake rollout workers, worker handles and a fake WorkerSet for the execution-operator tests.

`FakeWorker.sample()` returns `fragment_length` rows whose `obs` encode the worker index
and the call number (`1000 * worker_index + 100 * call + t`), so tests can tell which
worker produced a batch and in which order. Policies record what they learn on.
"""

import concurrent.futures
from typing import Any, Dict, List, Optional

import numpy as np

from tfrl.evaluation.rollout_metrics import RolloutMetrics
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import DEFAULT_POLICY_ID, SampleBatch


class FakePolicy:
    """Counts learn calls; weights are one vector that learning increments."""

    def __init__(self, config: Optional[dict] = None):
        self.config = dict(config or {})
        self.weights = [np.zeros(2, np.float32)]
        self.learned_on: List[int] = []
        self.sgd_settings: List[tuple] = []  # (num_sgd_iter, sgd_minibatch_size, shuffle)
        self.applied: List[Any] = []
        self.target_updates = 0
        self.global_vars = None

    def learn_on_batch(self, batch, *, num_sgd_iter=None, sgd_minibatch_size=None,
                       shuffle_sequences=None):
        self.learned_on.append(batch.count)
        self.sgd_settings.append((num_sgd_iter, sgd_minibatch_size, shuffle_sequences))
        self.weights = [self.weights[0] + 1.0]
        if num_sgd_iter is None:
            num_sgd_iter = self.config.get("num_sgd_iter", 1)
        return {"learner_stats": {"loss": float(batch.count), "num_sgd_iter": num_sgd_iter}}

    def compute_gradients(self, batch):
        return [np.full(2, float(batch.count), np.float32)], {"learner_stats": {"n": batch.count}}

    def apply_gradients(self, grads):
        self.applied.append(grads)
        self.weights = [self.weights[0] - grads[0]]

    def update_target(self):
        self.target_updates += 1

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.asarray(w).copy() for w in weights]


def fake_rows(n: int, base: int, seed: int) -> SampleBatch:
    rng = np.random.default_rng(seed)
    return SampleBatch({
        "obs": (base + np.arange(n)).astype(np.float32),
        "rewards": np.ones(n, np.float32),
        "advantages": (5.0 + 3.0 * rng.normal(size=n)).astype(np.float32),
        "value_targets": rng.normal(size=n).astype(np.float32),
    })


class FakeWorker:
    """A rollout worker stand-in with the methods the operators use.

    Args:
        worker_index: 0 for the local worker, 1.. for remote ones.
        fragment_length: Env steps per `sample()`.
        policy_ids: Policy ids; more than one makes `sample()` return MultiAgentBatches
            in which policy i has `(i + 1) * fragment_length` agent steps.
        episodes: RolloutMetrics handed out by the next `get_metrics()`.
    """

    def __init__(self, worker_index: int = 0, fragment_length: int = 5,
                 policy_ids=(DEFAULT_POLICY_ID,), episodes=None, policy_config=None):
        self.worker_index = worker_index
        self.fragment_length = fragment_length
        self.policy_map: Dict[str, FakePolicy] = {pid: FakePolicy(policy_config) for pid in policy_ids}
        self.policies_to_train = list(policy_ids)
        self.num_samples = 0
        self.global_vars = None
        self.weights_received: List[Any] = []
        self.episodes = list(episodes or [])
        self.learn_calls: List[Any] = []

    def sample(self):
        call = self.num_samples
        self.num_samples += 1
        base = 1000 * self.worker_index + 100 * call
        if len(self.policy_map) == 1:
            return fake_rows(self.fragment_length, base, seed=base)
        return MultiAgentBatch(
            {pid: fake_rows((i + 1) * self.fragment_length, base, seed=base + i)
             for i, pid in enumerate(self.policy_map)}, self.fragment_length)

    def learn_on_batch(self, samples, **sgd):
        self.learn_calls.append(samples)
        sgd = {k: v for k, v in sgd.items() if v is not None}
        if isinstance(samples, MultiAgentBatch):
            return {pid: self.policy_map[pid].learn_on_batch(b, **sgd)
                    for pid, b in samples.policy_batches.items() if pid in self.policies_to_train}
        return {DEFAULT_POLICY_ID: self.policy_map[DEFAULT_POLICY_ID].learn_on_batch(samples, **sgd)}

    def compute_gradients(self, samples):
        return self.policy_map[DEFAULT_POLICY_ID].compute_gradients(samples)

    def apply_gradients(self, grads):
        self.policy_map[DEFAULT_POLICY_ID].apply_gradients(grads)

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID):
        return self.policy_map.get(policy_id)

    def get_weights(self, policies=None):
        return {pid: p.get_weights() for pid, p in self.policy_map.items()
                if not policies or pid in policies}

    def set_weights(self, weights, global_vars=None):
        self.weights_received.append(weights)
        for pid, w in weights.items():
            self.policy_map[pid].set_weights(w)
        if global_vars is not None:
            self.set_global_vars(global_vars)

    def set_global_vars(self, global_vars):
        self.global_vars = dict(global_vars)

    def foreach_trainable_policy(self, func):
        return [func(self.policy_map[pid], pid) for pid in self.policies_to_train]

    def get_metrics(self):
        episodes, self.episodes = self.episodes, []
        return episodes

    def apply(self, func, *args):
        return func(self, *args)


def episodes(rewards, length=10):
    return [RolloutMetrics(episode_length=length, episode_reward=float(r)) for r in rewards]


class InlineHandle:
    """A worker handle that runs each call synchronously (futures come back done)."""

    def __init__(self, worker: FakeWorker):
        self.worker = worker
        self.worker_index = worker.worker_index
        self.calls: List[str] = []
        self._alive = True

    def call(self, method: str, *args, **kwargs) -> concurrent.futures.Future:
        self.calls.append(method)
        future = concurrent.futures.Future()
        try:
            future.set_result(getattr(self.worker, method)(*args, **kwargs))
        except Exception as e:  # delivered through the future, as a remote error would be
            future.set_exception(e)
        return future

    def apply(self, func, *args) -> concurrent.futures.Future:
        return self.call("apply", func, *args)

    def kill(self) -> None:
        self._alive = False

    def is_alive(self) -> bool:
        return self._alive


class FakeWorkerSet:
    """The WorkerSet methods the operators use, over a local FakeWorker and remote handles."""

    def __init__(self, local: FakeWorker, remotes=()):
        self._local = local
        self._remotes = list(remotes)
        self.sync_calls: List[dict] = []

    def local_worker(self):
        return self._local

    def remote_workers(self):
        return list(self._remotes)

    def num_remote_workers(self):
        return len(self._remotes)

    def sync_weights(self, policies=None, from_worker=None, global_vars=None):
        self.sync_calls.append({"policies": policies, "global_vars": global_vars})
        weights = (from_worker or self._local).get_weights(policies)
        for handle in self._remotes:
            handle.call("set_weights", weights, global_vars).result(timeout=10)
        if global_vars is not None:
            self._local.set_global_vars(global_vars)

    def foreach_worker(self, func):
        return [func(self._local)] + [h.apply(func).result(timeout=10) for h in self._remotes]


def make_workers(num_remote: int = 2, fragment_length: int = 5, policy_ids=(DEFAULT_POLICY_ID,),
                 policy_config=None):
    """A FakeWorkerSet with a local worker and `num_remote` InlineHandle remote workers."""
    local = FakeWorker(0, fragment_length, policy_ids, policy_config=policy_config)
    remotes = [InlineHandle(FakeWorker(i + 1, fragment_length, policy_ids, policy_config=policy_config))
               for i in range(num_remote)]
    return FakeWorkerSet(local, remotes)
