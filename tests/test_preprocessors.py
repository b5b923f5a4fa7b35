"""Preprocessors: shapes, one item vs a batch, flattening order and bad input."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.models.catalog import ModelCatalog
from tfrl.models.preprocessors import (
    AtariRamPreprocessor,
    GenericPixelPreprocessor,
    DictFlatteningPreprocessor,
    NoPreprocessor,
    OneHotPreprocessor,
    TupleFlatteningPreprocessor,
    get_preprocessor,
)

BOX = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
DICT = gym.spaces.Dict(
    {"pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "cell": gym.spaces.Discrete(3)}
)


@pytest.mark.parametrize(
    "space, cls, shape",
    [
        (BOX, NoPreprocessor, (3,)),
        (gym.spaces.Box(0, 255, (4, 4, 3), np.uint8), NoPreprocessor, (4, 4, 3)),
        (gym.spaces.MultiBinary(4), NoPreprocessor, (4,)),
        (gym.spaces.Discrete(5), OneHotPreprocessor, (5,)),
        (gym.spaces.MultiDiscrete([2, 3]), OneHotPreprocessor, (5,)),
        (DICT, DictFlatteningPreprocessor, (5,)),
        (gym.spaces.Tuple([gym.spaces.Discrete(2), BOX]), TupleFlatteningPreprocessor, (5,)),
    ],
)
def test_class_and_shape_per_space(space, cls, shape):
    prep = ModelCatalog.get_preprocessor_for_space(space)
    assert type(prep) is cls and get_preprocessor(space) is cls
    assert prep.shape == shape and prep.size == int(np.prod(shape))
    space.seed(0)
    item = space.sample()
    assert prep.transform(item).shape == shape
    assert prep.observation_space.shape == shape


def test_one_hot_values_single_and_batch():
    prep = OneHotPreprocessor(gym.spaces.MultiDiscrete([2, 3]))
    np.testing.assert_array_equal(prep.transform(np.array([1, 2])), [0, 1, 0, 0, 1])
    out = prep.transform_batch(np.array([[0, 0], [1, 1]]))
    np.testing.assert_array_equal(out, [[1, 0, 1, 0, 0], [0, 1, 0, 1, 0]])
    assert out.dtype == np.float32
    assert prep.observation_space.original_space == gym.spaces.MultiDiscrete([2, 3])


def test_dict_flattening_order_and_batch_equals_items():
    prep = DictFlatteningPreprocessor(DICT)
    obs = [{"pos": np.array([0.5, -0.5], np.float32), "cell": 2},
           {"pos": np.array([0.1, 0.2], np.float32), "cell": 0}]
    batch = {"pos": np.stack([o["pos"] for o in obs]), "cell": np.array([2, 0])}
    expected = np.stack([prep.transform(o) for o in obs])
    # gymnasium orders Dict keys alphabetically: "cell" (one-hot) comes first.
    np.testing.assert_allclose(expected[0], [0, 0, 1, 0.5, -0.5])
    np.testing.assert_allclose(prep.transform_batch(batch), expected)
    np.testing.assert_allclose(prep.transform_batch(obs), expected)


def test_nested_tuple_of_dict():
    space = gym.spaces.Tuple([DICT, gym.spaces.Discrete(2)])
    prep = get_preprocessor(space)(space)
    out = prep.transform(({"pos": [0.0, 1.0], "cell": 1}, 1))
    np.testing.assert_allclose(out, [0, 1, 0, 0, 1, 0, 1])


def test_box_batch_of_wrong_shape_is_rejected():
    prep = NoPreprocessor(BOX)
    with pytest.raises(ValueError, match=r"Received: shape=\(2, 4\).*Expected \[B, 3\]"):
        prep.transform_batch(np.zeros((2, 4), np.float32))


def test_discrete_batch_of_wrong_rank_is_rejected():
    prep = OneHotPreprocessor(gym.spaces.Discrete(3))
    with pytest.raises(ValueError, match=r"wrong rank.*shape=\(2, 1\)"):
        prep.transform_batch(np.zeros((2, 1), np.int64))


def test_discrete_value_outside_space_is_rejected():
    with pytest.raises(ValueError, match="outside the space"):
        OneHotPreprocessor(gym.spaces.Discrete(3)).transform(3)


def test_dict_batch_missing_key_is_rejected():
    prep = DictFlatteningPreprocessor(DICT)
    with pytest.raises(ValueError, match="no entry 'cell'"):
        prep.transform_batch({"pos": np.zeros((1, 2), np.float32)})


def test_check_shape():
    prep = NoPreprocessor(BOX)
    prep.check_shape(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="outside the observation space"):
        prep.check_shape(np.zeros(4, np.float32))


def test_unsupported_space_is_rejected():
    with pytest.raises(ValueError, match="No preprocessor for observation space"):
        get_preprocessor(gym.spaces.Text(5))


def test_box_batches_take_the_space_dtype():
    prep = NoPreprocessor(BOX)
    assert prep.transform_batch(np.zeros((2, 3), np.float64)).dtype == np.float32
    image = gym.spaces.Box(0, 255, (2, 2, 1), np.uint8)
    assert NoPreprocessor(image).transform(np.zeros((2, 2, 1), np.uint8)).dtype == np.uint8


def test_catalog_get_preprocessor_for_env():
    env = gym.make("CartPole-v1")
    assert ModelCatalog.get_preprocessor(env).shape == (4,)


ATARI = gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)


def test_generic_pixel_preprocessor_area_resize():
    prep = ModelCatalog.get_preprocessor_for_space(ATARI, {"dim": 80, "zero_mean": False})
    assert type(prep) is GenericPixelPreprocessor and prep.shape == (80, 80, 3)
    frames = np.random.default_rng(0).integers(0, 256, (2, 210, 160, 3)).astype(np.uint8)
    out = prep.transform_batch(frames)
    # 160 -> 80 is an exact 2x2 block average of the cropped rows 25..185.
    crop = frames[:, 25:-25].astype(np.float64)
    blocks = crop.reshape(2, 80, 2, 80, 2, 3).mean(axis=(2, 4)) / 255.0
    np.testing.assert_allclose(out, blocks, atol=1e-5)
    np.testing.assert_allclose(prep.transform(frames[0]), out[0], atol=1e-6)


def test_generic_pixel_preprocessor_defaults_and_grayscale():
    prep = get_preprocessor(ATARI)(ATARI, {"grayscale": True})
    assert prep.shape == (84, 84, 1)
    out = prep.transform_batch(np.full((1, 210, 160, 3), 192, np.uint8))
    np.testing.assert_allclose(out, np.full((1, 84, 84, 1), 0.5), atol=1e-5)  # zero_mean
    with pytest.raises(ValueError, match=r"Received: shape=\(1, 200, 160, 3\)"):
        prep.transform_batch(np.zeros((1, 200, 160, 3), np.uint8))


def test_atari_ram_preprocessor_only_for_bytes():
    ram = gym.spaces.Box(0, 255, (128,), np.uint8)
    prep = get_preprocessor(ram)(ram)
    assert type(prep) is AtariRamPreprocessor
    np.testing.assert_allclose(prep.transform_batch(np.array([[0] * 64 + [192] * 64], np.uint8)),
                               [[-1.0] * 64 + [0.5] * 64])
    assert get_preprocessor(gym.spaces.Box(-1.0, 1.0, (128,), np.float32)) is NoPreprocessor
