"""The `tf.distribute.Strategy` a policy computes and learns under.

`OneDeviceStrategy` by default. With `num_gpus > 1`, a `MirroredStrategy` over that many
GPUs. With `_fake_gpus=True` (RLlib's debugging switch), `num_gpus` counts logical CPU
devices instead, so multi-device learning can be exercised on a CPU-only machine (the
logical devices must have been configured before TensorFlow's first op).

Example:
    >>> strategy = make_strategy({"num_gpus": 0})
    >>> type(strategy).__name__, strategy.num_replicas_in_sync
    ('OneDeviceStrategy', 1)
"""

from typing import Any, Dict, List, Mapping, Tuple

import tensorflow as tf

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
            logical CPU devices as GPUs).

    Returns:
        One strategy object per device set and process (policies share it):
        `OneDeviceStrategy` on the first GPU (or CPU when there is none, when
        `num_gpus` < 1, or with `_fake_gpus` and `num_gpus` <= 1); otherwise a
        `MirroredStrategy` over the first `num_gpus` devices.

    Raises:
        ValueError: If `num_gpus` is negative, not a number, fractional above 1, or
            larger than the number of devices present.
    """
    num_gpus = config.get("num_gpus", 0) or 0
    fake = bool(config.get("_fake_gpus", False))
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
