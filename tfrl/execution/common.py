"""Names of the counters, timers and info keys the execution operators share.

Operators read and write these in the pipeline's `SharedMetrics` (see
`tfrl.execution.iter`): counters are plain ints keyed by the strings below, timers are
`TimerStat`s, and `info[LEARNER_INFO]` holds the latest learner stats per policy.

Example:
    >>> from tfrl.execution.iter import SharedMetrics, metrics_context
    >>> with metrics_context(SharedMetrics()) as metrics:
    ...     metrics.counters[STEPS_SAMPLED_COUNTER] += 200
    ...     _get_global_vars()
    {'timestep': 200}
"""

from typing import Dict

from tfrl.execution.iter import SharedMetrics, _get_shared_metrics, get_shared_metrics

# Counters.
STEPS_SAMPLED_COUNTER = "num_env_steps_sampled"
AGENT_STEPS_SAMPLED_COUNTER = "num_agent_steps_sampled"
STEPS_TRAINED_COUNTER = "num_env_steps_trained"
AGENT_STEPS_TRAINED_COUNTER = "num_agent_steps_trained"
STEPS_TRAINED_THIS_ITER_COUNTER = "num_steps_trained_this_iter"
LAST_TARGET_UPDATE_TS = "last_target_update_ts"
NUM_TARGET_UPDATES = "num_target_updates"

# Info keys.
LEARNER_INFO = "learner"
LEARNER_STATS_KEY = "learner_stats"

# Timers.
SAMPLE_TIMER = "sample"
LEARN_ON_BATCH_TIMER = "learn"
LOAD_BATCH_TIMER = "load"
COMPUTE_GRADS_TIMER = "compute_grads"
APPLY_GRADS_TIMER = "apply_grad"
GRAD_WAIT_TIMER = "grad_wait"
WORKER_UPDATE_TIMER = "update"

__all__ = [
    "STEPS_SAMPLED_COUNTER", "AGENT_STEPS_SAMPLED_COUNTER", "STEPS_TRAINED_COUNTER",
    "AGENT_STEPS_TRAINED_COUNTER", "STEPS_TRAINED_THIS_ITER_COUNTER", "LAST_TARGET_UPDATE_TS",
    "NUM_TARGET_UPDATES", "LEARNER_INFO", "LEARNER_STATS_KEY", "SAMPLE_TIMER",
    "LEARN_ON_BATCH_TIMER", "LOAD_BATCH_TIMER", "COMPUTE_GRADS_TIMER", "APPLY_GRADS_TIMER",
    "GRAD_WAIT_TIMER", "WORKER_UPDATE_TIMER", "get_shared_metrics", "_get_shared_metrics",
    "_get_global_vars", "global_vars_of",
]


def global_vars_of(metrics: SharedMetrics) -> Dict[str, int]:
    """The global vars sent to workers with new weights: `{"timestep": env steps sampled}`."""
    return {"timestep": metrics.counters[STEPS_SAMPLED_COUNTER]}


def _get_global_vars() -> Dict[str, int]:
    """`global_vars_of` the running pipeline's metrics (inside an operator)."""
    return global_vars_of(get_shared_metrics())
