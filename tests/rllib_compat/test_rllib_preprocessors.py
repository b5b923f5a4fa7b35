"""RLlib's preprocessor tests, ported to tfrl.

Ports `rllib/models/tests/test_preprocessors.py` of ray-project/ray at commit
0add8af2af9309bd0e0bd1f461199cf631bca41d: `test_tuple_preprocessor`,
`test_dict_flattening_preprocessor`, `test_one_hot_preprocessor`,
`test_nested_multidiscrete_one_hot_preprocessor`,
`test_multidimensional_multidiscrete_one_hot_preprocessor`. Not ported:
`test_gym_preprocessors` (needs the Atari RAM/pixel environments through the gym-v26
compatibility layer, not installed here) and the two `test_preprocessing_disabled_*` tests
(PPO training runs on RLlib's RandomEnv with the RLModule API switches).
"""

import numpy as np
from compat_helpers import check
from gymnasium.spaces import Box, Dict, Discrete, MultiDiscrete, Tuple

from tfrl.models.catalog import ModelCatalog
from tfrl.models.preprocessors import (
    DictFlatteningPreprocessor,
    OneHotPreprocessor,
    TupleFlatteningPreprocessor,
    get_preprocessor,
)

RLLIB_PATH = "rllib/models/tests/test_preprocessors.py"
RLLIB_COMMIT = "0add8af2af9309bd0e0bd1f461199cf631bca41d"


def test_tuple_preprocessor():
    class TupleEnv:
        def __init__(self):
            self.observation_space = Tuple(
                [Discrete(5), Box(0, 5, shape=(3,), dtype=np.float32)])

    pp = ModelCatalog.get_preprocessor(TupleEnv())
    assert isinstance(pp, TupleFlatteningPreprocessor)
    assert pp.shape == (8,)
    assert list(pp.transform((0, np.array([1, 2, 3], np.float32)))) == \
        [float(x) for x in [1, 0, 0, 0, 0, 1, 2, 3]]


def test_dict_flattening_preprocessor():
    space = Dict({"a": Discrete(2), "b": Tuple([Discrete(3), Box(-1.0, 1.0, (4,))])})
    pp = get_preprocessor(space)(space)
    assert isinstance(pp, DictFlatteningPreprocessor)
    assert pp.shape == (9,)
    check(pp.transform({"a": 1, "b": (1, np.array([0.0, -0.5, 0.1, 0.6], np.float32))}),
          [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, -0.5, 0.1, 0.6])


def test_one_hot_preprocessor():
    space = Discrete(5)
    pp = get_preprocessor(space)(space)
    assert isinstance(pp, OneHotPreprocessor)
    assert pp.shape == (5,)
    check(pp.transform(3), [0.0, 0.0, 0.0, 1.0, 0.0])
    check(pp.transform(0), [1.0, 0.0, 0.0, 0.0, 0.0])

    space = MultiDiscrete([2, 3, 4])
    pp = get_preprocessor(space)(space)
    assert isinstance(pp, OneHotPreprocessor)
    assert pp.shape == (9,)
    check(pp.transform(np.array([1, 2, 0])), [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    check(pp.transform(np.array([0, 1, 3])), [1.0, 0.0, 0.0, 1.0, 0.0,
                                              0.0, 0.0, 0.0, 1.0])


def test_nested_multidiscrete_one_hot_preprocessor():
    space = Tuple((MultiDiscrete([2, 3, 4]),))
    pp = get_preprocessor(space)(space)
    assert pp.shape == (9,)
    check(pp.transform((np.array([1, 2, 0]),)), [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    check(pp.transform((np.array([0, 1, 3]),)), [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def _one_hot_rows(values, sizes):
    """Concatenated one-hot rows of `values` (flat) in spaces of `sizes` (flat)."""
    out = []
    for v, n in zip(values, sizes):
        row = [0.0] * n
        row[v] = 1.0
        out.extend(row)
    return out


def test_multidimensional_multidiscrete_one_hot_preprocessor():
    space2d = MultiDiscrete([[2, 2], [3, 3]])
    space3d = MultiDiscrete([[[2, 2], [3, 4]], [[5, 6], [7, 8]]])
    pp2d = get_preprocessor(space2d)(space2d)
    pp3d = get_preprocessor(space3d)(space3d)
    assert isinstance(pp2d, OneHotPreprocessor)
    assert isinstance(pp3d, OneHotPreprocessor)
    assert pp2d.shape == (10,)
    assert pp3d.shape == (37,)
    check(pp2d.transform(np.array([[1, 0], [2, 1]])),
          [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    expected3d = [0.0] * 37
    for i in (0, 3, 6, 10, 15, 21, 28, 36):
        expected3d[i] = 1.0
    check(pp3d.transform(np.array([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])), expected3d)
    # The same vector, built from the space's sizes: each entry one-hot in its own size.
    check(expected3d, _one_hot_rows([0, 1, 2, 3, 4, 5, 6, 7], [2, 2, 3, 4, 5, 6, 7, 8]))
