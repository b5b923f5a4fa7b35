"""The wire format of PolicyClient <-> PolicyServerInput: JSON with explicit type tags.

Nothing received is ever unpickled or imported by the decoder. Values are encoded as
JSON, and the few non-JSON types are tagged objects that the decoder rebuilds from
plain data only:

- numpy arrays and scalars: `{"__ndarray__": <base64 of the raw bytes>, "dtype":
  "<f4", "shape": [2, 3]}` (+ `"scalar": true` for numpy scalars); only bool, int,
  uint, float, complex and fixed-width string dtypes. Object arrays (e.g. the
  `infos` column) as `{"__objarray__": [items...], "shape": [...]}`.
- tuples: `{"__tuple__": [...]}`; dicts with non-str keys (int agent ids) or keys
  that look like these tags: `{"__dict__": [[key, value], ...]}`.
- gymnasium spaces (Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple):
  `{"__space__": "Box", ...}` with their defining arrays.
- `SampleBatch` / `MultiAgentBatch`: `{"__sample_batch__": {column: value}}` /
  `{"__multi_agent_batch__": {policy_id: batch}, "env_steps": n}`.

Round trips are exact: dtypes, shapes, float bits, dict key types.

Example:
    >>> import numpy as np
    >>> value = {"obs": np.arange(3, dtype=np.float32), 7: (1, "a")}
    >>> back = loads(dumps(value))
    >>> back["obs"].dtype, back["obs"].tolist(), back[7]
    (dtype('float32'), [0.0, 1.0, 2.0], (1, 'a'))
"""

import base64
import json
import math
from typing import Any, List, Tuple

import gymnasium as gym
import numpy as np

from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import SampleBatch

_TAGS = frozenset(["__ndarray__", "__objarray__", "__tuple__", "__dict__", "__space__",
                   "__sample_batch__", "__multi_agent_batch__"])
# bool, signed/unsigned ints, floats, complex, bytes and unicode strings.
_SAFE_DTYPE_KINDS = "biufcSU"


class WireFormatError(ValueError):
    """A message that is not valid tfrl wire format (malformed, truncated, bad tags)."""


def dumps(value: Any) -> bytes:
    """Encodes `value` as UTF-8 JSON bytes (see the module doc for the tags).

    Raises:
        TypeError: For values that cannot be encoded (functions, classes, sets, ...).
    """
    return json.dumps(_encode(value), separators=(",", ":")).encode("utf-8")


def loads(data: bytes) -> Any:
    """Decodes bytes produced by `dumps`.

    Raises:
        WireFormatError: If `data` is not valid JSON or a tag is malformed.
    """
    try:
        return json.loads(data.decode("utf-8"), object_hook=_decode_object)
    except WireFormatError:
        raise
    except (ValueError, TypeError, KeyError, RecursionError, OverflowError) as e:
        raise WireFormatError(f"malformed JSON body ({type(e).__name__}: {e})") from None


def encodable_subset(config: dict) -> Tuple[dict, List[str]]:
    """Splits a config dict into what the wire format can carry and what it cannot.

    Returns:
        `(subset, dropped)`: the config without entries that cannot be encoded
        (callables, classes, ...), and the dotted keys of the dropped entries.
    """
    subset, dropped = {}, []
    for key, value in config.items():
        if isinstance(value, dict):
            sub, sub_dropped = encodable_subset(value)
            subset[key] = sub
            dropped.extend(f"{key}.{k}" for k in sub_dropped)
            continue
        try:
            _encode(value)
        except TypeError:
            dropped.append(str(key))
        else:
            subset[key] = value
    return subset, dropped


# ---- Encoding ---------------------------------------------------------------------------

def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_encode(v) for v in value]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _encode_array(value)
    if isinstance(value, gym.Space):
        return _encode_space(value)
    if isinstance(value, SampleBatch):
        return {"__sample_batch__": {k: _encode(v) for k, v in dict.items(value)}}
    if isinstance(value, MultiAgentBatch):
        return {"__multi_agent_batch__": {k: _encode(v) for k, v in value.policy_batches.items()},
                "env_steps": value.count}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _TAGS for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"__dict__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise TypeError(
        f"Cannot send a value of type {type(value).__name__} to/from a policy server: "
        "the wire format carries None, bool, int, float, str, list, tuple, dict, numpy "
        "arrays, gymnasium spaces and sample batches."
    )


def _encode_array(value: Any) -> Any:
    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        return {"__objarray__": [_encode(v) for v in arr.ravel().tolist()],
                "shape": list(arr.shape)}
    if arr.dtype.kind not in _SAFE_DTYPE_KINDS or arr.dtype.fields is not None:
        raise TypeError(f"Cannot send numpy arrays of dtype {arr.dtype} to/from a policy server.")
    out = {"__ndarray__": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii"),
           "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if isinstance(value, np.generic):
        out["scalar"] = True
    return out


def _encode_space(space: gym.Space) -> dict:
    if isinstance(space, gym.spaces.Box):
        return {"__space__": "Box", "low": _encode_array(space.low),
                "high": _encode_array(space.high), "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.Discrete):
        return {"__space__": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"__space__": "MultiDiscrete", "nvec": _encode_array(space.nvec),
                "start": _encode_array(space.start), "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"__space__": "MultiBinary", "n": _encode(space.n)}
    if isinstance(space, gym.spaces.Dict):
        return {"__space__": "Dict",
                "spaces": [[k, _encode_space(s)] for k, s in space.spaces.items()]}
    if isinstance(space, gym.spaces.Tuple):
        return {"__space__": "Tuple", "spaces": [_encode_space(s) for s in space.spaces]}
    raise TypeError(
        f"Cannot send a {type(space).__name__} space to/from a policy server; supported: Box, "
        "Discrete, MultiDiscrete, MultiBinary, Dict and Tuple."
    )


# ---- Decoding ---------------------------------------------------------------------------

def _decode_object(obj: dict) -> Any:
    tags = _TAGS.intersection(obj)
    if not tags:
        return obj
    if len(tags) > 1:
        raise WireFormatError(f"object with several type tags {sorted(tags)}")
    tag = next(iter(tags))
    if tag == "__ndarray__":
        return _decode_array(obj)
    if tag == "__tuple__":
        _expect_keys(obj, {"__tuple__"})
        return tuple(_expect_type(obj["__tuple__"], list, tag))
    if tag == "__dict__":
        _expect_keys(obj, {"__dict__"})
        pairs = _expect_type(obj["__dict__"], list, tag)
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise WireFormatError("__dict__ must hold [key, value] pairs")
        return {_hashable(k): v for k, v in pairs}
    if tag == "__objarray__":
        _expect_keys(obj, {"__objarray__", "shape"})
        items = _expect_type(obj["__objarray__"], list, tag)
        shape = _shape(obj["shape"])
        if math.prod(shape) != len(items):
            raise WireFormatError(f"__objarray__ has {len(items)} items for shape {shape}")
        return _as_objects(items).reshape(shape)
    if tag == "__space__":
        return _decode_space(obj)
    return _decode_batch(obj, tag)


def _decode_array(obj: dict) -> Any:
    if not set(obj) <= {"__ndarray__", "dtype", "shape", "scalar"}:
        raise WireFormatError(f"unexpected keys in __ndarray__: {sorted(obj)}")
    dtype = _safe_dtype(obj.get("dtype"))
    shape = _shape(obj.get("shape"))
    try:
        raw = base64.b64decode(_expect_type(obj["__ndarray__"], str, "__ndarray__"), validate=True)
    except ValueError:
        raise WireFormatError("__ndarray__ is not valid base64") from None
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) != expected:
        raise WireFormatError(f"__ndarray__ has {len(raw)} bytes, expected {expected} for "
                              f"shape {shape} and dtype {dtype}")
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return arr[()] if obj.get("scalar") else arr


def _decode_space(obj: dict) -> gym.Space:
    kind = obj["__space__"]
    try:
        if kind == "Box":
            _expect_keys(obj, {"__space__", "low", "high", "dtype"})
            return gym.spaces.Box(low=obj["low"], high=obj["high"], dtype=_safe_dtype(obj["dtype"]))
        if kind == "Discrete":
            _expect_keys(obj, {"__space__", "n", "start"})
            return gym.spaces.Discrete(_expect_type(obj["n"], int, "n"),
                                       start=_expect_type(obj["start"], int, "start"))
        if kind == "MultiDiscrete":
            _expect_keys(obj, {"__space__", "nvec", "start", "dtype"})
            return gym.spaces.MultiDiscrete(obj["nvec"], dtype=_safe_dtype(obj["dtype"]),
                                            start=obj["start"])
        if kind == "MultiBinary":
            _expect_keys(obj, {"__space__", "n"})
            return gym.spaces.MultiBinary(obj["n"])
        if kind == "Dict":
            _expect_keys(obj, {"__space__", "spaces"})
            return gym.spaces.Dict({k: _space(s) for k, s in obj["spaces"]})
        if kind == "Tuple":
            _expect_keys(obj, {"__space__", "spaces"})
            return gym.spaces.Tuple([_space(s) for s in obj["spaces"]])
    except WireFormatError:
        raise
    except (ValueError, TypeError, AssertionError) as e:
        raise WireFormatError(f"invalid {kind} space: {e}") from None
    raise WireFormatError(f"unknown space type {kind!r}")


def _decode_batch(obj: dict, tag: str) -> Any:
    try:
        if tag == "__sample_batch__":
            _expect_keys(obj, {tag})
            columns = _expect_type(obj[tag], dict, tag)
            if not all(isinstance(v, (np.ndarray, dict, tuple)) for v in columns.values()):
                raise WireFormatError(
                    "every SampleBatch column must be an array (or nested arrays)")
            return SampleBatch(columns)
        _expect_keys(obj, {tag, "env_steps"})
        batches = _expect_type(obj[tag], dict, tag)
        return MultiAgentBatch(batches, _expect_type(obj["env_steps"], int, "env_steps"))
    except WireFormatError:
        raise
    except (ValueError, TypeError) as e:
        raise WireFormatError(f"invalid sample batch: {e}") from None


def _safe_dtype(value: Any) -> np.dtype:
    try:
        dtype = np.dtype(_expect_type(value, str, "dtype"))
    except TypeError:
        raise WireFormatError(f"unknown dtype {value!r}") from None
    if dtype.kind not in _SAFE_DTYPE_KINDS or dtype.fields is not None:
        raise WireFormatError(f"dtype {dtype} is not allowed")
    return dtype


def _space(value: Any) -> gym.Space:
    if not isinstance(value, gym.Space):
        raise WireFormatError(f"expected an encoded space, received {type(value).__name__}")
    return value


def _expect_keys(obj: dict, keys: set) -> None:
    if set(obj) != keys:
        raise WireFormatError(f"expected keys {sorted(keys)}, received {sorted(map(str, obj))}")


def _expect_type(value: Any, type_: type, name: str) -> Any:
    if not isinstance(value, type_) or (type_ is int and isinstance(value, bool)):
        raise WireFormatError(f"{name} must be a {type_.__name__}, received {type(value).__name__}")
    return value


def _shape(value: Any) -> Tuple[int, ...]:
    if not isinstance(value, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in value):
        raise WireFormatError(f"shape must be a list of ints >= 0, received {value!r}")
    return tuple(value)


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        raise WireFormatError(f"dict key {key!r} is not hashable") from None
    return key


def _as_objects(items: list) -> np.ndarray:
    # `np.empty(n, object)[:] = items` would broadcast nested lists; assign one by one.
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out
