"""Checkpoint directories: written atomically, read back with clear errors, no pickle.

A checkpoint is a directory with two files:

- `state.json`: the state tree (dicts, lists, tuples, numbers, strings, None; numpy
  arrays replaced by references into the `.npz`), a format version and metadata;
- `arrays.npz`: every numpy array of the state (read with `allow_pickle=False`).

`write_checkpoint` writes into a temporary directory next to the target, fsyncs the
files and the directory, then renames it into place; a crash at any point leaves an
existing checkpoint at the target intact (an earlier one being replaced is moved aside
first and removed only after the new one is in place).

Example:
    >>> import tempfile, numpy as np
    >>> path = write_checkpoint(tempfile.mkdtemp() + "/ckpt", {"w": [np.ones(2)], "it": 3})
    >>> state = read_checkpoint(path)
    >>> state["it"], state["w"][0].tolist()
    (3, [1.0, 1.0])
"""

import json
import os
import shutil
import tempfile
import zipfile
from typing import Any, Dict, Optional, Tuple

import numpy as np

FORMAT_VERSION = 1
STATE_FILE = "state.json"
ARRAYS_FILE = "arrays.npz"


class CheckpointError(ValueError):
    """A checkpoint directory is missing files, corrupt or of another format."""


def flatten_state(state: Any) -> Tuple[Any, Dict[str, np.ndarray]]:
    """`(json_tree, arrays)`: `state` with numpy arrays moved out into `arrays`.

    Raises:
        TypeError: For a value that is not JSON-representable or a numpy array (the
            message names its path in the state).
    """
    arrays: Dict[str, np.ndarray] = {}

    def walk(value, path):
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise TypeError(f"Checkpoint state at {path} is an object array; only numeric "
                                "arrays can be saved.")
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {"__ndarray__": key}
        if isinstance(value, np.generic):
            return walk(value.item(), path)
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, tuple):
            return {"__tuple__": [walk(v, f"{path}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value) and "__ndarray__" not in value:
                return {k: walk(v, f"{path}.{k}") for k, v in value.items()}
            return {"__items__": [[walk(k, f"{path}<key>"), walk(v, f"{path}[{k!r}]")]
                                  for k, v in value.items()]}
        raise TypeError(
            f"Checkpoint state at {path} has type {type(value).__name__}; checkpoints hold "
            "numbers, strings, None, lists, tuples, dicts and numpy arrays only."
        )

    return walk(state, "state"), arrays


def unflatten_state(tree: Any, arrays: Dict[str, np.ndarray]) -> Any:
    """Inverse of `flatten_state`."""
    if isinstance(tree, list):
        return [unflatten_state(v, arrays) for v in tree]
    if isinstance(tree, dict):
        if "__ndarray__" in tree:
            key = tree["__ndarray__"]
            if key not in arrays:
                raise CheckpointError(f"Checkpoint refers to array {key!r}, which "
                                      f"{ARRAYS_FILE} lacks.")
            return arrays[key]
        if "__tuple__" in tree:
            return tuple(unflatten_state(v, arrays) for v in tree["__tuple__"])
        if "__items__" in tree:
            return {_hashable(unflatten_state(k, arrays)): unflatten_state(v, arrays)
                    for k, v in tree["__items__"]}
        return {k: unflatten_state(v, arrays) for k, v in tree.items()}
    return tree


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, (list, tuple)) else key


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(path: str, state: Any, metadata: Optional[Dict[str, Any]] = None) -> str:
    """Writes `state` (see `flatten_state`) to the directory `path`, atomically.

    Returns:
        `path`, absolute.
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tree, arrays = flatten_state(state)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        with open(os.path.join(tmp, ARRAYS_FILE), "wb") as f:
            # numpy's stub fears a key named like savez's `allow_pickle` keyword; the
            # keys are "a0", "a1", ... (flatten_state).
            np.savez(f, **arrays)  # type: ignore[arg-type]
            f.flush()
            os.fsync(f.fileno())
        with open(os.path.join(tmp, STATE_FILE), "w") as f:
            json.dump({"format_version": FORMAT_VERSION, "metadata": metadata or {},
                       "state": tree}, f)
            f.flush()
            os.fsync(f.fileno())
        _fsync(tmp)
        old = None
        if os.path.exists(path):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-", dir=parent)
            os.rmdir(old)
            os.rename(path, old)
        os.rename(tmp, path)
        _fsync(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path


def read_checkpoint(path: str, with_metadata: bool = False) -> Any:
    """Reads a `write_checkpoint` directory; returns the state (and metadata if asked).

    Raises:
        FileNotFoundError: If `path` does not exist.
        CheckpointError: If a file is missing or corrupt, or of another format version.
    """
    if not os.path.isdir(path):
        raise FileNotFoundError(
            f"No checkpoint directory at {path!r}. Pass the path that save() returned.")
    state_file, arrays_file = os.path.join(path, STATE_FILE), os.path.join(path, ARRAYS_FILE)
    for name in (state_file, arrays_file):
        if not os.path.isfile(name):
            raise CheckpointError(
                f"{path!r} is not a complete tfrl checkpoint: {os.path.basename(name)} is "
                f"missing (it has {sorted(os.listdir(path))}).")
    try:
        with open(state_file) as f:
            doc = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{state_file!r} is corrupt (not valid JSON: {e}).") from None
    if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
        got = doc.get("format_version") if isinstance(doc, dict) else type(doc).__name__
        raise CheckpointError(
            f"{state_file!r} has format version {got!r}; this tfrl reads version "
            f"{FORMAT_VERSION}.")
    try:
        with np.load(arrays_file, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise CheckpointError(f"{arrays_file!r} is corrupt ({type(e).__name__}: {e}).") from None
    state = unflatten_state(doc["state"], arrays)
    return (state, doc.get("metadata", {})) if with_metadata else state
