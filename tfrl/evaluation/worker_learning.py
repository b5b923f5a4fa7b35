"""Learning on a rollout worker: route batches and gradients to the trainable policies.

Only policies in `worker.policies_to_train` learn or apply gradients; batches of other
policies are skipped. A plain SampleBatch belongs to the default policy.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, SampleBatch


def _policy_batches(worker: Any, samples: Any) -> Dict[Any, SampleBatch]:
    """`{pid: batch}` of the trainable policies in `samples` (decompressed)."""
    if isinstance(samples, MultiAgentBatch):
        batches = samples.policy_batches
    elif isinstance(samples, SampleBatch):
        batches = {DEFAULT_POLICY_ID: samples}
    else:
        raise TypeError(
            f"Expected a SampleBatch or MultiAgentBatch; received {type(samples).__name__}."
        )
    trainable = set(worker.policies_to_train)
    return {pid: b.decompress_if_needed() for pid, b in batches.items() if pid in trainable}


def learn_on_batch(worker: Any, samples: Any) -> Dict[Any, dict]:
    """`{pid: policy.learn_on_batch(batch)}` over the trainable policies in `samples`.

    `callbacks.on_learn_on_batch(policy=, train_batch=, result=)` is called before each
    policy learns; whatever it puts into `result` is returned under `"custom_metrics"`.
    """
    callbacks = worker.callbacks
    call_hook = not hasattr(callbacks, "overrides") or callbacks.overrides("on_learn_on_batch")
    info = {}
    for pid, batch in _policy_batches(worker, samples).items():
        policy = worker.policy_map[pid]
        extra = {}
        if call_hook:
            callbacks.on_learn_on_batch(policy=policy, train_batch=batch, result=extra)
        info[pid] = policy.learn_on_batch(batch)
        if extra:
            info[pid] = {**info[pid], "custom_metrics": extra}
    return info


def compute_gradients(worker: Any, samples: Any) -> Tuple[Any, dict]:
    """Gradients of the trainable policies: dicts for a MultiAgentBatch, else one pair.

    `info["batch_count"]` is `samples.count` in both cases.
    """
    if isinstance(samples, MultiAgentBatch):
        grads, infos = {}, {}
        for pid, batch in _policy_batches(worker, samples).items():
            grads[pid], infos[pid] = worker.policy_map[pid].compute_gradients(batch)
        infos["batch_count"] = samples.count
        return grads, infos
    batches = _policy_batches(worker, samples)
    if DEFAULT_POLICY_ID not in batches:
        raise ValueError(
            f"compute_gradients: the default policy {DEFAULT_POLICY_ID!r} is not in "
            f"policies_to_train {worker.policies_to_train!r}; a SampleBatch belongs to it."
        )
    grads, info = worker.policy_map[DEFAULT_POLICY_ID].compute_gradients(batches[DEFAULT_POLICY_ID])
    return grads, {**info, "batch_count": samples.count}


def apply_gradients(worker: Any, grads: Any) -> None:
    """Applies `{pid: grads}` to the trainable policies (others skipped), or non-dict
    gradients to the default policy if it is trainable."""
    trainable = set(worker.policies_to_train)
    if isinstance(grads, dict):
        for pid, g in grads.items():
            if pid in trainable:
                worker.policy_map[pid].apply_gradients(g)
    elif DEFAULT_POLICY_ID in trainable:
        worker.policy_map[DEFAULT_POLICY_ID].apply_gradients(grads)


def standardize(batch: SampleBatch, fields: List[str]) -> None:
    """Normalises each field in place to mean 0, std 1 (std floored at 1e-4)."""
    for field in fields:
        if field in batch:
            x = np.asarray(batch[field], np.float32)
            batch[field] = (x - x.mean()) / max(1e-4, float(x.std()))


def minibatch_sgd(worker: Any, samples: Any, num_sgd_iter: int, sgd_minibatch_size: int,
                  standardize_fields: List[str], seed: Optional[int] = None) -> Dict[Any, dict]:
    """`num_sgd_iter` epochs of `learn_on_batch` over shuffled minibatches, per policy.

    Returns:
        `{pid: info of the last minibatch}`.
    """
    rng = np.random.default_rng(seed)
    info = {}
    for pid, batch in _policy_batches(worker, samples).items():
        batch = batch.copy()
        standardize(batch, standardize_fields)
        size = sgd_minibatch_size or batch.count
        for _ in range(num_sgd_iter):
            batch.shuffle(seed=int(rng.integers(2**31)))
            for start in range(0, batch.count, size):
                info[pid] = learn_on_batch(
                    worker, MultiAgentBatch({pid: batch.slice(start, start + size)},
                                            min(size, batch.count - start)))[pid]
    return info


def sample_and_learn(worker: Any, expected_batch_size: int, num_sgd_iter: int,
                     sgd_minibatch_size: int, standardize_fields: List[str]) -> tuple:
    """`RolloutWorker.sample_and_learn`: sample, then minibatch SGD; `(info, count)`.

    Raises:
        ValueError: If the batch does not have `expected_batch_size` steps.
    """
    batch = worker.sample()
    if batch.count != expected_batch_size:
        raise ValueError(
            f"Batch size possibly out of sync between workers: expected {expected_batch_size} "
            f"steps, sampled {batch.count}. Check rollout_fragment_length * num_envs.")
    info = minibatch_sgd(worker, batch, num_sgd_iter, sgd_minibatch_size, standardize_fields,
                         seed=worker.args.seed)
    return info, batch.count
