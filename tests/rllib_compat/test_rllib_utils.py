"""RLlib's utils tests, ported to tfrl (partly).

Ports `rllib/utils/tests/test_utils.py` of ray-project/ray at commit
00238893096dab0446c311c4388bd4c8f547fb73: `test_make_action_immutable`. The file's
flatten_inputs_to_1d_tensor / one_hot tests are not ported yet (tfrl has no
`flatten_inputs_to_1d_tensor`). `gym` is gymnasium; Ray start-up is dropped.
"""

from types import MappingProxyType

import gymnasium as gym
import numpy as np
import pytest
import tree

from tfrl.utils.numpy import make_action_immutable

RLLIB_PATH = "rllib/utils/tests/test_utils.py"
RLLIB_COMMIT = "00238893096dab0446c311c4388bd4c8f547fb73"


def test_make_action_immutable():
    np.random.seed(0)
    # Box space.
    space = gym.spaces.Box(low=-1.0, high=1.0, shape=(8,), dtype=np.float32, seed=0)
    action = make_action_immutable(space.sample())
    assert not action.flags["WRITEABLE"]

    # Discrete: sampled actions are ints, immutable already.

    # MultiDiscrete space.
    space = gym.spaces.MultiDiscrete([3, 3, 3], seed=0)
    action = make_action_immutable(space.sample())
    assert not action.flags["WRITEABLE"]

    # MultiBinary space.
    space = gym.spaces.MultiBinary([2, 2, 2], seed=0)
    action = make_action_immutable(space.sample())
    assert not action.flags["WRITEABLE"]

    # Tuple space.
    space = gym.spaces.Tuple(
        (
            gym.spaces.Discrete(2),
            gym.spaces.Box(low=-1.0, high=1.0, shape=(8,), dtype=np.float32),
        ),
        seed=0,
    )
    action = tree.traverse(make_action_immutable, space.sample(), top_down=False)
    assert not action[1].flags["WRITEABLE"]

    # Dict space.
    space = gym.spaces.Dict(
        {
            "a": gym.spaces.Discrete(2),
            "b": gym.spaces.Box(low=-1.0, high=1.0, shape=(8,), dtype=np.float32),
            "c": gym.spaces.Tuple(
                (
                    gym.spaces.Discrete(2),
                    gym.spaces.Box(low=-1.0, high=1.0, shape=(8,), dtype=np.float32),
                )
            ),
        },
        seed=0,
    )
    action = tree.traverse(make_action_immutable, space.sample(), top_down=False)

    def fail_fun(obj):
        obj["a"] = 5

    with pytest.raises(TypeError):
        fail_fun(action)
    assert not action["b"].flags["WRITEABLE"]
    assert not action["c"][1].flags["WRITEABLE"]
    assert isinstance(action, MappingProxyType)
