"""RLlib's utils tests, ported to tfrl.

Ports `rllib/utils/tests/test_utils.py` of ray-project/ray at commit
00238893096dab0446c311c4388bd4c8f547fb73: test_make_action_immutable,
test_flatten_inputs_to_1d_tensor, test_flatten_inputs_to_1d_tensor_w_time_axis and
test_one_hot (their numpy and TensorFlow parts; the torch parts are dropped). `gym` is
gymnasium; Ray start-up is dropped.
"""

from types import MappingProxyType

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
import tree

from compat_helpers import check
from tfrl.utils.numpy import flatten_inputs_to_1d_tensor as flatten_np
from tfrl.utils.numpy import make_action_immutable
from tfrl.utils.tf_utils import flatten_inputs_to_1d_tensor as flatten_tf
from tfrl.utils.tf_utils import one_hot as one_hot_tf

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


# A nested batch with B=3 (no time axis), the same data with B=2 and T=1, and their spaces.
STRUCT = {
    "a": np.array([1, 3, 2]),
    "b": (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
          np.array([[[8.0], [7.0], [6.0]], [[5.0], [4.0], [3.0]], [[2.0], [1.0], [0.0]]])),
    "c": {"ca": np.array([[1, 2], [3, 5], [0, 1]]), "cb": np.array([1.0, 2.0, 3.0])},
}
STRUCT_W_TIME_AXIS = {
    "a": np.array([[1], [3]]),
    "b": (np.array([[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]]),
          np.array([[[[8.0], [7.0], [6.0]]], [[[5.0], [4.0], [3.0]]]])),
    "c": {"ca": np.array([[[1, 2]], [[3, 5]]]), "cb": np.array([[1.0], [2.0]])},
}
SPACES = {
    "a": gym.spaces.Discrete(4),
    "b": (gym.spaces.Box(-1.0, 10.0, (3,)), gym.spaces.Box(-1.0, 1.0, (3, 1))),
    "c": {"ca": gym.spaces.MultiDiscrete([4, 6]), "cb": gym.spaces.Box(-1.0, 1.0, ())},
}
# The flattened rows: one-hot a (4), b[0] (3), b[1] (3), one-hot ca (4 + 6), cb (1).
ROWS = [
    [0.0, 1.0, 0.0, 0.0, 1.0, 2.0, 3.0, 8.0, 7.0, 6.0,
     0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
    [0.0, 0.0, 0.0, 1.0, 4.0, 5.0, 6.0, 5.0, 4.0, 3.0,
     0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0],
    [0.0, 0.0, 1.0, 0.0, 7.0, 8.0, 9.0, 2.0, 1.0, 0.0,
     1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 3.0],
]


def test_flatten_inputs_to_1d_tensor():
    # B=3; no time axis.
    check(flatten_np(STRUCT, spaces_struct=SPACES), np.array(ROWS))
    struct_tf = tree.map_structure(tf.convert_to_tensor, STRUCT)
    check(flatten_tf(struct_tf, spaces_struct=SPACES), np.array(ROWS))


def test_flatten_inputs_to_1d_tensor_w_time_axis():
    # B=2; T=1.
    expected = np.array([[ROWS[0]], [ROWS[1]]])
    check(flatten_np(STRUCT_W_TIME_AXIS, spaces_struct=SPACES, time_axis=True), expected)
    struct_tf = tree.map_structure(tf.convert_to_tensor, STRUCT_W_TIME_AXIS)
    check(flatten_tf(struct_tf, spaces_struct=SPACES, time_axis=True), expected)


def test_one_hot():
    space = gym.spaces.MultiDiscrete([[3, 3], [3, 3]])
    x = tf.Variable([[0, 2, 1, 0]], dtype=tf.int32)
    y = one_hot_tf(x, space)
    assert ([1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0] == y.numpy()).all()
