"""Learning on a rollout worker: route batches and gradients to the trainable policies.

Only policies in `worker.policies_to_train` learn or apply gradients; batches of other
policies are skipped. A plain SampleBatch belongs to the default policy.
"""

import functools
import inspect
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import numpy as np

from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from tfrl.policy.nonfinite import NonFiniteUpdateError
from tfrl.utils.sgd import standardized


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


def learn_on_batch(worker: Any, samples: Any, *, num_sgd_iter: Optional[int] = None,
                   sgd_minibatch_size: Optional[int] = None,
                   shuffle_sequences: Optional[bool] = None) -> Dict[Any, dict]:
    """`{pid: policy.learn_on_batch(batch, ...)}` over the trainable policies in `samples`.

    `num_sgd_iter`, `sgd_minibatch_size` and `shuffle_sequences` are passed on to each
    policy's `learn_on_batch` when given (None: each policy's own config), so one
    compiled minibatch loop serves every caller (see `TFPolicy.learn_on_batch`). A policy
    whose `learn_on_batch(samples)` takes no SGD settings (RLlib's signature) gets RLlib's
    minibatch SGD from outside instead (`do_minibatch_sgd`: one call per minibatch).
    `callbacks.on_learn_on_batch(policy=, train_batch=, result=)` is called before each
    policy learns; whatever it puts into `result` is returned under `"custom_metrics"`.
    """
    sgd = {name: value for name, value in (("num_sgd_iter", num_sgd_iter),
                                           ("sgd_minibatch_size", sgd_minibatch_size),
                                           ("shuffle_sequences", shuffle_sequences))
           if value is not None}
    callbacks = worker.callbacks
    call_hook = not hasattr(callbacks, "overrides") or callbacks.overrides("on_learn_on_batch")
    info = {}
    for pid, batch in _policy_batches(worker, samples).items():
        policy = worker.policy_map[pid]
        extra: Dict[str, Any] = {}
        if call_hook:
            callbacks.on_learn_on_batch(policy=policy, train_batch=batch, result=extra)
        try:
            if not sgd or takes_sgd_settings(policy.learn_on_batch, sgd):
                info[pid] = policy.learn_on_batch(batch, **sgd)
            else:
                info[pid] = do_minibatch_sgd(batch, policy.learn_on_batch, num_sgd_iter,
                                             sgd_minibatch_size)
        except NonFiniteUpdateError as e:
            raise e.with_policy_id(pid) from e
        if extra:
            info[pid] = {**info[pid], "custom_metrics": extra}
    return info


def takes_sgd_settings(learn_on_batch: Any, sgd: Dict[str, Any]) -> bool:
    """Whether the function `learn_on_batch` accepts the keywords of `sgd` (RLlib's
    `learn_on_batch(samples)` takes none); read once per function."""
    function = getattr(learn_on_batch, "__func__", learn_on_batch)
    try:
        return _takes_keywords(function, frozenset(sgd))
    except TypeError:  # not hashable: read it now
        return _takes_keywords.__wrapped__(function, frozenset(sgd))


@functools.lru_cache(maxsize=256)
def _takes_keywords(function: Any, names: FrozenSet[str]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # no signature to read: let the call decide
        return True
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return True
    return all(name in parameters for name in names)


def minibatches(batch: SampleBatch, sgd_minibatch_size: Optional[int]) -> Iterator[SampleBatch]:
    """RLlib's `minibatches`: the rows shuffled (numpy's global RNG), then cut into
    `floor(rows / sgd_minibatch_size)` minibatches; the whole batch for a size of 0 or
    None, or for a batch of sequences (`seq_lens`), which is not cut."""
    if not sgd_minibatch_size or SampleBatch.SEQ_LENS in batch:
        yield batch
        return
    batch = batch.copy(shallow=True).shuffle()
    for start in range(0, batch.count - sgd_minibatch_size + 1, sgd_minibatch_size):
        yield batch.slice(start, start + sgd_minibatch_size)


def do_minibatch_sgd(batch: SampleBatch, learn: Callable[[SampleBatch], dict],
                     num_sgd_iter: Optional[int], sgd_minibatch_size: Optional[int]) -> dict:
    """RLlib's minibatch SGD outside the learner: `num_sgd_iter` epochs (None: 1), each
    calling `learn(minibatch)` on every minibatch of `minibatches(batch,
    sgd_minibatch_size)`; the results' numbers averaged over all calls.

    Raises:
        ValueError: If `sgd_minibatch_size` exceeds the batch's rows (no minibatch).
    """
    if sgd_minibatch_size and SampleBatch.SEQ_LENS not in batch \
            and sgd_minibatch_size > batch.count:
        raise ValueError(f"sgd_minibatch_size={sgd_minibatch_size} exceeds the batch's "
                         f"{batch.count} rows; use a smaller sgd_minibatch_size or a larger "
                         "train_batch_size.")
    results = [learn(minibatch) for _ in range(num_sgd_iter or 1)
               for minibatch in minibatches(batch, sgd_minibatch_size)]
    return _mean_results(results)


def _mean_results(results: List[Any]) -> Any:
    """The mean over `results` of each number (nested dicts followed); other values
    from the last result."""
    last = results[-1]
    if isinstance(last, dict):
        return {key: _mean_results([r[key] for r in results
                                    if isinstance(r, dict) and key in r])
                for key in last}
    if isinstance(last, (int, float, np.number)) and not isinstance(last, bool):
        return float(np.mean([float(r) for r in results]))
    return last


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


def sample_and_learn(worker: Any, expected_batch_size: int, num_sgd_iter: int,
                     sgd_minibatch_size: int, standardize_fields: List[str]) -> tuple:
    """`RolloutWorker.sample_and_learn`: sample, standardize `standardize_fields` of each
    policy's rows, then `learn_on_batch` with `num_sgd_iter` epochs of
    `sgd_minibatch_size` minibatches (the policy's one minibatch loop); `(info, count)`.

    Raises:
        ValueError: If the batch does not have `expected_batch_size` steps.
    """
    batch = worker.sample()
    if batch.count != expected_batch_size:
        raise ValueError(
            f"Batch size possibly out of sync between workers: expected {expected_batch_size} "
            f"steps, sampled {batch.count}. Check rollout_fragment_length * num_envs.")
    policy_batches = {}
    for pid, rows in _policy_batches(worker, batch).items():
        rows = rows.copy()
        for field in standardize_fields:
            if field in rows:
                rows[field] = standardized(rows[field])
        policy_batches[pid] = rows
    info = learn_on_batch(worker, MultiAgentBatch(policy_batches, batch.count,
                                                  policies_subset=True),
                          num_sgd_iter=num_sgd_iter, sgd_minibatch_size=sgd_minibatch_size or 0)
    return info, batch.count
