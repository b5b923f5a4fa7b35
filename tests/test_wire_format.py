"""The policy server's wire format: exact round trips, and rejection of bad messages."""

import base64
import json

import gymnasium as gym
import numpy as np
import pytest

from tfrl.serving.wire_format import WireFormatError, dumps, encodable_subset, loads
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64,
                                   np.uint8, np.bool_, np.complex64, "<U5", ">i4"])
def test_arrays_round_trip_exactly(dtype):
    arr = (np.arange(12).reshape(3, 4) % 7).astype(dtype)
    back = loads(dumps(arr))
    assert back.dtype == arr.dtype and back.shape == arr.shape
    np.testing.assert_array_equal(back, arr)
    assert back.flags.writeable


def test_scalars_floats_and_containers():
    value = {"f": 0.1, "nan": float("nan"), "np": np.float32(1.5), "i": np.int64(-3),
             "t": (1, [2, (3,)]), 4: "int key", ("a", 1): None, "__tuple__": "collides"}
    back = loads(dumps(value))
    assert back["f"] == 0.1 and np.isnan(back["nan"])
    assert type(back["np"]) is np.float32 and back["np"] == 1.5
    assert type(back["i"]) is np.int64
    assert back["t"] == (1, [2, (3,)])
    assert back[4] == "int key" and back[("a", 1)] is None and back["__tuple__"] == "collides"


def test_weights_dict_round_trips():
    weights = {"dense/kernel": np.random.rand(4, 3).astype(np.float32),
               "dense/bias": np.zeros(3, np.float32), "step": np.int64(7)}
    back = loads(dumps(weights))
    for k, v in weights.items():
        assert back[k].dtype == np.asarray(v).dtype
        np.testing.assert_array_equal(back[k], v)


@pytest.mark.parametrize("space", [
    gym.spaces.Box(-1.0, 2.0, (2, 3), np.float32),
    gym.spaces.Box(np.array([-1.0, -np.inf]), np.array([1.0, np.inf]), dtype=np.float64),
    gym.spaces.Discrete(5, start=-2),
    gym.spaces.MultiDiscrete([3, 4]),
    gym.spaces.MultiBinary(4),
    gym.spaces.Dict({"pos": gym.spaces.Box(0, 1, (2,)), "id": gym.spaces.Discrete(3)}),
    gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,), np.float64)]),
])
def test_spaces_round_trip(space):
    back = loads(dumps(space))
    assert back == space and type(back) is type(space)
    assert back.dtype == space.dtype


def test_batches_round_trip():
    infos = np.empty(2, dtype=object)
    infos[:] = [{"a": 1}, {}]
    batch = SampleBatch({"obs": np.ones((2, 3), np.float32), "actions": np.array([0, 1]),
                         "eps_id": np.array(["x", "x"]), "infos": infos})
    back = loads(dumps(batch))
    assert isinstance(back, SampleBatch) and back.count == 2
    assert back["infos"].dtype == object and list(back["infos"]) == [{"a": 1}, {}]
    assert back["eps_id"].tolist() == ["x", "x"]
    ma = loads(dumps(MultiAgentBatch({"p": batch}, env_steps=1)))
    assert isinstance(ma, MultiAgentBatch) and ma.count == 1 and ma.policy_batches["p"].count == 2


def test_unencodable_values_raise_type_error():
    with pytest.raises(TypeError, match="Cannot send a value of type function"):
        dumps({"f": lambda: 0})
    with pytest.raises(TypeError, match="Cannot send a Text space"):
        dumps(gym.spaces.Text(5))


def test_encodable_subset_drops_callables():
    subset, dropped = encodable_subset({"lr": 0.1, "fn": print, "model": {"cls": object, "n": 2}})
    assert subset == {"lr": 0.1, "model": {"n": 2}} and sorted(dropped) == ["fn", "model.cls"]


def _array_tag(**over):
    tag = {"__ndarray__": base64.b64encode(b"\0" * 8).decode(), "dtype": "<f4", "shape": [2]}
    tag.update(over)
    return json.dumps(tag).encode()


@pytest.mark.parametrize("body,message", [
    (b'{"command": "GET_ACTION", "observation": [1, 2', "malformed JSON"),
    (b"\xff\xfe", "malformed JSON"),
    (_array_tag(dtype="|O"), "dtype object is not allowed"),
    (_array_tag(dtype="nonsense"), "unknown dtype"),
    (_array_tag(shape=[3]), "has 8 bytes, expected 12"),
    (_array_tag(shape=[-1]), "shape must be a list of ints >= 0"),
    (_array_tag(__ndarray__="%%%"), "not valid base64"),
    (_array_tag(extra=1), "unexpected keys"),
    (b'{"__space__": "Evil", "x": 1}', "unknown space type 'Evil'"),
    (b'{"__space__": "Discrete", "n": "5", "start": 0}', "n must be a int"),
    (b'{"__tuple__": [1], "__dict__": []}', "several type tags"),
    (b'{"__dict__": [[[1], 2]]}', "is not hashable"),
    (b'{"__sample_batch__": {"a": [1, 2]}}', "every SampleBatch column must be an array"),
    (b'{"__objarray__": [1, 2], "shape": [3]}', r"__objarray__ has 2 items for shape \(3,\)"),
    (b'{"__multi_agent_batch__": {}, "env_steps": "1"}', "env_steps must be a int"),
    (b"[" * 100000 + b"]" * 100000, "malformed JSON"),
])
def test_bad_messages_raise_wire_format_error(body, message):
    with pytest.raises(WireFormatError, match=message):
        loads(body)
