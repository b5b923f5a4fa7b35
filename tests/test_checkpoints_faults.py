"""Crash safety of checkpoint saves: a crash injected at every file operation of a save
leaves the old or the new checkpoint, readable; the next save cleans up; `kill -9` of a
process saving in a loop; concurrent readers and savers; checkpoints and leftovers of
the earlier writer (same layout) stay readable."""

import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tfrl
from tfrl.algorithms import checkpoints
from tfrl.algorithms.checkpoints import (CheckpointError, read_checkpoint, resolve_checkpoint,
                                         write_checkpoint)
from tfrl.cli import commands

OLD = {"w": [np.arange(6, dtype=np.float32).reshape(2, 3)], "it": 1, "name": "old"}
NEW = {"w": [np.full(4, 2, np.int64), np.zeros(2)], "it": 2, "extra": (1, "x"),
       "nested": {"lr": 1e-3, "keys": list(range(30))}}
THIRD = {"w": [], "it": 3}


def same(a, b):
    """Exact equality of checkpoint states (array dtypes and values included)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class Crash(BaseException):
    """The saving process died here (a BaseException, like a kill: nothing catches it)."""


class Faults:
    """Counts the file operations (creating, writing, fsyncing, renaming, removing) of the
    saves run inside `active()`. With `crash_at=k`, the k-th one crashes (a write first
    writes half its data), and so does every later one: a dead process does nothing
    more, so no cleanup handler of the writer can run."""

    OS_OPS = ("mkdir", "open", "fsync", "rename", "replace", "rmdir", "unlink")

    def __init__(self, crash_at=None):
        self.crash_at = crash_at
        self.ops = []

    def op(self, name, partial=None):
        self.ops.append(name)
        if self.crash_at is not None and len(self.ops) >= self.crash_at:
            if partial is not None and len(self.ops) == self.crash_at:
                partial()
            raise Crash(f"injected crash at operation {len(self.ops)} ({name})")

    @contextlib.contextmanager
    def active(self):
        originals = {name: getattr(os, name) for name in self.OS_OPS}

        def wrap(name, fn):
            def wrapped(*args, **kwargs):
                self.op(name)
                return fn(*args, **kwargs)
            return wrapped

        def opener(*args, **kwargs):
            self.op("create")
            return _File(open(*args, **kwargs), self)

        for name, fn in originals.items():
            setattr(os, name, wrap(name, fn))
        checkpoints.open = opener
        try:
            yield self
        finally:
            for name, fn in originals.items():
                setattr(os, name, fn)
            del checkpoints.open


class _File:
    """A file whose writes go straight to the OS (nothing is left in a buffer to be
    flushed after a crash), each counted by `Faults`."""

    def __init__(self, f, faults):
        self._f, self._faults = f, faults

    def write(self, data):
        def half():
            self._f.write(data[:len(data) // 2])
            self._f.flush()

        self._faults.op("write", partial=half)
        n = self._f.write(data)
        self._f.flush()
        return n

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def outcome(path):
    """What a reader gets at `path`: "none" (no checkpoint), "old" or "new"."""
    try:
        state = read_checkpoint(path)
    except FileNotFoundError:
        assert not os.path.exists(resolve_checkpoint(path))
        return "none"
    # `tfrl evaluate --checkpoint` finds it too.
    assert os.path.isfile(os.path.join(resolve_checkpoint(path), checkpoints.STATE_FILE))
    for name, expected in (("old", OLD), ("new", NEW)):
        if same(state, expected):
            return name
    raise AssertionError(f"read something else: {state}")


def copy_of(folder, state, metadata=None):
    """A complete checkpoint at `folder`, written elsewhere and moved there (a save to
    `folder`'s parent would already tidy it up)."""
    staged = write_checkpoint(os.path.join(os.path.dirname(folder), "staging", "c"), state,
                              metadata)
    os.rename(staged, folder)
    os.rmdir(os.path.join(os.path.dirname(folder), "staging"))


def fake_leftover(folder, files=("state.json",)):
    """A folder as a killed save leaves it (partial files)."""
    os.mkdir(folder)
    for name in files:
        with open(os.path.join(folder, name), "w") as f:
            f.write('{"format_ver')


def setup_new(parent):
    return []


def setup_overwrite(parent):
    write_checkpoint(parent / "ckpt", OLD)
    return []


def setup_after_killed_overwrite(parent):
    # What a save killed between its two renames leaves (this writer's and the earlier
    # one's names alike): the previous checkpoint moved aside, the path missing, and the
    # new copy not yet renamed in.
    copy_of(parent / ".ckpt.old-ab12cd34", OLD)
    fake_leftover(parent / ".ckpt.tmp-zz_9yy8x")
    return []


def setup_leftovers_of_another(parent):
    # Another checkpoint in the same folder with the leftovers of a killed overwrite
    # (a copy moved aside, not yet removed) and of a killed save of it.
    write_checkpoint(parent / "ckpt", OLD)
    write_checkpoint(parent / "other", THIRD)
    copy_of(parent / ".other.old-00000000", NEW)
    fake_leftover(parent / ".other.tmp-11111111", ("state.json", "arrays.npz"))
    return ["other"]


SETUPS = [setup_new, setup_overwrite, setup_after_killed_overwrite, setup_leftovers_of_another]


def count_ops(tmp_path, setup):
    parent = tmp_path / "count"
    parent.mkdir()
    setup(parent)
    with Faults().active() as faults:
        write_checkpoint(parent / "ckpt", NEW)
    return faults.ops


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: s.__name__[6:])
def test_a_crash_at_every_file_operation_leaves_the_old_or_the_new_checkpoint(
        tmp_path, setup, monkeypatch):
    # fsync is still counted (and crashed at), but not run: it only matters for power
    # losses, and these are process crashes; the test runs ~10x faster.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    ops = count_ops(tmp_path, setup)
    commit = next(i for i in range(len(ops), 0, -1) if ops[i - 1] == "rename")
    assert {"create", "write", "fsync", "rename", "mkdir"} <= set(ops) and commit > 10
    before = "none" if setup is setup_new else "old"
    seen = []
    for k in range(1, len(ops) + 2):  # crash before operation k; k = len(ops) + 1: none
        parent = tmp_path / f"k{k}"
        parent.mkdir()
        others = setup(parent)
        path = str(parent / "ckpt")
        with Faults(crash_at=k).active():
            try:
                write_checkpoint(path, NEW)
            except Crash:
                assert k <= len(ops)
        seen.append(outcome(path))
        for other in others:
            assert same(read_checkpoint(str(parent / other)), THIRD)
        # The next save succeeds and leaves nothing but the checkpoints behind.
        write_checkpoint(path, THIRD)
        assert same(read_checkpoint(path), THIRD)
        assert sorted(os.listdir(parent)) == sorted(["ckpt", *others]), k
    # The old checkpoint until the rename that commits the new one, the new one after it.
    assert seen == [before] * commit + ["new"] * (len(ops) + 1 - commit), list(zip(ops, seen))


def test_an_interrupted_overwrite_puts_the_old_checkpoint_back(tmp_path, monkeypatch):
    path = write_checkpoint(str(tmp_path / "ckpt"), OLD)
    rename = os.rename

    def ctrl_c_at_commit(src, dst):
        if os.path.basename(src).startswith(".ckpt.tmp-"):
            raise KeyboardInterrupt
        return rename(src, dst)

    monkeypatch.setattr(os, "rename", ctrl_c_at_commit)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(path, NEW)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["ckpt"] and same(read_checkpoint(path), OLD)


def test_reading_the_moved_aside_copy_says_so(tmp_path, caplog):
    copy_of(tmp_path / ".ckpt.old-ab12cd34", OLD)
    with caplog.at_level(logging.WARNING, logger=checkpoints.__name__):
        assert same(read_checkpoint(str(tmp_path / "ckpt")), OLD)
    assert caplog.messages == [
        f"'{tmp_path}/ckpt' is missing (a save replacing it was interrupted); reading the "
        f"previous checkpoint it moved aside, '{tmp_path}/.ckpt.old-ab12cd34'."]


def test_the_newest_complete_moved_aside_copy_is_read_and_put_back(tmp_path):
    copy_of(tmp_path / ".ckpt.old-aaaaaaaa", OLD)
    copy_of(tmp_path / ".ckpt.old-bbbbbbbb", NEW)
    fake_leftover(tmp_path / ".ckpt.old-cccccccc")  # partly removed: not complete
    os.utime(tmp_path / ".ckpt.old-aaaaaaaa" / "state.json", (1, 1))
    assert outcome(str(tmp_path / "ckpt")) == "new"
    write_checkpoint(str(tmp_path / "another"), THIRD)  # any save to the folder repairs it
    assert sorted(os.listdir(tmp_path)) == ["another", "ckpt"]
    assert same(read_checkpoint(str(tmp_path / "ckpt")), NEW)


def test_cleanup_keeps_what_is_not_a_leftover_of_a_save(tmp_path):
    write_checkpoint(str(tmp_path / "ckpt"), OLD)
    keep = [".ckpt.tmp-notes123", ".ckpt.tmp-short", "ckpt.tmp-abcdefgh", ".ckpt.old-abcdefgh",
            ".other.old-abcdefgh", "notes.txt"]
    fake_leftover(tmp_path / ".ckpt.tmp-notes123")  # holds a user's file:
    with open(tmp_path / ".ckpt.tmp-notes123" / "notes.txt", "w") as f:
        f.write("mine")
    fake_leftover(tmp_path / ".ckpt.tmp-short")  # not the name a save gives
    fake_leftover(tmp_path / "ckpt.tmp-abcdefgh")
    with open(tmp_path / "notes.txt", "w") as f:
        f.write("mine")
    # `other` is not a complete checkpoint (not written by a save), so its copy stays,
    # as does `ckpt`'s moved-aside copy when `ckpt` is broken.
    os.mkdir(tmp_path / "other")
    copy_of(tmp_path / ".other.old-abcdefgh", OLD)
    copy_of(tmp_path / ".ckpt.old-abcdefgh", OLD)
    os.remove(tmp_path / "ckpt" / "arrays.npz")
    write_checkpoint(str(tmp_path / "new"), THIRD)
    assert sorted(os.listdir(tmp_path)) == sorted(keep + ["ckpt", "new", "other"])


def test_a_checkpoint_of_the_earlier_writer_is_read_and_overwritten(tmp_path):
    # The files as the earlier write_checkpoint wrote them (the format is unchanged).
    path = tmp_path / "checkpoint_000003"
    os.mkdir(path)
    np.savez(path / "arrays.npz", a0=np.arange(3, dtype=np.float32))
    with open(path / "state.json", "w") as f:
        json.dump({"format_version": 1, "metadata": {"algorithm": "PPO"},
                   "state": {"w": [{"__ndarray__": "a0"}], "pair": {"__tuple__": [1, None]}}},
                  f)
    state, meta = read_checkpoint(str(path), with_metadata=True)
    assert meta == {"algorithm": "PPO"}
    assert same(state, {"w": [np.arange(3, dtype=np.float32)], "pair": (1, None)})
    write_checkpoint(str(path), NEW)
    assert same(read_checkpoint(str(path)), NEW) and os.listdir(tmp_path) == [path.name]


@pytest.mark.parametrize("damage,file,match", [
    (lambda p: p.write_bytes(p.read_bytes()[:len(p.read_bytes()) // 2]), "arrays.npz",
     "is corrupt \\(BadZipFile"),
    (lambda p: p.write_text(p.read_text()[:-1]), "state.json", "is corrupt \\(not valid JSON"),
    (lambda p: p.write_text('{"format_version": 2, "state": {}}'), "state.json",
     "has format version 2; this tfrl reads version 1"),
])
def test_a_corrupt_checkpoint_names_the_file(tmp_path, damage, file, match):
    path = write_checkpoint(str(tmp_path / "ckpt"), NEW)
    damage(tmp_path / "ckpt" / file)
    with pytest.raises(CheckpointError, match=f"^'{os.path.join(path, file)}' {match}"):
        read_checkpoint(path)
    # ... also in a moved-aside copy, which is the one named then.
    os.rename(path, tmp_path / ".ckpt.old-abcdefgh")
    aside = os.path.join(tmp_path, ".ckpt.old-abcdefgh", file)
    with pytest.raises(CheckpointError, match=f"^'{aside}' {match}"):
        read_checkpoint(path)


@pytest.mark.parametrize("replaced_after", ["state.json", "arrays.npz"])
def test_a_save_between_a_readers_file_opens_never_gives_it_a_mix(tmp_path, monkeypatch,
                                                                  replaced_after):
    path = write_checkpoint(str(tmp_path / "ckpt"), OLD)
    real_open, saved = os.open, []

    def open_then_save(file, *args, **kwargs):
        fd = real_open(file, *args, **kwargs)
        if str(file).endswith(replaced_after) and not saved:
            saved.append(True)
            write_checkpoint(path, NEW)  # a concurrent save, right after this open
        return fd

    monkeypatch.setattr(os, "open", open_then_save)
    state = read_checkpoint(path)
    monkeypatch.undo()
    assert saved and same(state, OLD if replaced_after == "arrays.npz" else NEW)
    assert os.listdir(tmp_path) == ["ckpt"]


def test_a_moved_aside_copy_removed_while_it_is_read_is_not_reported_broken(tmp_path,
                                                                           monkeypatch):
    # The reader picks the copy a killed overwrite moved aside; before it opens the
    # arrays, a save puts a new checkpoint at the path and starts removing that copy.
    copy_of(tmp_path / ".ckpt.old-ab12cd34", OLD)
    path = str(tmp_path / "ckpt")
    real_open, saved = os.open, []

    def open_then_save(file, *args, **kwargs):
        fd = real_open(file, *args, **kwargs)
        if str(file).endswith("state.json") and not saved:
            saved.append(True)
            copy_of(tmp_path / "ckpt", NEW)
            os.remove(tmp_path / ".ckpt.old-ab12cd34" / "arrays.npz")
        return fd

    monkeypatch.setattr(os, "open", open_then_save)
    state = read_checkpoint(path)
    monkeypatch.undo()
    assert saved and same(state, NEW)


def test_concurrent_saves_to_one_folder_take_turns(tmp_path):
    # Each save cleans the folder's leftovers first; without taking turns it would remove
    # the other thread's temporary folder in the middle of its save.
    errors = []

    def saves(name):
        try:
            for i in range(15):
                write_checkpoint(str(tmp_path / name), {"it": i, "w": np.full(5000, i)})
                write_checkpoint(str(tmp_path / "shared"), {"it": i, "w": np.full(5000, i)})
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=saves, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(os.listdir(tmp_path)) == ["shared", "t0", "t1", "t2"]
    assert read_checkpoint(str(tmp_path / "shared"))["it"] == 14


SAVER = """
import sys
import numpy as np
from tfrl.algorithms.checkpoints import write_checkpoint

path, first = sys.argv[1], int(sys.argv[2])
for i in range(first, first + 100000):
    write_checkpoint(path, {"it": i, "w": np.full(50000, i), "tag": str(i) * 50})
    if i == first:
        print("saved", flush=True)
"""


def consistent(path):
    """The `it` of the checkpoint at `path`, after checking it is one state, whole."""
    state = read_checkpoint(path)
    i = state["it"]
    assert state["tag"] == str(i) * 50 and state["w"].tolist() == [i] * 50000
    return i


def test_kill_9_while_saving_in_a_loop(tmp_path):
    path = str(tmp_path / "ckpt")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(tfrl.__file__)), os.environ.get("PYTHONPATH", "")])}
    rng = random.Random(0)
    first = 0
    for _ in range(4):
        child = subprocess.Popen([sys.executable, "-c", SAVER, path, str(first)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline() == "saved\n"
            deadline = time.monotonic() + rng.uniform(0.2, 0.6)
            reads = [consistent(path)]
            while time.monotonic() < deadline:  # a reader never sees a mix or nothing
                reads.append(consistent(path))
            assert reads == sorted(reads) and reads[0] >= first
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            child.stdout.close()
        last = consistent(path)
        assert last >= reads[-1]
        first = last + 1
    write_checkpoint(path, {"it": first, "w": np.full(50000, first), "tag": str(first) * 50})
    assert consistent(path) == first and os.listdir(tmp_path) == ["ckpt"]


def test_the_cli_finds_a_checkpoint_whose_overwrite_was_killed(tmp_path):
    copy_of(tmp_path / ".checkpoint_000002.old-ab12cd34", OLD, {"algorithm": "PPO"})
    path = str(tmp_path / "checkpoint_000002")
    assert commands.check_checkpoint(path) == path
    assert commands.experiment_of_checkpoint(path).algo == "PPO"
    with pytest.raises(commands.CliError, match="checkpoint_000003' does not exist"):
        commands.check_checkpoint(str(tmp_path / "checkpoint_000003"))


def test_reading_where_open_takes_no_dir_fd(tmp_path, monkeypatch):
    # Windows: each file is opened by its path.
    path = write_checkpoint(str(tmp_path / "ckpt"), NEW)
    monkeypatch.setattr(checkpoints, "_OPEN_BY_DIR_FD", False)
    assert same(read_checkpoint(path), NEW)
    os.remove(os.path.join(path, "state.json"))
    with pytest.raises(CheckpointError, match="not a complete tfrl checkpoint: state.json is "
                                              "missing \\(it has \\['arrays.npz'\\]\\)"):
        read_checkpoint(path)


def test_a_leftover_that_cannot_be_tidied_does_not_stop_the_save(tmp_path, monkeypatch,
                                                                 caplog):
    fake_leftover(tmp_path / ".ckpt.tmp-abcdefgh")
    listdir = os.listdir

    def unreadable(folder="."):
        if str(folder).endswith(".ckpt.tmp-abcdefgh"):
            raise PermissionError(13, "Permission denied", str(folder))
        return listdir(folder)

    monkeypatch.setattr(os, "listdir", unreadable)
    with caplog.at_level(logging.WARNING, logger=checkpoints.__name__):
        path = write_checkpoint(str(tmp_path / "ckpt"), NEW)
    monkeypatch.undo()
    assert same(read_checkpoint(path), NEW)
    assert caplog.messages == [
        f"Could not remove the leftovers of killed saves in '{tmp_path}' (PermissionError: "
        f"[Errno 13] Permission denied: '{tmp_path}/.ckpt.tmp-abcdefgh'); saving anyway."]
    write_checkpoint(path, OLD)  # readable again: tidied by the next save
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
