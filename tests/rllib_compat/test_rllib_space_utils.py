"""RLlib's own space-utility tests, ported to tfrl.

Ported from `rllib/utils/spaces/tests/test_space_utils.py` at ray-project/ray commit
43f4bb0b605d046554c810e400b329d4a7bf040c. Covers: test_convert_element_to_space_type,
test_unsquash_action, test_batch_and_unbatch.
"""

import numpy as np
import tree
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple

from compat_helpers import check
from tfrl.utils.spaces.space_utils import (
    batch,
    convert_element_to_space_type,
    get_base_struct_from_space,
    unbatch,
    unsquash_action,
)

RLLIB_PATH = "rllib/utils/spaces/tests/test_space_utils.py"
RLLIB_COMMIT = "43f4bb0b605d046554c810e400b329d4a7bf040c"


def test_convert_element_to_space_type():
    """Elements of every leaf-space kind are converted to the space's types."""
    box_space = Box(low=-1, high=1, shape=(2,))
    discrete_space = Discrete(2)
    multi_discrete_space = MultiDiscrete([2, 2])
    multi_binary_space = MultiBinary(2)
    tuple_space = Tuple((box_space, discrete_space))
    dict_space = Dict({
        "box": box_space,
        "discrete": discrete_space,
        "multi_discrete": multi_discrete_space,
        "multi_binary": multi_binary_space,
        "dict_space": Dict({"box2": box_space, "discrete2": discrete_space}),
        "tuple_space": tuple_space,
    })
    dict_space.seed(0)

    box_space_unconverted = box_space.sample().astype(np.float64)
    multi_discrete_unconverted = multi_discrete_space.sample().astype(np.int32)
    multi_binary_unconverted = multi_binary_space.sample().astype(np.int32)
    tuple_unconverted = (box_space_unconverted, float(0))
    modified_element = {
        "box": box_space_unconverted,
        "discrete": float(0),
        "multi_discrete": multi_discrete_unconverted,
        "multi_binary": multi_binary_unconverted,
        "tuple_space": tuple_unconverted,
        "dict_space": {"box2": box_space_unconverted, "discrete2": float(0)},
    }
    element_with_correct_types = convert_element_to_space_type(
        modified_element, dict_space.sample())
    assert dict_space.contains(element_with_correct_types)


def test_unsquash_action():
    """unsquash_action maps float Box actions from [-1, 1] and shifts int Box actions."""
    space = Box(low=3, high=8, shape=(2,), dtype=np.float32)
    struct = get_base_struct_from_space(space)
    action = unsquash_action(0.5, struct)
    assert action[0] == 6.75
    assert action[1] == 6.75

    space = Box(low=3, high=8, shape=(2,), dtype=np.int32)
    struct = get_base_struct_from_space(space)
    action = unsquash_action(3, struct)
    assert action[0] == 6
    assert action[1] == 6


def test_batch_and_unbatch():
    """`batch` and `unbatch` invert each other, for simple and nested structs."""
    simple_struct = [0, 1, 2, 3, 4, 5, 6, 7]
    simple_struct_batched = batch(simple_struct)
    check(unbatch(simple_struct_batched), simple_struct)

    # A nested struct of batches (B=2).
    complex_struct = {
        "a": (
            np.array([-10.0, -20.0]),
            {"a1": np.array([-1, -2]), "a2": np.array([False, False])},
        ),
        "b": np.array([0, 1]),
        "c": {
            "c1": np.array([True, False]),
            "c2": np.array([1, 2]),
            "c3": (np.array([3, 4]), np.array([5, 6])),
        },
        "d": np.array([0.0, 0.1]),
    }
    complex_struct_unbatched = unbatch(complex_struct)
    # Two items: all index-0 values, then all index-1 values.
    check(complex_struct_unbatched, [
        tree.map_structure(lambda s: s[0], complex_struct),
        tree.map_structure(lambda s: s[1], complex_struct),
    ])

    complex_struct_rebatched = batch(complex_struct_unbatched)
    check(complex_struct, complex_struct_rebatched)
