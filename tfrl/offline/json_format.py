"""RLlib's JSON-lines experience format: one batch per line, columns as JSON values.

A line is a JSON object. A `SampleBatch` is `{"type": "SampleBatch", <column>: <value>,
...}`; a `MultiAgentBatch` is `{"type": "MultiAgentBatch", "count": <env steps>,
"policy_batches": {<policy id>: {<column>: <value>, ...}}}` (RLlib's
`ray.rllib.offline.json_writer._to_json_dict`).

A column is written either as nested JSON lists (`ndarray.tolist()`), or, for the
columns named in `compress_columns`, as one compressed string:

- with the `lz4` package installed, RLlib's encoding exactly: base64 of the LZ4 frame of
  the pickled array (`ray.rllib.utils.compression.pack`); files are readable by RLlib;
- without it, base64 of `tfrl.utils.compression.pack` (zlib of the `.npy` bytes, no
  pickle); tfrl reads these, RLlib does not.

Values: the columns that reach the learner from outside (`CHECKED_COLUMNS`: obs,
new_obs, actions, prev_actions, rewards, prev_rewards) must hold finite numbers that fit
the dtype they are stored in; decoding raises a `ValueError` naming the column, row and
value otherwise (NaN, inf, or a JSON 1e39 bound for float32).

Reading decodes both; LZ4 payloads are unpickled by an unpickler that builds numpy arrays
and plain containers only (no other classes), so a file cannot run code on load.

Dtypes: compressed columns keep dtype and shape exactly. JSON lists carry no dtype, so
`decode_batch` restores it: for the standard columns from `COLUMN_DTYPES` (what tfrl's
samplers produce: float32 rewards, bool flags, int64 ids), for `obs`/`new_obs`/`actions`
from the policy's spaces when `spaces` are given, otherwise floats become float32,
integers int64 and booleans bool. A float64 column therefore comes back as float32 unless
it is compressed (or a space says float64).

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> b = SampleBatch(obs=np.ones((2, 3), np.float32), rewards=np.array([1., 0.], np.float32))
    >>> line = encode_batch(b, compress_columns=["obs"])
    >>> back = decode_batch(line)
    >>> back["obs"].dtype, back["obs"].shape, back["rewards"].tolist()
    (dtype('float32'), (2, 3), [1.0, 0.0])
"""

import base64
import binascii
import io
import json
import pickle
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data.batch_ops import numpify
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.utils import compression

try:  # RLlib's compression (optional: `pip install lz4`)
    import lz4.frame as _lz4_frame
except ImportError:  # pragma: no cover - depends on the environment
    _lz4_frame = None

_LZ4_MAGIC = b"\x04\x22\x4d\x18"

# Standard columns of JSON-list data and the dtype tfrl's samplers give them.
COLUMN_DTYPES: Dict[str, Any] = {
    Columns.REWARDS: np.float32, Columns.PREV_REWARDS: np.float32,
    Columns.TERMINATEDS: np.bool_, Columns.TRUNCATEDS: np.bool_, Columns.DONES: np.bool_,
    Columns.T: np.int64, Columns.EPS_ID: np.int64, Columns.UNROLL_ID: np.int64,
    Columns.AGENT_INDEX: np.int64, Columns.ENV_ID: np.int64,
    Columns.ACTION_PROB: np.float32, Columns.ACTION_LOGP: np.float32,
    Columns.VF_PREDS: np.float32, Columns.ADVANTAGES: np.float32,
    Columns.VALUE_TARGETS: np.float32, Columns.ACTION_DIST_INPUTS: np.float32,
    Columns.SEQ_LENS: np.int32,
}
_OBS_COLUMNS = (Columns.OBS, Columns.NEXT_OBS)
_ACTION_COLUMNS = (Columns.ACTIONS, Columns.PREV_ACTIONS)
# Columns that come from the env or the logged behaviour and reach the learner: their
# numbers must be finite and fit the dtype they are stored in (a JSON 1e39 is a finite
# float64 but inf in float32).
CHECKED_COLUMNS = _OBS_COLUMNS + _ACTION_COLUMNS + (Columns.REWARDS, Columns.PREV_REWARDS)


class JsonRecordError(ValueError):
    """A line of an experience file that cannot be turned into a batch.

    The message names the file and the 1-based line number.
    """


def lz4_available() -> bool:
    """Whether compressed columns are written in RLlib's LZ4 encoding."""
    return _lz4_frame is not None


# ------------------------------------------------------------------ compression
def pack_column(value: Any) -> Any:
    """One compressed column as an ASCII string (see the module docstring); without lz4,
    a nested column (dict/tuple of arrays) becomes the same structure of strings."""
    if _lz4_frame is not None:
        raw = _lz4_frame.compress(pickle.dumps(value, protocol=4))
        return base64.b64encode(raw).decode("ascii")
    return tree.map_structure(
        lambda leaf: base64.b64encode(compression.pack(leaf)).decode("ascii"), value)


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays, scalars and builtin containers; refuses other classes."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"),
        ("collections", "OrderedDict"), ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(
                f"compressed column refers to {module}.{name}; only numpy arrays and plain "
                "containers are loaded from experience files.")
        return super().find_class(module, name)


def unpack_column(text: str) -> Any:
    """Inverse of `pack_column` (reads RLlib's LZ4 encoding and tfrl's zlib one).

    Raises:
        ValueError: If `text` is not a compressed column (or is damaged).
        ImportError: For RLlib's LZ4 encoding without the `lz4` package.
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"not a base64 string ({e})") from None
    if compression.is_compressed(raw):
        return compression.unpack(raw)
    if raw.startswith(_LZ4_MAGIC):
        if _lz4_frame is None:
            raise ImportError("this column is LZ4-compressed (RLlib's encoding); "
                              "pip install lz4 to read it.")
        try:
            return _ArrayUnpickler(io.BytesIO(_lz4_frame.decompress(raw))).load()
        except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError) as e:
            raise ValueError(f"damaged LZ4 column: {e}") from None
    raise ValueError("a string column that is neither tfrl's nor RLlib's compressed encoding")


# ------------------------------------------------------------------ encoding
def _is_numeric(value: Any) -> bool:
    return all(isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf"
               for leaf in tree.flatten(value))


def _jsonable(value: Any, compress: bool) -> Any:
    if compress and _is_numeric(value):
        return pack_column(value)
    return tree.map_structure(_plain, value)


def _plain(leaf: Any) -> Any:
    if isinstance(leaf, np.ndarray):
        return leaf.tolist()
    if isinstance(leaf, np.generic):
        return leaf.item()
    return leaf


def _columns_dict(batch: SampleBatch, compress_columns: Sequence[str]) -> Dict[str, Any]:
    batch = batch.copy(shallow=True).decompress_if_needed(list(batch.keys()))
    return {k: _jsonable(v, k in compress_columns) for k, v in dict.items(batch)}


def to_json_dict(batch: Any, compress_columns: Sequence[str] = ()) -> Dict[str, Any]:
    """The JSON object of one batch (RLlib's `_to_json_dict`)."""
    if isinstance(batch, MultiAgentBatch):
        return {"type": "MultiAgentBatch", "count": int(batch.count),
                "policy_batches": {str(pid): _columns_dict(b, compress_columns)
                                   for pid, b in batch.policy_batches.items()}}
    if isinstance(batch, SampleBatch):
        return {"type": "SampleBatch", **_columns_dict(batch, compress_columns)}
    raise TypeError(f"JsonWriter writes SampleBatch or MultiAgentBatch; received "
                    f"{type(batch).__name__}.")


def _default_json(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"value of type {type(value).__name__} is not JSON serializable")


def encode_batch(batch: Any, compress_columns: Sequence[str] = ()) -> str:
    """One JSON line (without the newline) for `batch`."""
    return json.dumps(to_json_dict(batch, compress_columns), default=_default_json)


# ------------------------------------------------------------------ decoding
Spaces = Optional[Mapping[Any, Tuple[Any, Any]]]  # policy id -> (obs space, action space)


def _space_dtype(space: Any) -> Any:
    dtype = getattr(space, "dtype", None)
    return None if dtype is None or isinstance(space, dict) else dtype


def check_column_values(column: str, value: np.ndarray, dtype: Any = None) -> None:
    """Raises ValueError if a `CHECKED_COLUMNS` column holds NaN or inf, or (`dtype` a
    float dtype narrower than the value's) a number that overflows `dtype`; the message
    names the column, the row and the value.

    Example:
        >>> check_column_values("rewards", np.array([0.5, 1e39]), np.float32)
        Traceback (most recent call last):
        ...
        ValueError: column 'rewards', row 1: 1e+39 overflows float32 (largest 3.4028235e+38), the dtype it is stored in; ...
    """
    if column not in CHECKED_COLUMNS:
        return
    if value.dtype.kind != "f":
        _check_int_column(column, value, dtype)
        return
    finite = np.isfinite(value)
    bad = ~finite
    limit = None
    if dtype is not None and np.dtype(dtype).kind == "f" and (
            np.dtype(dtype).itemsize < value.dtype.itemsize):
        limit = float(np.finfo(dtype).max)
        bad |= finite & (np.abs(value) > limit)
    if not bad.any():
        return
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    number = float(value[index])
    row = index[0] if index else 0
    fix = ("; observations, actions and rewards must be finite numbers that fit their "
           "dtype: repair or remove the record")
    if np.isfinite(number):
        raise ValueError(f"column {column!r}, row {row}: {number!r} overflows "
                         f"{np.dtype(dtype).name} (largest {limit:.8g}), the dtype it is "
                         f"stored in{fix}")
    raise ValueError(f"column {column!r}, row {row}: {number!r} is not a finite number{fix}")


def _check_int_column(column: str, value: np.ndarray, dtype: Any) -> None:
    """Integers of a `CHECKED_COLUMNS` column must fit int64 (JSON holds any int; numpy
    keeps those beyond int64 as Python objects) and the integer `dtype` they are stored
    in (2**40 would wrap around in int32)."""
    fix = ("; observations, actions and rewards must be numbers that fit their dtype: "
           "repair or remove the record")
    if value.dtype == object:
        info = np.iinfo(np.int64)
        for index, item in np.ndenumerate(value):
            if isinstance(item, int) and not isinstance(item, bool) and not (
                    info.min <= item <= info.max):
                text = repr(item) if item.bit_length() <= 256 else f"an int of {item.bit_length()} bits"
                raise ValueError(f"column {column!r}, row {index[0] if index else 0}: {text} "
                                 f"is outside the int64 range [{info.min}, {info.max}]{fix}")
        return
    if value.dtype.kind not in "iu" or dtype is None or np.dtype(dtype).kind not in "iu":
        return
    info = np.iinfo(dtype)
    bad = (value < info.min) | (value > info.max)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"column {column!r}, row {index[0] if index else 0}: "
                         f"{value[index].item()!r} is outside the {np.dtype(dtype).name} range "
                         f"[{info.min}, {info.max}], the dtype it is stored in{fix}")


def _check_discrete_column(column: str, value: np.ndarray, space: Any) -> None:
    """Values of an obs/action column with a Discrete or MultiDiscrete space must be
    elements of it (an index outside the space has no meaning to the learner)."""
    if isinstance(space, gym.spaces.Discrete):
        low, high, expected = space.start, space.start + space.n, f"in [{space.start}, " \
            f"{space.start + space.n})"
    elif isinstance(space, gym.spaces.MultiDiscrete):
        low, high, expected = space.start, space.start + space.nvec, "in [start, start + nvec)"
    else:
        return
    if value.dtype.kind not in "iuf" or value.shape[1:] != tuple(space.shape):
        return
    bad = ~((value >= low) & (value < high))
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"column {column!r}, row {index[0]}: {value[index].item()!r} is not "
                         f"{expected} (the space is {space}); repair or remove the record")


def _cast(column: str, value: Any, spaces: Optional[Tuple[Any, Any]]) -> Any:
    """Restores the dtype of a column read from JSON lists (checking its values)."""
    if column == Columns.INFOS or not isinstance(value, np.ndarray):
        return value
    target = COLUMN_DTYPES.get(column)
    if target is None and spaces is not None:
        if column in _OBS_COLUMNS:
            target = _space_dtype(spaces[0])
        elif column in _ACTION_COLUMNS:
            target = _space_dtype(spaces[1])
    if target is None:
        kind = value.dtype.kind
        target = {"f": np.float32, "i": np.int64, "u": np.int64, "b": np.bool_}.get(kind)
    check_column_values(column, value, target)
    if spaces is not None and column in _OBS_COLUMNS + _ACTION_COLUMNS:
        _check_discrete_column(column, value, spaces[0 if column in _OBS_COLUMNS else 1])
    return value if target is None or value.dtype == target else value.astype(target)


def _decode_value(key: str, value: Any, spaces: Optional[Tuple[Any, Any]]) -> Any:
    if isinstance(value, str):
        column = unpack_column(value)
        for leaf in tree.flatten(column):
            if isinstance(leaf, np.ndarray):
                check_column_values(key, leaf)
        return column
    if isinstance(value, dict):
        return {k: _decode_value(key, v, spaces) for k, v in value.items()}
    return tree.map_structure(lambda v: _cast(key, v, spaces), numpify(value, key))


def _decode_columns(data: Mapping[str, Any], spaces: Optional[Tuple[Any, Any]]) -> SampleBatch:
    columns = {key: _decode_value(key, value, spaces) for key, value in data.items()}
    if Columns.DONES in columns and Columns.TERMINATEDS not in columns:
        columns[Columns.TERMINATEDS] = columns.pop(Columns.DONES)  # RLlib's adjustment
    return SampleBatch(columns)


def from_json_dict(data: Any, spaces: Spaces = None) -> Any:
    """A SampleBatch or MultiAgentBatch from one decoded JSON object.

    Args:
        data: The JSON object of one line.
        spaces: Policy id -> (observation space, action space), to restore the dtypes of
            `obs`/`new_obs`/`actions` (a single-agent batch uses the only entry).

    Raises:
        ValueError: For a missing or unknown `type`, or columns that do not decode.
    """
    if not isinstance(data, dict):
        raise ValueError(f"a line must hold a JSON object; it holds a {type(data).__name__}")
    data = dict(data)
    kind = data.pop("type", None)
    if kind == "SampleBatch":
        space = next(iter(spaces.values())) if spaces and len(spaces) == 1 else None
        return _decode_columns(data, space)
    if kind == "MultiAgentBatch":
        if "policy_batches" not in data or "count" not in data:
            raise ValueError("a MultiAgentBatch record needs 'policy_batches' and 'count'")
        batches = {pid: _decode_columns(cols, (spaces or {}).get(pid))
                   for pid, cols in data["policy_batches"].items()}
        return MultiAgentBatch(batches, int(data["count"]))
    if kind is None:
        raise ValueError("the record has no 'type' field (expected 'SampleBatch' or "
                         "'MultiAgentBatch')")
    raise ValueError(f"unknown record type {kind!r} (expected 'SampleBatch' or "
                     "'MultiAgentBatch')")


def decode_batch(line: str, spaces: Spaces = None) -> Any:
    """`from_json_dict(json.loads(line), spaces)`."""
    return from_json_dict(json.loads(line), spaces)
