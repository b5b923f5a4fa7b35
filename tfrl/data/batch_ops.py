"""Array helpers behind SampleBatch: column conversion, row counts, padding, concat.

Columns are numpy arrays or nested dicts/tuples of them; these functions work on
single leaves (arrays) and name the column in their errors.
"""

from typing import Any, List, Optional

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.utils import compression


def to_array(value: list, key: str) -> Any:
    """Turns a Python list column into an array (or a nested struct of arrays).

    `infos` become a 1-D object array of dicts; lists of dicts/tuples (rows of a
    Dict/Tuple space) become a dict/tuple of stacked arrays.
    """
    if key == Columns.INFOS:
        out = np.empty(len(value), dtype=object)
        for i, item in enumerate(value):
            out[i] = item
        return out
    if value and isinstance(value[0], (dict, tuple)):
        try:
            return tree.map_structure(lambda *xs: np.stack(xs), *value)
        except (ValueError, TypeError) as e:
            raise ValueError(
                f"Column '{key}' holds nested rows whose structures or shapes differ: {e}"
            ) from e
    try:
        return np.asarray(value)
    except ValueError as e:
        raise ValueError(
            f"Column '{key}' could not be turned into an array (ragged rows?): {e}. "
            "Every row of a column must have the same shape."
        ) from e


def numpify(value: Any, key: str) -> Any:
    """Converts the lists inside a (possibly nested) column value into arrays."""
    if isinstance(value, list):
        return to_array(value, key)
    if isinstance(value, dict):
        return {k: numpify(v, key) for k, v in value.items()}
    if isinstance(value, tuple):
        return type(value)(*(numpify(v, key) for v in value)) if hasattr(value, "_fields") \
            else tuple(numpify(v, key) for v in value)
    return value


def num_rows(value: Any) -> Optional[int]:
    """Number of rows (leading dim) of a column, or None if it has no row axis."""
    if isinstance(value, np.ndarray):
        return value.shape[0] if value.ndim > 0 else None
    if isinstance(value, (dict, tuple, list)):
        for leaf in tree.flatten(value):
            n = num_rows(leaf)
            if n is not None:
                return n
        return None
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) > 0 and shape[0] is not None:
        return int(shape[0])
    return None


def zeros_like_rows(value: np.ndarray, n: int) -> np.ndarray:
    """`n` rows of zeros (None for object/str columns) shaped like rows of `value`."""
    value = np.asarray(value)
    if value.dtype == object or value.dtype.kind in "US":
        out = np.empty((n,) + value.shape[1:], dtype=object)
        out[...] = None
        return out
    return np.zeros((n,) + value.shape[1:], dtype=value.dtype)


def left_zero_pad(value: np.ndarray, n: int) -> np.ndarray:
    """`value` with `n` zero rows prepended."""
    if n <= 0:
        return value
    value = np.asarray(value)
    pad = zeros_like_rows(value, n)
    if pad.dtype != value.dtype:
        value = value.astype(object)
    return np.concatenate([pad, value])


def right_zero_pad_sequences(
    value: np.ndarray, seq_lens: np.ndarray, max_seq_len: int, key: str
) -> np.ndarray:
    """Moves sequence i to rows `[i*max_seq_len, i*max_seq_len + seq_lens[i])`."""
    value = np.asarray(value)
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    total = int(seq_lens.sum())
    if len(value) != total:
        raise ValueError(
            f"Column '{key}' has {len(value)} rows but seq_lens sums to {total}; "
            "cannot zero-pad it."
        )
    out = zeros_like_rows(value, len(seq_lens) * max_seq_len)
    seq_starts = np.cumsum(seq_lens) - seq_lens
    offsets = np.arange(total) - np.repeat(seq_starts, seq_lens)
    dest = np.repeat(np.arange(len(seq_lens)) * max_seq_len, seq_lens) + offsets
    out[dest] = value
    return out


def concat_leaves(values: List[Any], key: str, axis: int = 0) -> Any:
    """Concatenates the same column of several batches (leaf-wise if nested)."""
    if type(values[0]) is np.ndarray:
        try:
            return np.concatenate(values, axis=axis)
        except ValueError:
            pass  # e.g. a nested column in a later batch: checked below.
    first = values[0]
    for i, v in enumerate(values[1:], start=1):
        try:
            tree.assert_same_structure(first, v)
        except (ValueError, TypeError) as e:
            raise ValueError(
                f"Cannot concat data under key '{key}', b/c sub-structures under that "
                f"key don't match: batch 0 has {tree.map_structure(lambda _: '.', first)}, "
                f"batch {i} has {tree.map_structure(lambda _: '.', v)}."
            ) from e

    def _concat(*leaves):
        if any(isinstance(leaf, bytes) for leaf in leaves):
            raise ValueError(
                f"Cannot concat column '{key}': it is bulk-compressed. Call "
                "decompress_if_needed() first, or compress with bulk=False."
            )
        try:
            return np.concatenate(leaves, axis=axis)
        except ValueError as e:
            shapes = [np.shape(leaf) for leaf in leaves]
            raise ValueError(
                f"Cannot concat column '{key}': its arrays have incompatible shapes "
                f"{shapes} ({e})."
            ) from e

    return tree.map_structure(_concat, *values)


def compress_leaf(value: Any, bulk: bool) -> Any:
    """One blob for the column (`bulk`), else an object array of one blob per row."""
    if compression.is_compressed(value) or _is_row_compressed(value):
        return value
    if bulk:
        return compression.pack(value)
    out = np.empty(len(value), dtype=object)
    for i, row in enumerate(value):
        out[i] = compression.pack(row)
    return out


def decompress_leaf(value: Any) -> Any:
    """Inverse of `compress_leaf`; uncompressed values pass through."""
    if compression.is_compressed(value):
        return compression.unpack(value)
    if _is_row_compressed(value):
        return np.stack([compression.unpack(x) for x in value])
    return value


def _is_row_compressed(value: Any) -> bool:
    return (isinstance(value, np.ndarray) and value.dtype == object and len(value) > 0
            and compression.is_compressed(value[0]))
