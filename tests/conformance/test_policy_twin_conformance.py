"""The policy-level suites run once for a `policy_twin` pair (A3C's policy is A2C's):
here the twin's policy is shown to be its twin's, update for update, so that skipping
its policy-level cases loses nothing. Its algorithm-level cases run as for every other."""

import numpy as np
import pytest

from conformance_helpers import (ALGORITHM_NAMES, POLICY_ONE_SPACE, POLICY_SUPPORTED,
                                 SUPPORTED, make_policy, observations, policy_twin,
                                 train_batch)
from tfrl.algorithms.registry import get_algorithm_class
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

TWINS = [(name, policy_twin(name)) for name in ALGORITHM_NAMES if policy_twin(name)]


def test_only_exact_twins_leave_the_policy_level_suites():
    skipped = sorted(set(SUPPORTED) - set(POLICY_SUPPORTED))
    one_space = [(a, s) for a, s in skipped if a in POLICY_ONE_SPACE]
    twins = [(a, s) for a, s in skipped if a not in POLICY_ONE_SPACE]
    assert all(policy_twin(algo) for algo, _ in twins)
    # The twin itself is checked by the policy-level suites on the same spaces.
    assert all((policy_twin(algo), space) in POLICY_SUPPORTED for algo, space in twins)
    # An algorithm run on one space keeps it, and its policy's base class (MAPPO's:
    # PPO's) is checked on the spaces it leaves out.
    for algo, space in one_space:
        assert (algo, POLICY_ONE_SPACE[algo]) in POLICY_SUPPORTED
        base = get_algorithm_class(algo).default_policy_class.__bases__[0]
        assert any(get_algorithm_class(other).default_policy_class is base
                   and (other, space) in POLICY_SUPPORTED for other in ALGORITHM_NAMES)


@pytest.mark.parametrize("name,twin", TWINS)
def test_a_twins_policy_acts_and_learns_exactly_as_its_twins(name, twin):
    policies = [make_policy(algo, "discrete") for algo in (name, twin)]
    obs = observations("discrete", 6, seed=3)
    np.testing.assert_array_equal(*(p.compute_actions(obs, explore=False)[0]
                                    for p in policies))
    batch = train_batch(policies[1], "discrete", 32, seed=5)
    infos = [p.learn_on_batch(batch.copy())["learner_stats"] for p in policies]
    assert infos[0] == infos[1]
    for got, want in zip(policies[0].get_weights(), policies[1].get_weights()):
        np.testing.assert_array_equal(got, want)
