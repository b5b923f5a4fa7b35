"""Every registered algorithm on an action space its policy does not take (its class
attribute `action_space_types`): building the policy or the algorithm fails with a
`ValueError` that names the space received. Likewise a recurrent model for a policy
that does not take one (`supports_recurrent_models = False`)."""

import pytest

from conformance_helpers import (ENVS, RECURRENT_MODEL, RECURRENT_UNSUPPORTED, SPACES,
                                 UNSUPPORTED, algorithm_config, make_policy)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)
from tfrl.algorithms.registry import get_algorithm_class

@pytest.mark.parametrize("algo,space", UNSUPPORTED)
def test_policy_rejects_the_action_space_naming_it(algo, space):
    with pytest.raises(ValueError, match="action space.*" + type(SPACES[space][1]).__name__):
        make_policy(algo, space)


@pytest.mark.parametrize("algo,space", UNSUPPORTED)
def test_algorithm_rejects_the_action_space_naming_it(algo, space):
    with pytest.raises(ValueError, match="action space.*" + type(SPACES[space][1]).__name__):
        get_algorithm_class(algo)(config=algorithm_config(algo, env=ENVS[space]))


@pytest.mark.parametrize("name", RECURRENT_UNSUPPORTED)
def test_policy_without_recurrent_models_refuses_use_lstm_naming_it(name):
    with pytest.raises(ValueError, match="does not support recurrent models.*use_lstm=True"):
        make_policy(name, "discrete", model=RECURRENT_MODEL)
