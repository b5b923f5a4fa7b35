"""The `tf.distribute.Strategy` a policy computes and learns under.

`OneDeviceStrategy` by default. With `num_gpus > 1`, a `MirroredStrategy` over that many
GPUs. With `_fake_gpus=True` (RLlib's debugging switch), `num_gpus` counts logical CPU
devices instead, so multi-device learning can be exercised on a CPU-only machine (the
logical devices must have been configured before TensorFlow's first op).

With `learner_workers > 1`, the learner spans that many processes (on one machine or
several): a `MultiWorkerMirroredStrategy` over the cluster that the `TF_CONFIG`
environment variable describes (`{"cluster": {"worker": ["host:port", ...]},
"task": {"type": "worker", "index": i}}`, one entry per process). Every process builds
the same policy and calls `learn_on_batch` with the same global batch; each replica
(numbered across processes) takes its contiguous share of the rows and the gradients
are all-reduced over the processes, so the weights stay equal everywhere and equal to
one process's `MirroredStrategy` over as many replicas.

Example:
    >>> strategy = make_strategy({"num_gpus": 0})
    >>> type(strategy).__name__, strategy.num_replicas_in_sync
    ('OneDeviceStrategy', 1)
"""

from typing import Any, Dict, List, Mapping, Tuple

import json
import os

import tensorflow as tf

from tfrl.policy.policy_config import policy_default

# One strategy per device set and process: separate MirroredStrategy instances over the
# same devices collide in their collective ops (shape mismatches between policies).
_STRATEGIES: Dict[Tuple[str, ...], tf.distribute.Strategy] = {}


def _device_names(device_type: str):
    return [d.name for d in tf.config.list_logical_devices(device_type)]


def make_strategy(config: Mapping[str, Any]) -> tf.distribute.Strategy:
    """The strategy that `config["num_gpus"]` and `config["_fake_gpus"]` ask for.

    Args:
        config: A policy config. Keys used: `num_gpus` (default 0; may be fractional
            below 1, meaning a share of one GPU), `_fake_gpus` (default False: count
            logical CPU devices as GPUs), `learner_workers` (default 1: this process
            only; above 1: a `MultiWorkerMirroredStrategy` from `TF_CONFIG`).

    Returns:
        One strategy object per device set and process (policies share it):
        `OneDeviceStrategy` on the first GPU (or CPU when there is none, when
        `num_gpus` < 1, or with `_fake_gpus` and `num_gpus` <= 1); otherwise a
        `MirroredStrategy` over the first `num_gpus` devices; with `learner_workers`
        above 1, the process's `MultiWorkerMirroredStrategy` (one per process).

    Raises:
        ValueError: If `num_gpus` is negative, not a number, fractional above 1, or
            larger than the number of devices present; if `learner_workers` is not a
            whole number >= 1, or is above 1 while `TF_CONFIG` is missing, malformed or
            lists another number of workers, or together with `num_gpus` above 1.
    """
    learner_workers = config.get("learner_workers", policy_default("learner_workers"))
    learner_workers = 1 if learner_workers is None else learner_workers
    if (isinstance(learner_workers, bool) or not isinstance(learner_workers, int)
            or learner_workers < 1):
        raise ValueError(f"`learner_workers` must be a whole number >= 1; received "
                         f"learner_workers={learner_workers!r}.")
    num_gpus = config.get("num_gpus", policy_default("num_gpus")) or 0
    if learner_workers > 1:
        return _multi_worker(learner_workers, num_gpus)
    fake = bool(config.get("_fake_gpus", policy_default("_fake_gpus")))
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, (int, float)) or num_gpus < 0:
        raise ValueError(f"`num_gpus` must be a number >= 0; received num_gpus={num_gpus!r}.")
    if num_gpus > 1 and num_gpus != int(num_gpus):
        raise ValueError(
            f"`num_gpus` above 1 must be a whole number of devices; received "
            f"num_gpus={num_gpus!r}."
        )
    device_type = "CPU" if fake else "GPU"
    devices = _device_names(device_type)
    wanted = int(num_gpus) if num_gpus >= 1 else 0
    if wanted > len(devices):
        how = (
            "Configure more logical CPU devices with tf.config.set_logical_device_configuration "
            "before TensorFlow's first op, or lower num_gpus."
            if fake else "Lower num_gpus, or set _fake_gpus=True to use logical CPU devices."
        )
        raise ValueError(
            f"The policy config asks for num_gpus={num_gpus!r}"
            f"{' (fake GPUs: logical CPU devices)' if fake else ''}, but only {len(devices)} "
            f"{device_type} device(s) are present: {devices}. {how}"
        )
    if wanted > 1:
        return _cached(tuple(devices[:wanted]))
    if wanted == 1 or (num_gpus > 0 and devices and not fake):
        return _cached((devices[0],))
    cpus = _device_names("CPU")
    return _cached((cpus[0] if cpus else "/cpu:0",))


_MULTI_WORKER: Dict[str, tf.distribute.Strategy] = {}


def _multi_worker(learner_workers: int, num_gpus: Any) -> tf.distribute.Strategy:
    """The process's `MultiWorkerMirroredStrategy` for a `TF_CONFIG` of `learner_workers`."""
    if isinstance(num_gpus, (int, float)) and num_gpus > 1:
        raise ValueError(
            f"learner_workers={learner_workers} cannot be combined with num_gpus={num_gpus!r}: "
            "each learner process replicates over the devices it sees. Set num_gpus to 0 or 1 "
            "and choose each process's GPUs with CUDA_VISIBLE_DEVICES.")
    raw = os.environ.get("TF_CONFIG")
    how = ('Set TF_CONFIG in every learner process to {"cluster": {"worker": ["host:port", '
           '...]}, "task": {"type": "worker", "index": i}} with one address per process.')
    if not raw:
        raise ValueError(f"learner_workers={learner_workers} needs the TF_CONFIG environment "
                         f"variable, which is not set. {how}")
    try:
        tf_config = json.loads(raw)
        workers = tf_config["cluster"]["worker"]
        task = tf_config["task"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"TF_CONFIG is not a cluster description ({error!r}); received "
                         f"TF_CONFIG={raw!r}. {how}") from None
    if not isinstance(workers, list) or len(workers) != learner_workers:
        raise ValueError(f"learner_workers={learner_workers}, but TF_CONFIG's cluster lists "
                         f"workers={workers!r}. List one address per learner process.")
    if (not isinstance(task, dict) or task.get("type") != "worker"
            or task.get("index") not in range(learner_workers)):
        raise ValueError(f"TF_CONFIG's task must be {{'type': 'worker', 'index': i}} with "
                         f"0 <= i < {learner_workers}; received task={task!r}.")
    if raw not in _MULTI_WORKER:
        _MULTI_WORKER[raw] = tf.distribute.MultiWorkerMirroredStrategy()
    return _MULTI_WORKER[raw]


def _cached(devices: Tuple[str, ...]) -> tf.distribute.Strategy:
    if devices not in _STRATEGIES:
        _STRATEGIES[devices] = (tf.distribute.MirroredStrategy(list(devices)) if len(devices) > 1
                                else tf.distribute.OneDeviceStrategy(devices[0]))
    return _STRATEGIES[devices]


def strategy_devices(strategy: tf.distribute.Strategy) -> List[str]:
    """The devices `strategy` replicates over (the first CPU for the default strategy)."""
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy has no device list
        return [tf.config.list_logical_devices("CPU")[0].name]
