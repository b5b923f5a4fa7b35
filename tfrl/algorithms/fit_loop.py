"""`Algorithm.fit()`: a Keras-style training loop over `train()` iterations.

One epoch is one `Algorithm.train()` call; each epoch's `logs` are the iteration's result
dict flattened to its numeric leaves (nested keys joined with "/", e.g.
`"info/learner/default_policy/learner_stats/kl"`, `"timers/learn_time_ms"`). Epochs are
numbered by the algorithm's iteration (`epoch = training_iteration - 1`), so a second
`fit()` call, or one resumed by `BackupAndRestore`, continues the numbering.

Stock Keras callbacks receive an `AlgorithmModel` as `callback.model` (see
`tfrl.algorithms.fit_model`) and work unchanged: `History` (returned), `EarlyStopping`,
`CSVLogger`, `BackupAndRestore`, `ModelCheckpoint`, `ProgbarLogger`, `LambdaCallback`,
`TerminateOnNaN`, `TensorBoard`. `callback.params` holds `verbose`, `epochs` (the last
epoch of this fit; an estimate when `total_timesteps` is given, the `training_iteration`
criterion of a `StopOnCriteria` without a budget, else None), `steps` (1: each epoch
is one "batch", so batch-level hooks and `save_freq=<int>` count iterations),
`initial_epoch`, `start_timesteps` and `target_timesteps`; `callback.model.last_result`
is the latest full (unflattened) result dict.

Example:
    >>> flatten_result({"episode_reward_mean": 9.5, "done": False, "hist_stats": {"r": [1]},
    ...                 "timers": {"learn_time_ms": 2.0}, "info": {"learner": {}}})
    {'episode_reward_mean': 9.5, 'timers/learn_time_ms': 2.0}
"""

import math
import numbers
from typing import Any, Dict, List, Optional, Sequence

import keras

from tfrl.algorithms.fit_callbacks import HookRouter
from tfrl.algorithms.fit_model import AlgorithmModel
from tfrl.utils.progress_callbacks import ProgressLogger, StopOnCriteria
from tfrl.utils.tensorboard import flatten_result

__all__ = ["fit", "flatten_result"]


def _check_budget(total_timesteps: Any, iterations: Any, stopper: Any) -> None:
    if (total_timesteps is not None and iterations is not None) or (
            total_timesteps is None and iterations is None and stopper is None):
        raise ValueError(
            "fit() needs exactly one budget: total_timesteps=<env steps to sample> or "
            "iterations=<train() calls> (or neither, with a StopOnCriteria(stop) callback). "
            f"Received total_timesteps={total_timesteps!r}, iterations={iterations!r}.")
    for name, value in (("total_timesteps", total_timesteps), ("iterations", iterations)):
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, numbers.Integral) or value <= 0):
            raise ValueError(f"fit({name}=...) must be a positive integer; received {value!r}.")


def _callback_list(callbacks: Optional[Sequence[Any]]) -> List[Any]:
    if callbacks is None:
        return []
    if isinstance(callbacks, keras.callbacks.Callback):
        callbacks = [callbacks]
    callbacks = list(callbacks)
    for cb in callbacks:
        if not isinstance(cb, keras.callbacks.Callback):
            raise TypeError(
                f"fit(callbacks=...) takes keras.callbacks.Callback instances; received "
                f"{cb!r} ({type(cb).__name__}). Wrap functions in keras.callbacks."
                "LambdaCallback, or subclass tfrl.algorithms.fit_callbacks.Callback.")
    return callbacks


def fit(algorithm: Any, total_timesteps: Optional[int] = None,
        iterations: Optional[int] = None, callbacks: Optional[Sequence[Any]] = None,
        verbose: Any = "auto") -> keras.callbacks.History:
    """Trains `algorithm` for a budget, driving Keras callbacks; see the module docstring.

    Args:
        algorithm: An `Algorithm`.
        total_timesteps: Train until this many more env steps were sampled than when
            `fit()` was called.
        iterations: Train until the algorithm's iteration is this many more than when
            `fit()` was called. Both budgets are targets: when a callback's
            `on_train_begin` restores an earlier checkpoint (BackupAndRestore), the
            rewound iterations run again. Without either budget, a
            `StopOnCriteria(stop)` callback must end the run (RLlib's `stop` dict); it
            may also accompany a budget (whichever comes first).
        callbacks: `keras.callbacks.Callback` instances (tfrl `Callback`s may also take
            the RL hooks).
        verbose: 0 silent; 1 (or "auto") a `ProgressLogger` that rewrites one line on a
            terminal (elsewhere one line every 10 s at most, `TFRL_PROGRESS_INTERVAL_S`,
            and the last one); 2 one line per iteration. A
            `ProgressLogger` or `keras.callbacks.ProgbarLogger` in `callbacks` replaces
            the default display.

    Returns:
        The `keras.callbacks.History`; `history.history[key]` lists each iteration's
        value of every numeric result key (a key missing in an iteration is skipped
        for that iteration) and `history.epoch` the epoch numbers.

    Raises:
        ValueError: Both `total_timesteps` and `iterations`, neither and no
            `StopOnCriteria` callback, or a budget that is not a positive integer.
        TypeError: A callback is not a `keras.callbacks.Callback`.
    """
    callbacks = _callback_list(callbacks)
    stopper = next((cb for cb in callbacks if isinstance(cb, StopOnCriteria)), None)
    _check_budget(total_timesteps, iterations, stopper)
    if verbose == "auto":
        verbose = 1
    start_epoch = int(algorithm.iteration)
    start_timesteps = _timesteps(algorithm)
    target_timesteps = None
    epochs: Optional[int]  # for callback.params
    last_epoch: Optional[int] = None  # None: until a callback stops training
    if iterations is not None:
        epochs = last_epoch = start_epoch + int(iterations)
    elif total_timesteps is not None:
        target_timesteps = start_timesteps + int(total_timesteps)
        per_iter = max(int(algorithm.config.get("train_batch_size") or 0),
                       int(algorithm.config.get("timesteps_per_iteration") or 0), 1)
        epochs = start_epoch + math.ceil(int(total_timesteps) / per_iter)
    else:  # no budget: the StopOnCriteria callback ends the run
        threshold = stopper.stop.get("training_iteration") if stopper else None
        epochs = None if threshold is None else max(math.ceil(threshold), start_epoch + 1)
    if verbose and not any(isinstance(cb, (keras.callbacks.ProgbarLogger, ProgressLogger))
                           for cb in callbacks):
        # verbose=1 refreshes one line on a terminal (elsewhere throttled lines); 2 prints
        # one line per iteration.
        callbacks.append(ProgressLogger(stop=stopper.stop if stopper else None,
                                        refresh=None if verbose == 1 else False))
    model = AlgorithmModel(algorithm)
    callback_list = keras.callbacks.CallbackList(
        callbacks, add_history=True, add_progbar=False, model=model, verbose=verbose,
        epochs=epochs, steps=1, initial_epoch=start_epoch, start_timesteps=start_timesteps,
        target_timesteps=target_timesteps)
    router = HookRouter(callbacks)
    if router.needed():  # the workers are only touched to route RL hooks
        router.install(algorithm.workers)
    try:
        callback_list.on_train_begin()
        epoch = _resume_epoch(algorithm, model)
        logs: Dict[str, float] = {}
        while not model.stop_training and _budget_left(algorithm, epoch, last_epoch,
                                                        target_timesteps):
            callback_list.on_epoch_begin(epoch)
            callback_list.on_train_batch_begin(0)
            result = algorithm.train()
            model.last_result = result
            logs = flatten_result(result)
            callback_list.on_train_batch_end(0, logs)
            router.learn_end(result)
            callback_list.on_epoch_end(epoch, logs)
            epoch = int(algorithm.iteration)
        callback_list.on_train_end(logs)
    finally:
        router.uninstall()
    return model.history


def _timesteps(algorithm: Any) -> int:
    counters = algorithm.shared_metrics.counters
    return int(counters.get("num_env_steps_sampled", 0))


def _resume_epoch(algorithm: Any, model: AlgorithmModel) -> int:
    """The first epoch to run: the algorithm's iteration after the callbacks'
    `on_train_begin` (BackupAndRestore may have restored a checkpoint).

    The restored checkpoint knows its iteration; BackupAndRestore's metadata epoch
    (`model._initial_epoch`) lags it by one after a batch-level save (`save_freq=<int>`
    saves at the end of an iteration's only batch, before the epoch ends), which is fine.
    """
    epoch = int(algorithm.iteration)
    initial = model._initial_epoch
    if initial is not None and int(initial) > epoch:
        raise RuntimeError(
            f"A callback set the initial epoch to {initial} but the algorithm is at iteration "
            f"{epoch}: the restored checkpoint is older than the callback's metadata. "
            "Delete the backup directory to start over.")
    return epoch


def _budget_left(algorithm: Any, epoch: int, last_epoch: Optional[int],
                 target_timesteps: Optional[int]) -> bool:
    if target_timesteps is not None:
        return _timesteps(algorithm) < target_timesteps
    return last_epoch is None or epoch < last_epoch
