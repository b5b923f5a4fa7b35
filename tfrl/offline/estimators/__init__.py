"""Off-policy estimators (RLlib's `ray.rllib.offline.estimators`): the value of a target
policy from another policy's logged episodes.

`input_evaluation` names: "is" (`ImportanceSampling`), "wis"
(`WeightedImportanceSampling`), "dm" (`DirectMethod`), "dr" (`DoublyRobust`); their
estimates reach the result dict under `off_policy_estimator`.
"""

from typing import Any, Dict, Type

from tfrl.offline.estimators.direct_method import DirectMethod
from tfrl.offline.estimators.doubly_robust import DoublyRobust
from tfrl.offline.estimators.fqe_model import FQEModel
from tfrl.offline.estimators.importance_sampling import ImportanceSampling
from tfrl.offline.estimators.off_policy_estimator import OffPolicyEstimate, OffPolicyEstimator
from tfrl.offline.estimators.weighted_importance_sampling import WeightedImportanceSampling

ESTIMATORS: Dict[str, Type[OffPolicyEstimator]] = {
    "is": ImportanceSampling, "wis": WeightedImportanceSampling,
    "dm": DirectMethod, "dr": DoublyRobust,
}


def estimator_class(method: Any) -> Type[OffPolicyEstimator]:
    """The estimator class for an `input_evaluation` entry (a name or a class).

    Raises:
        ValueError: For an unknown name (listing the known ones).
    """
    if isinstance(method, type) and issubclass(method, OffPolicyEstimator):
        return method
    if method in ESTIMATORS:
        return ESTIMATORS[method]
    raise ValueError(f"Unknown evaluation method: {method!r}. Known: 'simulation', "
                     f"{', '.join(repr(k) for k in ESTIMATORS)}, or an OffPolicyEstimator "
                     "subclass.")


__all__ = ["DirectMethod", "DoublyRobust", "FQEModel", "ImportanceSampling",
           "OffPolicyEstimate", "OffPolicyEstimator", "WeightedImportanceSampling",
           "ESTIMATORS", "estimator_class"]
