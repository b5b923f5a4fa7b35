"""Collecting and summarising the metrics of completed episodes.

Samplers produce one `RolloutMetrics` record per completed episode; `collect_episodes`
gathers them from the local worker and from remote workers (through worker handles whose
calls return `concurrent.futures.Future`s), and `summarize_episodes` turns them into the
result dict an algorithm reports (`episode_reward_mean`, ...).

Slow workers: `collect_episodes` waits at most `timeout_seconds` for the remote replies
and returns the futures still pending. Pass them back as `to_be_collected` on the next
call and their episodes are counted then. `collect_metrics` does this for you when you
give it a list: on return the list holds the still-pending futures (it is updated in
place), so keeping one list per training loop loses no episode.

Example:
    >>> eps = [RolloutMetrics(episode_length=10, episode_reward=1.0),
    ...        RolloutMetrics(episode_length=20, episode_reward=3.0)]
    >>> result = summarize_episodes(eps)
    >>> result["episode_reward_mean"], result["episode_len_mean"], result["episodes_this_iter"]
    (2.0, 15.0, 2)
"""

import collections
import concurrent.futures
import logging
import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from tfrl.data.rollout_metrics import RolloutMetrics

__all__ = ["RolloutMetrics", "collect_episodes", "collect_metrics", "summarize_episodes"]

logger = logging.getLogger(__name__)

DEFAULT_POLICY_ID = "default_policy"


def _request_metrics(handle: Any) -> concurrent.futures.Future:
    return handle.call("get_metrics")


def collect_episodes(
    local_worker: Optional[Any] = None,
    remote_workers: Sequence[Any] = (),
    to_be_collected: Iterable[concurrent.futures.Future] = (),
    timeout_seconds: float = 180,
) -> Tuple[List[Any], List[concurrent.futures.Future]]:
    """Gathers the completed-episode metrics of the local and remote workers.

    Args:
        local_worker: A RolloutWorker (or anything with `get_metrics()`), or None.
        remote_workers: Worker handles (`handle.call("get_metrics") -> Future`).
        to_be_collected: Futures of `get_metrics` calls still pending from an earlier call.
        timeout_seconds: How long to wait for the remote replies.

    Returns:
        `(episodes, pending)`: the `RolloutMetrics` (and off-policy estimates) received,
        and the futures that did not finish in time (pass them as `to_be_collected` next
        time). Replies of crashed workers are skipped with a warning.
    """
    pending = [_request_metrics(h) for h in remote_workers] + list(to_be_collected)
    metric_lists = []
    if pending:
        done, not_done = concurrent.futures.wait(pending, timeout=timeout_seconds)
        if not done:
            logger.warning("Collected no metrics from remote workers in %s s.", timeout_seconds)
        for future in pending:  # keep the workers' order
            if future in done:
                try:
                    metric_lists.append(future.result())
                except Exception as e:  # a crashed worker must not end training
                    logger.warning("A worker failed to report its metrics: %r", e)
        pending = [f for f in pending if f in not_done]
    if local_worker is not None:
        metric_lists.append(local_worker.get_metrics())
    episodes = [m for metrics in metric_lists for m in metrics]
    return episodes, pending


class _Dropped:
    """Counts the metric values `summarize_episodes` cannot aggregate (and logs the first)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, what: str, value: Any) -> None:
        if not self.count:
            logger.warning("Dropped a metric value that cannot be aggregated: %s=%s (expected a "
                           "finite number); later ones are only counted in the result's "
                           "'num_dropped_metric_values'.", what, _short(value))
        self.count += 1


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # pylint: disable=broad-except - e.g. a huge int's repr
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _finite(value: Any) -> Optional[float]:
    """`value` as a float if it is a finite real number (Python or numpy scalar), else None."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (numbers.Real, np.bool_)):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def _custom_value(value: Any) -> Optional[Any]:
    """A custom metric as aggregated: a real number (NaN included: it means "no value this
    episode" and is left out silently), or None if it is anything else."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (numbers.Real, np.bool_)):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return None if math.isinf(number) else value


def _items(ep: Any, field: str, drop: _Dropped) -> List[Tuple[Any, Any]]:
    """The items of a dict field of an episode record ([] and counted if not a dict)."""
    value = getattr(ep, field)
    if isinstance(value, Mapping):
        return list(value.items())
    drop(field, value)
    return []


def _stats(values: List[float]) -> Tuple[float, float, float]:
    if not values:
        return float("nan"), float("nan"), float("nan")
    return float(np.min(values)), float(np.mean(values)), float(np.max(values))


def summarize_episodes(
    episodes: Sequence[Any],
    new_episodes: Optional[Sequence[Any]] = None,
    keep_custom_metrics: bool = False,
) -> Dict[str, Any]:
    """Summarises episode metrics into a result dict.

    Args:
        episodes: `RolloutMetrics` (possibly of a smoothing window of earlier iterations)
            and off-policy estimates (objects with `estimator_name` and `metrics`).
        new_episodes: The episodes completed this iteration (`episodes_this_iter` counts
            them); defaults to `episodes`.
        keep_custom_metrics: Report each custom metric as the list of its (non-NaN) values
            instead of `<name>_mean/_min/_max`.

    Returns:
        A dict with `episode_reward_max/min/mean`, `episode_len_mean` (NaN without
        episodes), `episodes_this_iter`, `num_episodes`, `num_faulty_episodes`,
        `policy_reward_min/mean/max` (per policy id other than "default_policy"),
        `custom_metrics`, `hist_stats` (`episode_reward`, `episode_lengths`,
        `policy_<id>_reward` and each episode's `hist_data`), `sampler_perf` (the mean of
        each perf stat), `episode_media`, `off_policy_estimator` and (tfrl extension)
        `num_dropped_metric_values`.

    A value that cannot be aggregated (not a finite real number; a custom metric may
    be NaN, which means "no value"; an episode length that is not an int >= 0; a record
    field that is not a dict; a hist_data entry that is not a list of finite numbers)
    is left out and counted in `num_dropped_metric_values`: one bad record in the
    smoothing window must not make every later `train()` fail.
    """
    if new_episodes is None:
        new_episodes = episodes
    rewards, lengths = [], []
    policy_rewards = collections.defaultdict(list)
    custom = collections.defaultdict(list)
    perf = collections.defaultdict(list)
    hist = collections.defaultdict(list)
    media = collections.defaultdict(list)
    estimates = collections.defaultdict(lambda: collections.defaultdict(list))
    num_faulty = 0
    drop = _Dropped()
    for ep in episodes:
        if not isinstance(ep, RolloutMetrics) and hasattr(ep, "estimator_name"):
            for k, v in ep.metrics.items():
                number = _finite(v)
                if number is None:
                    drop(f"off_policy_estimator/{ep.estimator_name}/{k}", v)
                else:
                    estimates[ep.estimator_name][k].append(number)
            continue
        if not isinstance(ep, RolloutMetrics):
            drop("episode", ep)
            continue
        for k, v in _items(ep, "perf_stats", drop):
            number = _finite(v)
            if number is None:
                drop(f"perf_stats/{k}", v)
            else:
                perf[k].append(number)
        if ep.episode_faulty:
            num_faulty += 1
            continue
        length, reward = ep.episode_length, _finite(ep.episode_reward)
        if isinstance(length, (bool, np.bool_)) or not isinstance(length, numbers.Integral) \
                or length < 0:
            drop("episode_length", length)
        else:
            lengths.append(length)
        if reward is None:
            drop("episode_reward", ep.episode_reward)
        else:
            rewards.append(ep.episode_reward)
        for k, v in _items(ep, "custom_metrics", drop):
            value = _custom_value(v)
            if value is None:
                drop(f"custom_metrics/{k}", v)
            else:
                custom[k].append(value)
        for key, v in _items(ep, "agent_rewards", drop):
            number = _finite(v)
            if number is None or not (isinstance(key, tuple) and len(key) == 2):
                drop(f"agent_rewards/{key}", v)
            elif key[1] != DEFAULT_POLICY_ID:
                policy_rewards[key[1]].append(v)
        for k, v in _items(ep, "hist_data", drop):
            values = list(v) if isinstance(v, (list, tuple, np.ndarray)) else None
            if values is None or any(_finite(x) is None for x in values):
                drop(f"hist_data/{k}", v)
            else:
                hist[k] += values
        for k, v in _items(ep, "media", drop):
            media[k].append(v)

    reward_min, reward_mean, reward_max = _stats(rewards)
    hist["episode_reward"] = rewards
    hist["episode_lengths"] = lengths
    policy_min, policy_mean, policy_max = {}, {}, {}
    for pid, values in policy_rewards.items():
        policy_min[pid], policy_mean[pid], policy_max[pid] = _stats(values)
        hist[f"policy_{pid}_reward"] = values

    custom_metrics = {}
    for k, values in custom.items():
        finite = [v for v in values if not np.any(np.isnan(v))]
        if keep_custom_metrics:
            custom_metrics[k] = finite
        else:
            (custom_metrics[k + "_min"], custom_metrics[k + "_mean"],
             custom_metrics[k + "_max"]) = _stats(finite)

    return {
        "episode_reward_max": reward_max,
        "episode_reward_min": reward_min,
        "episode_reward_mean": reward_mean,
        "episode_len_mean": float(np.mean(lengths)) if lengths else float("nan"),
        "episode_media": dict(media),
        "episodes_this_iter": len(new_episodes),
        "num_episodes": len(new_episodes),
        "num_faulty_episodes": num_faulty,
        "policy_reward_min": policy_min,
        "policy_reward_max": policy_max,
        "policy_reward_mean": policy_mean,
        "custom_metrics": custom_metrics,
        "hist_stats": dict(hist),
        "sampler_perf": {k: float(np.mean(v)) for k, v in perf.items()},
        "off_policy_estimator": {
            name: {k: float(np.mean(v)) for k, v in m.items()} for name, m in estimates.items()},
        "num_dropped_metric_values": drop.count,
    }


def collect_metrics(
    local_worker: Optional[Any] = None,
    remote_workers: Optional[Sequence[Any]] = None,
    to_be_collected: Optional[List[concurrent.futures.Future]] = None,
    timeout_seconds: float = 180,
    keep_custom_metrics: bool = False,
) -> Dict[str, Any]:
    """Gathers episode metrics from the workers and summarises them.

    Args:
        local_worker: The local RolloutWorker, or None.
        remote_workers: Worker handles (`call(method, ...) -> Future`), or None.
        to_be_collected: Futures pending from an earlier call, or None. If a list is
            given it is updated in place to hold the futures still pending after this
            call, so their episodes are counted by the next call given the same list.
        timeout_seconds: How long to wait for remote replies.
        keep_custom_metrics: See `summarize_episodes`.

    Returns:
        The result dict of `summarize_episodes`.
    """
    episodes, pending = collect_episodes(
        local_worker, remote_workers or (), to_be_collected or (), timeout_seconds)
    if isinstance(to_be_collected, list):
        to_be_collected[:] = pending
    return summarize_episodes(episodes, episodes, keep_custom_metrics=keep_custom_metrics)
