"""Samplers: a rollout worker's source of experience (RLlib's `ray.rllib.evaluation.sampler`).

`SyncSampler` steps the env when asked (`next()`/`get_data()`); `AsyncSampler` runs the
same loop in a daemon thread and hands fragments over through a bounded queue. Both
return postprocessed SampleBatches (single `default_policy`) or MultiAgentBatches.

The loop is `tfrl.evaluation.sampling.vector_loop.VectorSamplingLoop` (array-based, one numpy
pass per step) for a single-agent vectorized env with one feed-forward policy and no
observation_fn or hard horizon, else the generic
`tfrl.evaluation.sampling.loop.SamplingLoop`; both build identical batches. If the worker gets
more policies later, the sampler continues with the generic loop (the episodes running
at that moment are cut there).
"""

import logging
import math
import numbers
import queue
import threading
from typing import Any, Callable, Iterator, List, Optional, Union

from tfrl.env.base_env import BaseEnv
from tfrl.evaluation.sampling.loop import SamplingLoop, hard_horizon_problem
from tfrl.data.rollout_metrics import RolloutMetrics
from tfrl.evaluation.sampling.ops import PerfStats
from tfrl.evaluation.sampling.vector_loop import VectorSamplingLoop, vector_path_problem
from tfrl.offline.input_reader import InputReader
from tfrl.data.sample_batch import concat_samples

logger = logging.getLogger(__name__)

__all__ = ["SamplerInput", "SyncSampler", "AsyncSampler"]


class SamplerInput(InputReader):
    """An InputReader over an env loop: `next()` returns one fragment plus any extra
    batches given to `Episode.add_extra_batch` since the last call."""

    def next(self) -> Any:
        batches = [self.get_data()] + self.get_extra_batches()
        return batches[0] if len(batches) == 1 else concat_samples(batches)

    def get_data(self) -> Any:
        raise NotImplementedError

    def get_metrics(self) -> List[RolloutMetrics]:
        raise NotImplementedError

    def get_extra_batches(self) -> List[Any]:
        raise NotImplementedError

    def stop(self) -> None:
        """Releases resources (threads); the env is closed by its owner."""

    def refresh_callbacks(self, callbacks: Any = None) -> None:
        """Makes the env loop use `callbacks` (None: its current DefaultCallbacks
        instance) from its next step on.

        The loop skips the episode hooks the callbacks' class does not override (it
        checks once, when built); call this after replacing the callbacks or changing
        their class, e.g. through `RolloutWorker.set_callbacks`.
        """
        raise NotImplementedError


class SyncSampler(SamplerInput):
    """Collects experience in the caller's thread.

    Args (keyword-only):
        worker: The owning RolloutWorker (read: `policy_map`, `policy_mapping_fn`,
            `preprocessors`, `filters`).
        env: Any env; converted with `BaseEnv.to_base_env`.
        clip_rewards: True: sign of the reward; a number c: clip to [-c, c]; False/None:
            unchanged.
        rollout_fragment_length: Steps per fragment in truncate mode (the worker passes
            its per-env length times `num_envs`); `float("inf")` in complete mode.
        count_steps_by: "env_steps" or "agent_steps".
        callbacks: A DefaultCallbacks instance.
        horizon: Cut episodes (truncated) after this many steps and reset the sub-env.
        multiple_episodes_in_batch: True (truncate_episodes): fragments of exactly
            `rollout_fragment_length` steps, episodes cut and continued; False
            (complete_episodes): one batch per finished episode.
        normalize_actions: Unsquash Box actions from [-1, 1] into the bounds.
        clip_actions: Clip Box actions to the bounds.
        soft_horizon: At the horizon, end the episode without resetting the env;
            `on_episode_end` fires, and the same Episode continues (soft-reset) without
            another `on_episode_start`, as in RLlib. As RLlib, the batch records the step
            at the horizon with terminated=truncated=False (the env goes on), so
            postprocessing bootstraps from the value of its next observation.
        no_done_at_end: Record terminated=truncated=False at episode ends.
        observation_fn: `(agent_obs, worker, base_env, policies, episode) -> agent_obs`.
        sample_collector_class: Not supported (ignored with a warning).
        render: Render the env after each step.
        policies, policy_mapping_fn, preprocessors, obs_filters, tf_sess: Deprecated (read
            from `worker`); ignored with a warning.

    Raises:
        ValueError: For an unknown `count_steps_by` or a bad `rollout_fragment_length`,
            or a hard `horizon` on a vector env that cannot reset single sub-envs (a
            gymnasium `vector_entry_point` env without a shorter `max_episode_steps`;
            the message says what to use instead).
    """

    def __init__(self, *, worker: Any, env: Any, clip_rewards: Union[bool, float, None],
                 rollout_fragment_length: Union[int, float], count_steps_by: str = "env_steps",
                 callbacks: Any, horizon: Optional[int] = None,
                 multiple_episodes_in_batch: bool = False, normalize_actions: bool = True,
                 clip_actions: bool = False, soft_horizon: bool = False,
                 no_done_at_end: bool = False, observation_fn: Optional[Callable] = None,
                 sample_collector_class: Any = None, render: bool = False,
                 policies: Any = None, policy_mapping_fn: Any = None, preprocessors: Any = None,
                 obs_filters: Any = None, tf_sess: Any = None):
        _warn_deprecated(policies=policies, policy_mapping_fn=policy_mapping_fn,
                         preprocessors=preprocessors, obs_filters=obs_filters, tf_sess=tf_sess,
                         sample_collector_class=sample_collector_class)
        _check_settings(rollout_fragment_length, count_steps_by, horizon)
        self.base_env = BaseEnv.to_base_env(env)
        problem = hard_horizon_problem(self.base_env, horizon, soft_horizon)
        if problem:
            raise ValueError(problem)
        self.rollout_fragment_length = rollout_fragment_length
        self.horizon = horizon
        self.extra_batches: "queue.Queue" = queue.Queue()
        self.metrics_queue: "queue.Queue" = queue.Queue()
        self.perf_stats = PerfStats()
        settings = dict(
            worker=worker, base_env=self.base_env, extra_batch_callback=self.extra_batches.put,
            callbacks=callbacks, perf_stats=self.perf_stats,
            rollout_fragment_length=rollout_fragment_length, count_steps_by=count_steps_by,
            multiple_episodes_in_batch=multiple_episodes_in_batch, horizon=horizon,
            soft_horizon=soft_horizon, no_done_at_end=no_done_at_end, clip_rewards=clip_rewards,
            normalize_actions=normalize_actions, clip_actions=clip_actions,
            observation_fn=observation_fn, render=render)
        problem = vector_path_problem(worker, self.base_env, observation_fn, horizon, soft_horizon)
        self._settings = settings
        loop = VectorSamplingLoop if problem is None else SamplingLoop
        self.runner = loop(**settings)
        self.items = self._items()

    def _items(self) -> Iterator[Any]:
        """The loop's fragments and RolloutMetrics, in order, forever (`items`)."""
        yield from self.runner.run()
        # The array-based loop returns when policies were added to the worker: the
        # generic loop continues its fragment.
        self.runner = SamplingLoop(**self._settings, output=self.runner.output)
        yield from self.runner.run()

    def get_data(self) -> Any:
        while True:
            item = next(self.items)
            if isinstance(item, RolloutMetrics):
                self.metrics_queue.put(item)
            else:
                return item

    def get_metrics(self) -> List[RolloutMetrics]:
        return _drain_metrics(self.metrics_queue, self.perf_stats)

    def get_extra_batches(self) -> List[Any]:
        return _drain(self.extra_batches)

    def refresh_callbacks(self, callbacks: Any = None) -> None:
        if callbacks is not None:
            self._settings["callbacks"] = callbacks  # (for a later switch of loops)
        self.runner.refresh_callbacks(callbacks)


class AsyncSampler(threading.Thread, SamplerInput):
    """Collects experience in a daemon thread; `get_data()` takes fragments from a
    queue of at most 5.

    Args:
        blackhole_outputs: Collect (for metrics) but discard the fragments.
        **sampler_kwargs: The keyword arguments of `SyncSampler` (same names, defaults
            and checks), which runs the loop.

    Raises:
        ValueError: If an observation filter of the worker does not support
            concurrent updates (see `tfrl.utils.filter`), or as `SyncSampler`.
        TypeError: For a missing or unknown keyword argument of `SyncSampler`.
    """

    def __init__(self, *, blackhole_outputs: bool = False, **sampler_kwargs: Any):
        worker = sampler_kwargs.get("worker")
        for pid, obs_filter in (getattr(worker, "filters", None) or {}).items():
            if not getattr(obs_filter, "is_concurrent", False):
                raise ValueError(
                    "Observation Filter must support concurrent updates: the filter of policy "
                    f"{pid!r} is a {type(obs_filter).__name__}. Use observation_filter="
                    "'ConcurrentMeanStdFilter' (or 'NoFilter') with sample_async=True."
                )
        threading.Thread.__init__(self, daemon=True, name="tfrl-AsyncSampler")
        self._sync = SyncSampler(**sampler_kwargs)
        self.base_env = self._sync.base_env
        self.rollout_fragment_length = self._sync.rollout_fragment_length
        self.horizon = self._sync.horizon
        self.perf_stats = self._sync.perf_stats
        self.queue: "queue.Queue" = queue.Queue(maxsize=5)
        self.extra_batches = self._sync.extra_batches
        self.metrics_queue = self._sync.metrics_queue
        self.blackhole_outputs = blackhole_outputs
        self.shutdown = False

    def run(self) -> None:
        try:
            for item in self._sync.items:
                if self.shutdown:
                    return
                if isinstance(item, RolloutMetrics):
                    self.metrics_queue.put(item)
                elif not self.blackhole_outputs:
                    self._put(item)
                item = None  # hold no batch while the next one is sampled
        except BaseException as e:  # noqa: B902 - re-raised in the consumer's thread
            self._put(e)

    def _put(self, item: Any) -> None:
        while not self.shutdown:
            try:
                self.queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def get_data(self, timeout: float = 600.0) -> Any:
        """The next fragment; re-raises an exception of the sampling thread.

        Raises:
            RuntimeError: "Sampling thread has died" (without an exception), or no
                fragment within `timeout` seconds.
        """
        if not self.is_alive() and self.ident is None:
            self.start()
        waited = 0.0
        while True:
            try:
                item = self.queue.get(timeout=0.1)
            except queue.Empty:
                if not self.is_alive() and self.queue.empty():
                    raise RuntimeError("Sampling thread has died") from None
                waited += 0.1
                if waited >= timeout:
                    raise RuntimeError(
                        f"No sample batch from the sampling thread within {timeout} s.") from None
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def get_metrics(self) -> List[RolloutMetrics]:
        return self._sync.get_metrics()

    def get_extra_batches(self) -> List[Any]:
        return self._sync.get_extra_batches()

    def refresh_callbacks(self, callbacks: Any = None) -> None:
        self._sync.refresh_callbacks(callbacks)

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the thread (after its current step) and waits up to `timeout` s."""
        self.shutdown = True
        if self.is_alive():
            self.join(timeout)


def sampler_for_worker(worker: Any, args: Any) -> SamplerInput:
    """The (started) sampler of a RolloutWorker with the checked arguments `args` (a
    `worker_setup.WorkerArgs`): an `AsyncSampler` if `args.sample_async`, else a
    `SyncSampler`."""
    pack = worker.batch_mode == "truncate_episodes"
    config = worker.policy_config
    kwargs = dict(
        worker=worker, env=worker.async_env, clip_rewards=args.clip_rewards,
        # One fragment holds the whole batch: fragment length x num_envs env steps.
        rollout_fragment_length=worker.rollout_fragment_length if pack else float("inf"),
        count_steps_by=worker.count_steps_by, callbacks=worker.callbacks,
        horizon=args.episode_horizon, multiple_episodes_in_batch=pack,
        normalize_actions=args.normalize_actions, clip_actions=args.clip_actions,
        soft_horizon=args.soft_horizon, no_done_at_end=args.no_done_at_end,
        observation_fn=args.observation_fn,
        render=config.get("render_env") is True and (worker.num_workers == 0
                                                     or worker.worker_index == 1))
    collector = config.get("sample_collector")
    if collector is not None:  # the sampler warns: not supported
        kwargs["sample_collector_class"] = collector
    if not args.sample_async:
        return SyncSampler(**kwargs)
    sampler = AsyncSampler(blackhole_outputs=args.blackhole_outputs, **kwargs)
    sampler.start()
    return sampler


def _drain(q: "queue.Queue") -> list:
    items = []
    while True:
        try:
            items.append(q.get_nowait())
        except queue.Empty:
            return items


def _drain_metrics(q: "queue.Queue", perf_stats: PerfStats) -> List[RolloutMetrics]:
    stats = perf_stats.get()
    return [m._replace(perf_stats=dict(stats)) for m in _drain(q)]


def _check_settings(rollout_fragment_length: Any, count_steps_by: str, horizon: Any) -> None:
    if count_steps_by not in ("env_steps", "agent_steps"):
        raise ValueError(
            f"count_steps_by must be 'env_steps' or 'agent_steps'. Received: {count_steps_by!r}."
        )
    if isinstance(rollout_fragment_length, bool) or not isinstance(
            rollout_fragment_length, numbers.Real) or not rollout_fragment_length > 0 or (
            not math.isinf(rollout_fragment_length)
            and rollout_fragment_length != int(rollout_fragment_length)):
        raise ValueError(
            "rollout_fragment_length must be a positive int (or float('inf') for "
            f"complete_episodes). Received: {rollout_fragment_length!r}."
        )
    if horizon is not None and not (isinstance(horizon, numbers.Real) and horizon > 0):
        raise ValueError(f"horizon must be None or a positive int. Received: {horizon!r}.")


def _warn_deprecated(**kwargs: Any) -> None:
    for name, value in kwargs.items():
        if value is not None:
            logger.warning(
                "Sampler argument `%s` is deprecated and ignored: the sampler reads policies, "
                "the mapping fn, preprocessors and filters from `worker`%s.", name,
                " (tfrl has one collector)" if name == "sample_collector_class" else "")
