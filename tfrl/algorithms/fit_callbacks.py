"""Callbacks for `Algorithm.fit()`: the RL-hook base class and hook routing.

The stop criterion (`StopOnCriteria`) and the progress display (`ProgressLogger`) are
defined in `tfrl.utils.progress_callbacks` (below the algorithms, for
`tfrl.utils.progress.train_until`) and importable from here too.

`Algorithm.fit()` drives any `keras.callbacks.Callback` (one epoch = one `train()`
iteration). Callbacks that also want RL events subclass `tfrl.algorithms.fit_callbacks
.Callback` (a `keras.callbacks.Callback`) and override any of:

- `on_episode_end(episode, logs)`: an episode finished on an in-process worker (the
  local worker, or thread-backend remote workers; Ray workers live in other processes
  and do not report here). `episode` is the tfrl `Episode`; `logs` holds
  `episode_reward`, `episode_length` and `env_index`.
- `on_sample_end(samples, logs)`: an in-process worker finished `sample()`; `logs` holds
  `env_steps` and `agent_steps` of `samples`.
- `on_learn_end(policy_id, logs)`: once per trained policy per iteration, after the
  learning step, with that policy's flattened learner stats of the iteration.

Any callback object with methods of these names receives them (duck typing), so a plain
`keras.callbacks.Callback` subclass may define them too.

Example:
    >>> class CountEpisodes(Callback):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.rewards = []
    ...     def on_episode_end(self, episode, logs=None):
    ...         self.rewards.append(logs["episode_reward"])
    >>> wants_rl_hooks(CountEpisodes(), "on_episode_end"), wants_rl_hooks(Callback(), "on_episode_end")
    (True, False)
"""

import threading
from typing import Any, Dict, List, Optional, Sequence

import keras
from tfrl.evaluation.worker_set.handles import ThreadWorkerHandle
from tfrl.utils.tensorboard import flatten_result

from tfrl.utils.progress_callbacks import ProgressLogger, StopOnCriteria

__all__ = ["Callback", "HookRouter", "ProgressLogger", "StopOnCriteria", "wants_rl_hooks"]

RL_HOOKS = ("on_episode_end", "on_sample_end", "on_learn_end")


class Callback(keras.callbacks.Callback):
    """A Keras callback that may also receive `Algorithm.fit()`'s RL hooks (no-ops here)."""

    def on_episode_end(self, episode: Any, logs: Optional[Dict[str, Any]] = None) -> None:
        """An episode ended on an in-process worker."""

    def on_sample_end(self, samples: Any, logs: Optional[Dict[str, Any]] = None) -> None:
        """An in-process worker finished `sample()`."""

    def on_learn_end(self, policy_id: str, logs: Optional[Dict[str, Any]] = None) -> None:
        """A policy's learning step of the iteration ended; `logs` are its learner stats."""


def wants_rl_hooks(callback: Any, hook: str) -> bool:
    """Whether `callback` has a method `hook` that is not `Callback`'s no-op."""
    method = getattr(type(callback), hook, None)
    return callable(method) and method is not getattr(Callback, hook)


class HookRouter:
    """Delivers the sampler's `on_episode_end`/`on_sample_end` to fit callbacks.

    `install(workers)` swaps the class of each in-process worker's `DefaultCallbacks`
    instance for a subclass that calls the original hook, then the fit callbacks;
    `uninstall()` restores the original classes.
    """

    def __init__(self, callbacks: Sequence[Any]):
        self._lock = threading.Lock()
        self.targets = {hook: [cb for cb in callbacks if wants_rl_hooks(cb, hook)]
                        for hook in RL_HOOKS}
        self._patched: List[Any] = []

    def needed(self) -> bool:
        return bool(self.targets["on_episode_end"] or self.targets["on_sample_end"])

    def episode_end(self, episode: Any, env_index: Any) -> None:
        logs = {"episode_reward": float(episode.total_reward),
                "episode_length": int(episode.length), "env_index": env_index}
        with self._lock:
            for cb in self.targets["on_episode_end"]:
                cb.on_episode_end(episode, logs=dict(logs))

    def sample_end(self, samples: Any) -> None:
        logs = {"env_steps": int(samples.env_steps()), "agent_steps": int(samples.agent_steps())}
        with self._lock:
            for cb in self.targets["on_sample_end"]:
                cb.on_sample_end(samples, logs=dict(logs))

    def learn_end(self, result: Dict[str, Any]) -> None:
        """Calls `on_learn_end(policy_id, stats)` for each policy in the result's learner info."""
        if not self.targets["on_learn_end"]:
            return
        learner = (result.get("info") or {}).get("learner") or {}
        for policy_id, info in learner.items():
            if not isinstance(info, dict):
                continue
            stats = flatten_result(info.get("learner_stats", info))
            for cb in self.targets["on_learn_end"]:
                cb.on_learn_end(policy_id, logs=dict(stats))

    def _patch(self, worker: Any) -> None:
        callbacks = worker.callbacks
        original: Any = type(callbacks)  # a DefaultCallbacks subclass, known at run time
        router = self

        class Routed(original):
            def on_episode_end(self, **kwargs):
                original.on_episode_end(self, **kwargs)
                router.episode_end(kwargs["episode"], kwargs.get("env_index"))

            def on_sample_end(self, **kwargs):
                original.on_sample_end(self, **kwargs)
                router.sample_end(kwargs["samples"])

        Routed.__name__ = Routed.__qualname__ = original.__name__
        callbacks.__class__ = Routed
        _refresh(worker)  # the sampler now fires on_episode_end (it checks overrides)
        self._patched.append((worker, callbacks, original))

    def install(self, workers: Any) -> None:
        """Routes the hooks of the local worker and of thread-backend remote workers."""
        if not self.needed():
            return
        self._patch(workers.local_worker())
        for handle in workers.remote_workers():
            if isinstance(handle, ThreadWorkerHandle):
                handle.apply(lambda w: self._patch(w)).result(timeout=60)

    def uninstall(self) -> None:
        with self._lock:
            for worker, callbacks, original in self._patched:
                callbacks.__class__ = original
                _refresh(worker)
            self._patched = []


def _refresh(worker: Any) -> None:
    """Makes the worker's sampler re-read which hooks its callbacks override."""
    set_callbacks = getattr(worker, "set_callbacks", None)
    if callable(set_callbacks):
        set_callbacks()
