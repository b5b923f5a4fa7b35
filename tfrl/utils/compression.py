"""Compression of numpy arrays into self-describing byte strings.

Used by `SampleBatch.compress` to shrink observation columns (e.g. image frames)
before they are shipped between workers or stored in replay buffers. A packed
value is a `bytes` object that starts with a magic prefix, so `is_compressed` can
tell packed from unpacked data without guessing; the payload is the zlib-compressed
`.npy` serialisation of the array, so dtype and shape round-trip exactly.
"""

import io
import zlib
from typing import Any

import numpy as np

_MAGIC = b"TFRLZ1:"


def is_compressed(data: Any) -> bool:
    """Whether `data` is a value produced by `pack`."""
    return isinstance(data, bytes) and data.startswith(_MAGIC)


def pack(data: Any, level: int = 1) -> bytes:
    """Packs an array (or array-like) into compressed bytes.

    Args:
        data: A numpy array or anything `np.asarray` accepts. Object arrays (e.g.
            info dicts) cannot be packed.
        level: zlib compression level, 1 (fast) to 9 (small).

    Returns:
        A `bytes` object for which `is_compressed` is True.

    Raises:
        TypeError: If `data` holds Python objects rather than numbers.
    """
    array = np.asarray(data)
    if array.dtype == object:
        raise TypeError(
            "pack() compresses numeric arrays only; received an array of dtype "
            f"object with shape {array.shape}. Exclude object columns such as "
            "'infos' from compression."
        )
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return _MAGIC + zlib.compress(buffer.getvalue(), level)


def unpack(data: bytes) -> np.ndarray:
    """Inverse of `pack`.

    Raises:
        ValueError: If `data` is not a packed value or is corrupt.
    """
    if not is_compressed(data):
        raise ValueError(
            "unpack() expects bytes produced by tfrl.utils.compression.pack(); "
            f"received {type(data).__name__} starting with {repr(data)[:32]}."
        )
    try:
        raw = zlib.decompress(data[len(_MAGIC):])
        return np.load(io.BytesIO(raw), allow_pickle=False)
    except (zlib.error, ValueError, OSError) as e:
        raise ValueError(
            f"unpack() received a corrupt packed array ({len(data)} bytes): {e}. "
            "The data was damaged after pack(); recompute or reload it."
        ) from e


def unpack_if_needed(data: Any) -> Any:
    """`unpack(data)` if `data` is packed, else `data` unchanged."""
    return unpack(data) if is_compressed(data) else data
