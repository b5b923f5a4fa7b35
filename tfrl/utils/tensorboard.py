"""TensorBoard logging of training results with `tf.summary`.

`flatten_result(result)` turns a result dict into `{"a/b/c": float}` (its numeric
leaves; also the `logs` of `Algorithm.fit()`). `TensorBoardLogger(logdir)` writes a
result dict of `Algorithm.train()` as:

- one scalar per numeric metric, its tag grouped by prefix (`result_tag`). The curves
  users read stay at the top: `sampler/...` (episode returns and lengths, episodes per
  iteration, per-policy rewards, custom metrics), `learner/<policy_id>/...` (the
  policy's losses and learner stats), `timers/...` (including `time_this_iter_s`,
  `time_total_s`, throughputs), `counters/...` (`timesteps_total`, `episodes_total`,
  `training_iteration`) and `evaluation/...`. The internals go under one `debug/` group
  (`DEBUG_PREFIX`): `debug/learner/<policy_id>/num_traces/<function>` (how often each
  compiled function was traced -- the retrace counter), the learner's bookkeeping
  (`num_grad_updates`, `num_nonfinite_updates_skipped`, ...),
  `debug/sampler/sampler_perf/...`, fault and episode counts, the other step counters
  (`debug/counters/num_env_steps_sampled`, ...) and `debug/misc/...` for anything else
  (`timestamp`, ...);
- one histogram per `hist_stats` list (`hist_stats/episode_reward`,
  `hist_stats/episode_lengths`, ...; `evaluation/hist_stats/...` for evaluation rounds);
- the graph of each policy's model (`log_policy_graphs`), traced with a
  `tf.function` on a zero observation batch and written with `tf.summary.graph` into
  `<logdir>/graphs/<policy_id>` (one graph per TensorBoard run).

The step of a result is its `timesteps_total` (RLlib's convention; `step_key` changes
it). TF2 summaries are stored as tensors: read them back with
`EventAccumulator(path).Reload().Tensors(tag)`.

`TensorBoard(log_dir)` is the `Algorithm.fit()` callback built on it. The stock
`keras.callbacks.TensorBoard` also works with `fit()` (scalars `epoch_<key>` under
`<log_dir>/train`, step = epoch), but it cannot group tags, write histograms of
`hist_stats` or the policy graph (it looks for a Keras `Functional`/`Sequential` model and
a `train_function`), hence this module.

Example:
    >>> result_tag("info/learner/default_policy/learner_stats/kl")
    'learner/default_policy/kl'
    >>> result_tag("timers/learn_time_ms"), result_tag("episode_reward_mean")
    ('timers/learn_time_ms', 'sampler/episode_reward_mean')
    >>> result_tag("info/learner/default_policy/num_traces/learn_on_batch")
    'debug/learner/default_policy/num_traces/learn_on_batch'
    >>> result_tag("timestamp"), result_tag("num_env_steps_sampled")
    ('debug/misc/timestamp', 'debug/counters/num_env_steps_sampled')
"""

import numbers
import os
from typing import Any, Dict, Optional

import keras
import numpy as np
import tensorflow as tf

__all__ = ["DEBUG_PREFIX", "TensorBoard", "TensorBoardLogger", "flatten_result", "result_tag"]

#: The group of the tags that show tfrl's internals rather than learning progress.
DEBUG_PREFIX = "debug/"
#: The counters that stay at the top level; every other counter is under `debug/`.
_MAIN_COUNTERS = {"timesteps_total", "episodes_total", "training_iteration"}
#: Learner stats that are bookkeeping, not learning curves (first part of the stat's key).
_DEBUG_LEARNER_STATS = {"num_traces", "num_grad_updates", "num_nonfinite_updates_skipped",
                        "num_agent_steps_trained", "num_steps_trained",
                        "num_grad_updates_lifetime", "diff_num_grad_updates_vs_sampler_policy"}
#: Sampler keys (after `sampler/`) that are internals.
_DEBUG_SAMPLER_PREFIXES = ("sampler_perf/", "num_faulty_episodes", "num_episodes")

_COUNTER_KEYS = {"training_iteration", "iterations_since_restore", "timesteps_total",
                 "agent_timesteps_total", "episodes_total", "num_healthy_workers"}
_TIMER_KEYS = {"time_this_iter_s", "time_total_s"}
_SAMPLER_PREFIXES = ("episode_", "episodes_this_iter", "num_episodes", "num_faulty_episodes",
                     "sampler_perf/", "policy_reward_", "custom_metrics/",
                     "off_policy_estimator/")


def flatten_result(result: Dict[str, Any], prefix: str = "") -> Dict[str, float]:
    """The numeric leaves of a (nested) result dict as `{"a/b/c": float}`.

    Booleans, strings, lists (e.g. `hist_stats`) and None are left out; numpy scalars
    and 0-d arrays become floats; non-string dict keys are converted with `str()`.
    """
    flat: Dict[str, float] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_result(value, prefix=f"{name}/"))
        elif isinstance(value, (bool, np.bool_)):
            continue
        elif isinstance(value, numbers.Number):
            flat[name] = float(value)
        elif isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            flat[name] = float(value)
    return flat


def result_tag(key: str) -> Optional[str]:
    """The TensorBoard tag of a flattened result key, or None if it is not logged
    (`info/...` counters repeat `counters/...`); internals get the `debug/` prefix."""
    tag = _grouped_tag(key)
    if tag is None or not _is_debug(tag):
        return tag
    return DEBUG_PREFIX + tag


def _is_debug(tag: str) -> bool:
    """Whether a grouped tag shows an internal (see the module docstring)."""
    group, _, rest = tag.partition("/")
    if group == "misc":
        return True
    if group == "counters":
        return rest not in _MAIN_COUNTERS
    if group == "sampler":
        return rest.startswith(_DEBUG_SAMPLER_PREFIXES)
    if group == "learner":
        stat = rest.split("/")[1:2]
        return bool(stat) and stat[0] in _DEBUG_LEARNER_STATS
    return False


def _grouped_tag(key: str) -> Optional[str]:
    """The tag of a flattened result key before internals move under `debug/`."""
    parts = key.split("/")
    if parts[0] == "info":
        if len(parts) >= 4 and parts[1] == "learner":
            rest = parts[3:]
            if rest[0] == "learner_stats":
                rest = rest[1:]
            return "/".join(["learner", parts[2]] + rest) if rest else None
        return None
    if parts[0] in ("timers", "counters", "evaluation"):
        return key
    if key in _COUNTER_KEYS or key.startswith("num_") and "steps" in key:
        return f"counters/{key}"
    if key in _TIMER_KEYS:
        return f"timers/{key}"
    if key.startswith(_SAMPLER_PREFIXES):
        return f"sampler/{key}"
    return f"misc/{key}"


class TensorBoardLogger:
    """Writes result dicts and policy graphs to a TensorBoard logdir.

    Args:
        logdir: Directory of the event files (created if needed).
        step_key: The result key used as the summary step (default `timesteps_total`;
            `training_iteration` is the other natural choice).
    """

    def __init__(self, logdir: str, step_key: str = "timesteps_total"):
        self.logdir = os.fspath(logdir)
        self.step_key = step_key
        self.writer = tf.summary.create_file_writer(self.logdir)

    def log_result(self, result: Dict[str, Any], step: Optional[int] = None) -> Dict[str, float]:
        """Writes the scalars and `hist_stats` histograms of one result.

        Returns:
            `{tag: value}` of the scalars written.

        Raises:
            KeyError: No `step` given and the result lacks `step_key`.
        """
        if step is None:
            if self.step_key not in result:
                raise KeyError(
                    f"TensorBoardLogger.log_result: the result has no {self.step_key!r} to use "
                    f"as the step (it has {sorted(result)[:8]}...). Pass step=... or build the "
                    "logger with another step_key.")
            step = int(result[self.step_key])
        scalars: Dict[str, float] = {}
        for key, value in flatten_result(result).items():
            tag = result_tag(key)
            if tag is not None and tag not in scalars:
                scalars[tag] = value
        with self.writer.as_default(step=int(step)):
            for tag, value in scalars.items():
                tf.summary.scalar(tag, value)
            evaluation = result.get("evaluation") or {}
            for prefix, hists in (("", result.get("hist_stats")),
                                  ("evaluation/", evaluation.get("hist_stats"))):
                for name, values in (hists or {}).items():
                    data = np.asarray(values, dtype=np.float64).ravel()
                    if data.size:
                        tf.summary.histogram(f"{prefix}hist_stats/{name}", data)
        self.writer.flush()
        return scalars

    def log_policy_graphs(self, policies: Dict[str, Any]) -> Dict[str, str]:
        """Writes each policy model's forward graph to `<logdir>/graphs/<policy_id>`.

        Models whose call cannot be traced on a zero observation batch alone (e.g.
        recurrent models needing state inputs) are skipped.

        Returns:
            `{policy_id: graph directory}` of the graphs written.
        """
        written = {}
        for policy_id, policy in policies.items():
            graph = _policy_graph(policy)
            if graph is None:
                continue
            path = os.path.join(self.logdir, "graphs", str(policy_id))
            writer = tf.summary.create_file_writer(path)
            with writer.as_default():
                tf.summary.graph(graph)
            writer.close()
            written[policy_id] = path
        return written

    def close(self) -> None:
        self.writer.close()


def _policy_graph(policy: Any) -> Optional[tf.Graph]:
    model = getattr(policy, "model", None)
    space = getattr(policy, "observation_space", None)
    shape = getattr(space, "shape", None)
    if model is None or shape is None or getattr(policy, "is_recurrent", lambda: False)():
        return None
    dtype = tf.as_dtype(space.dtype) if getattr(space, "dtype", None) is not None else tf.float32
    forward = tf.function(lambda obs: model(obs))
    try:
        return forward.get_concrete_function(tf.TensorSpec([None, *shape], dtype)).graph
    except (TypeError, ValueError):
        return None


class TensorBoard(keras.callbacks.Callback):
    """`Algorithm.fit()` callback writing every iteration with a `TensorBoardLogger`.

    Args:
        log_dir: The logdir.
        step_key: The result key used as the step (see `TensorBoardLogger`).
        write_graph: Whether to write the policy graphs when training begins.

    The full result dict of each iteration is read from `self.model.last_result` (the
    fit loop's `logs` hold only numbers, while `hist_stats` holds lists).
    """

    def __init__(self, log_dir: str = "logs", step_key: str = "timesteps_total",
                 write_graph: bool = True):
        super().__init__()
        self.log_dir = os.fspath(log_dir)
        self.step_key = step_key
        self.write_graph = write_graph
        self.logger: Optional[TensorBoardLogger] = None

    def on_train_begin(self, logs=None):
        self.logger = TensorBoardLogger(self.log_dir, step_key=self.step_key)
        algorithm = self.model.algorithm
        if self.write_graph:
            worker = algorithm.workers.local_worker()
            self.logger.log_policy_graphs({pid: worker.policy_map[pid]
                                           for pid in worker.policy_map})

    def on_epoch_end(self, epoch, logs=None):
        result = getattr(self.model, "last_result", None) or dict(logs or {})
        self.logger.log_result(result, step=_step(result, self.step_key, epoch))

    def on_train_end(self, logs=None):
        if self.logger is not None:
            self.logger.close()


def _step(result: Dict[str, Any], key: str, epoch: int) -> int:
    value = result.get(key)
    return int(value) if value is not None else int(epoch)
