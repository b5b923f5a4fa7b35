"""Checkpoint directories: written atomically, read back with clear errors, no pickle.

A checkpoint is a directory with two files:

- `state.json`: the state tree (dicts, lists, tuples, numbers, strings, None; numpy
  arrays replaced by references into the `.npz`), a format version and metadata;
- `arrays.npz`: every numpy array of the state (read with `allow_pickle=False`).

Crash safety. `write_checkpoint(path, ...)` writes the new copy into `.<name>.tmp-*`
next to `path` and fsyncs its files and the folder. The rename of that folder to `path`
is the commit: a save killed before it leaves the previous checkpoint (or none), one
killed after it leaves the new one. To replace an existing checkpoint, the old folder is
first renamed to `.<name>.old-*`; were the process killed between the two renames,
`read_checkpoint(path)` reads that moved-aside copy (the previous checkpoint, complete).
A reader opens both files from one folder, so a save running meanwhile never gives it a
mix of two checkpoints. The user-visible layout is just `path`, a folder.

Cleanup. Saves to one parent folder take turns (an exclusive `flock` on the folder,
released when a process dies). Each save first removes what killed saves left in that
folder: `.<name>.tmp-*` folders (never committed) and `.<name>.old-*` copies whose
`<name>` checkpoint is complete again; when `<name>` is missing, its newest complete
moved-aside copy is renamed back to `<name>` instead of being removed. Only folders
with these names that hold nothing but checkpoint files are touched.

Example:
    >>> import tempfile, numpy as np
    >>> path = write_checkpoint(tempfile.mkdtemp() + "/ckpt", {"w": [np.ones(2)], "it": 3})
    >>> state = read_checkpoint(path)
    >>> state["it"], state["w"][0].tolist()
    (3, [1.0, 1.0])
"""

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
import uuid
import zipfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: saves to one folder are not serialized, nothing is cleaned
    fcntl = None  # type: ignore[assignment]

FORMAT_VERSION = 1
STATE_FILE = "state.json"
ARRAYS_FILE = "arrays.npz"
_FILES = (STATE_FILE, ARRAYS_FILE)
# `.<name>.tmp-<8>` (tempfile.mkdtemp) and `.<name>.old-<8>`: what a save leaves behind.
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp|old)-[a-z0-9_]{8}")
# Not on Windows: there a reader opens each file by its path.
_OPEN_BY_DIR_FD = os.open in os.supports_dir_fd
# A reader retries when a concurrent save replaced the folder it was opening.
_READ_ATTEMPTS = 20

logger = logging.getLogger(__name__)


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


@contextlib.contextmanager
def _save_turn(parent: str) -> Iterator[bool]:
    """Holds an exclusive `flock` on the folder `parent` (other saves to it wait; a
    killed process releases it); yields whether the lock is held."""
    if fcntl is None:
        yield False
        return
    fd = os.open(parent, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:  # a file system without flock: save, but clean nothing up
            locked = False
        yield locked
    finally:
        os.close(fd)  # releases the lock


def _is_complete(directory: str) -> bool:
    return all(os.path.isfile(os.path.join(directory, name)) for name in _FILES)


def _newest_first(copies: List[str]) -> List[str]:
    """The complete checkpoint folders among `copies`, newest (state file) first."""
    found = []
    for copy in copies:
        try:
            if _is_complete(copy):
                found.append((os.stat(os.path.join(copy, STATE_FILE)).st_mtime_ns, copy))
        except FileNotFoundError:  # removed meanwhile
            pass
    return [copy for _, copy in sorted(found, reverse=True)]


def _leftovers(parent: str, name: Optional[str] = None) -> List[Tuple[str, str, str]]:
    """`(checkpoint name, "tmp" or "old", folder)` of each leftover in `parent` (of the
    checkpoint `name` only, if given)."""
    found = []
    for entry in os.listdir(parent):
        match = _LEFTOVER.fullmatch(entry)
        if match and (name is None or match["name"] == name):
            found.append((match["name"], match["kind"], os.path.join(parent, entry)))
    return found


def _clean_up(parent: str) -> None:
    """Removes what killed saves left in `parent` (see the module docstring); never the
    only complete copy of a checkpoint."""
    leftovers: Dict[str, Dict[str, List[str]]] = {}
    for name, kind, folder in _leftovers(parent):
        if (os.path.isdir(folder) and not os.path.islink(folder)
                and set(os.listdir(folder)) <= set(_FILES)):
            leftovers.setdefault(name, {"tmp": [], "old": []})[kind].append(folder)
    for name, found in leftovers.items():
        target = os.path.join(parent, name)
        olds = found["old"]
        if not os.path.lexists(target):
            newest = _newest_first(olds)[:1]
            if newest:  # an overwrite was killed between its two renames: put it back
                os.rename(newest[0], target)
                _fsync(parent)
                olds.remove(newest[0])
        elif not _is_complete(target):
            olds = []  # `target` was not written by a save (those are complete): keep them
        for folder in found["tmp"] + olds:
            shutil.rmtree(folder, ignore_errors=True)


def write_checkpoint(path: str, state: Any, metadata: Optional[Dict[str, Any]] = None) -> str:
    """Writes `state` (see `flatten_state`) to the directory `path`, atomically.

    At every point of the save, `read_checkpoint(path)` reads either the checkpoint that
    was at `path` before (or raises FileNotFoundError if there was none) or the new one.
    Leftovers of killed saves in `path`'s parent are removed first.

    Returns:
        `path`, absolute.
    """
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    tree, arrays = flatten_state(state)
    with _save_turn(parent) as locked:
        if locked:
            try:
                _clean_up(parent)
            except OSError as e:  # the save matters more than the tidying
                logger.warning("Could not remove the leftovers of killed saves in %r (%s: "
                               "%s); saving anyway.", parent, type(e).__name__, e)
        tmp = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
        old = None
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
            if os.path.lexists(path):
                old = os.path.join(parent, f".{name}.old-{uuid.uuid4().hex[:8]}")
                os.rename(path, old)
            os.rename(tmp, path)  # the commit
            _fsync(parent)
        except BaseException:
            if old is not None and not os.path.lexists(path):
                with contextlib.suppress(OSError):
                    os.rename(old, path)  # put the previous checkpoint back
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return path


def resolve_checkpoint(path: str) -> str:
    """The folder that holds the checkpoint saved at `path`: `path` itself or, while a
    killed overwrite has left `path` missing, the previous copy it moved aside (`path`
    if there is neither)."""
    if os.path.isdir(path):
        return path
    parent, name = os.path.split(os.path.abspath(path))
    if not os.path.isdir(parent):
        return path
    copies = _newest_first([f for _, kind, f in _leftovers(parent, name) if kind == "old"])
    return copies[0] if copies else path


def _leftovers_of(path: str) -> bool:
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.isdir(parent) and bool(_leftovers(parent, name))


def _open_files(directory: str, aside: bool) -> Optional[Dict[str, int]]:
    """File descriptors of the checkpoint files, both opened from the same folder (where
    `os.open` takes `dir_fd`, i.e. not on Windows); None if `directory` was replaced or
    removed meanwhile (by a concurrent save), or lacks a file while it is a moved-aside
    copy (`aside`: those are complete until a save removes them).

    Raises:
        CheckpointError: If a file is missing.
    """
    by_fd = _OPEN_BY_DIR_FD
    if not os.path.isdir(directory):
        return None
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY) if by_fd else None
    except (FileNotFoundError, NotADirectoryError):
        return None
    fds: Dict[str, int] = {}
    try:
        for name in _FILES:
            try:
                fds[name] = os.open(name if by_fd else os.path.join(directory, name),
                                    os.O_RDONLY | getattr(os, "O_BINARY", 0), dir_fd=dir_fd)
            except FileNotFoundError:
                pass
        if len(fds) == len(_FILES):
            return fds
        for fd in fds.values():
            os.close(fd)
        if aside:
            return None
        if dir_fd is not None:
            try:
                if not os.path.samestat(os.fstat(dir_fd), os.stat(directory)):
                    return None
            except FileNotFoundError:
                return None
        missing = next(name for name in _FILES if name not in fds)
        raise CheckpointError(
            f"{directory!r} is not a complete tfrl checkpoint: {missing} is missing (it has "
            f"{sorted(os.listdir(directory))}).")
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def read_checkpoint(path: str, with_metadata: bool = False) -> Any:
    """Reads a `write_checkpoint` directory; returns the state (and metadata if asked).

    If a save was killed while replacing `path`, this reads the previous checkpoint that
    save had moved aside (see the module docstring).

    Raises:
        FileNotFoundError: If `path` does not exist.
        CheckpointError: If a file is missing or corrupt, or of another format version.
    """
    fds = None
    for _ in range(_READ_ATTEMPTS):
        directory = resolve_checkpoint(path)
        fds = _open_files(directory, aside=directory != path)
        # Try again if a concurrent save replaced or removed `directory` meanwhile: there is
        # no checkpoint only if neither `path` nor any copy or temporary of it exists.
        if fds is not None or not (os.path.lexists(path) or _leftovers_of(path)):
            break
    if fds is None:
        raise FileNotFoundError(
            f"No checkpoint directory at {path!r}. Pass the path that save() returned.")
    if directory != path:
        logger.warning("%r is missing (a save replacing it was interrupted); reading the "
                       "previous checkpoint it moved aside, %r.", path, directory)
    state_file, arrays_file = (os.path.join(directory, name) for name in _FILES)
    with open(fds[STATE_FILE], "rb") as state_f, open(fds[ARRAYS_FILE], "rb") as arrays_f:
        try:
            doc = json.load(state_f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CheckpointError(f"{state_file!r} is corrupt (not valid JSON: {e}).") from None
        if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
            got = doc.get("format_version") if isinstance(doc, dict) else type(doc).__name__
            raise CheckpointError(
                f"{state_file!r} has format version {got!r}; this tfrl reads version "
                f"{FORMAT_VERSION}.")
        try:
            with np.load(arrays_f, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
            raise CheckpointError(
                f"{arrays_file!r} is corrupt ({type(e).__name__}: {e}).") from None
    state = unflatten_state(doc["state"], arrays)
    return (state, doc.get("metadata", {})) if with_metadata else state
