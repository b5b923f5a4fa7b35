"""Every registered algorithm on an action space its policy does not take (its class
attribute `action_space_types`): building the policy or the algorithm fails with a
`ValueError` that names the space received."""

import pytest

from conformance_helpers import ENVS, SPACES, UNSUPPORTED, algorithm_config, make_policy
from tfrl.algorithms.registry import get_algorithm_class

pytestmark = pytest.mark.parametrize("algo,space", UNSUPPORTED)


def test_policy_rejects_the_action_space_naming_it(algo, space):
    with pytest.raises(ValueError, match="action space.*" + type(SPACES[space][1]).__name__):
        make_policy(algo, space)


def test_algorithm_rejects_the_action_space_naming_it(algo, space):
    with pytest.raises(ValueError, match="action space.*" + type(SPACES[space][1]).__name__):
        get_algorithm_class(algo)(config=algorithm_config(algo, env=ENVS[space]))
