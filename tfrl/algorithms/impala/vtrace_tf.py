"""RLlib's module path `ray.rllib.algorithms.impala.vtrace_tf`: V-trace lives in
`tfrl.algorithms.impala.vtrace`; this module re-exports RLlib's names from there."""

from tfrl.algorithms.impala.vtrace import (
    VTraceFromLogitsReturns,
    VTraceReturns,
    from_importance_weights,
    from_logits,
    log_probs_from_logits_and_actions,
    multi_log_probs_from_logits_and_actions,
)

__all__ = ["VTraceReturns", "VTraceFromLogitsReturns", "from_importance_weights",
           "from_logits", "log_probs_from_logits_and_actions",
           "multi_log_probs_from_logits_and_actions"]
