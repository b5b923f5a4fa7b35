"""Quiet by default: `import tfrl` hides TensorFlow's and CUDA's start-up notices.

A plain `import tensorflow as tf; tf.constant(1)` on a machine without a GPU prints about
seven lines on stderr (absl's "All log messages before absl::InitializeLog() ...",
`cudart_stub.cc`'s "Could not find cuda drivers", `cpu_feature_guard.cc`'s CPU
instructions, `cuda_platform.cc`'s "failed call to cuInit"). Some come from C++ while
TensorFlow's libraries load, before Python can do anything and before absl reads
`TF_CPP_MIN_LOG_LEVEL`. `install()` (run by `import tfrl`) therefore does two things,
unless the user asks for the notices:

1. sets `TF_CPP_MIN_LOG_LEVEL=3` in the environment if the user has not set it (this
   hides the C++ notices written after the libraries load, and is inherited by
   subprocesses);
2. puts a one-shot import hook on `sys.meta_path`: while `tensorflow` is imported for the
   first time, stderr (file descriptor 2) goes to a temporary file; afterwards every line
   that is a known start-up notice (`NOTICE_PATTERNS`) is dropped and anything else is
   written to stderr as it came, so real warnings and errors of the import still show.

The notices stay when `TFRL_VERBOSE` is set to a true value (`1`, `true`, `yes`), when the
user set `TF_CPP_MIN_LOG_LEVEL` below 2 themselves, when TensorFlow was imported before
tfrl, or after `set_verbose(True)` (the CLI's `--verbose`). Ray workers get the same
setting through their runtime environment (`worker_env_vars()`).

Example:
    >>> bool(NOTICE_PATTERNS[0].match(
    ...     "WARNING: All log messages before absl::InitializeLog() is called are written "
    ...     "to STDERR"))
    True
    >>> filter_notices("I0000 00:00:17.5 20700 cudart_stub.cc:31] Could not find cuda "
    ...                "drivers on your machine, GPU will not be used.\\nreal problem\\n")
    'real problem\\n'
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import tempfile
from types import ModuleType
from typing import Any, Dict, Optional, Sequence

__all__ = ["VERBOSE_ENV_VAR", "TF_LOG_LEVEL_VAR", "NOTICE_PATTERNS", "FilteredStderr",
           "install", "set_verbose", "verbose_requested", "filter_notices", "worker_env_vars"]

#: Set to 1 (or true/yes) to keep TensorFlow's start-up notices.
VERBOSE_ENV_VAR = "TFRL_VERBOSE"
#: TensorFlow's C++ log threshold; tfrl sets it (to 3) only when the user did not.
TF_LOG_LEVEL_VAR = "TF_CPP_MIN_LOG_LEVEL"
_QUIET_LEVEL = "3"

#: Lines TensorFlow, XLA and CUDA write on stderr while TensorFlow loads.
NOTICE_PATTERNS: Sequence["re.Pattern[str]"] = (
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called"),
    # glog/absl info and warning lines: "I0000 00:00:1795852425.853563   20700 file.cc:31] ..."
    re.compile(r"^[IW]\d{4} [\d:. ]+\s+\d+ [\w./-]+:\d+\] "),
    re.compile(r"^To enable the following instructions: .*rebuild TensorFlow"),
    re.compile(r"^E\d{4} [\d:. ]+\s+\d+ cuda_\w+\.cc:\d+\] failed call to cuInit"),
)

# set_level: tfrl set TF_CPP_MIN_LOG_LEVEL; finder: the installed import hook; verbose:
# set_verbose(True) was called (the CLI's --verbose).
_state: Dict[str, Any] = {"set_level": False, "finder": None, "verbose": False}


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def verbose_requested() -> bool:
    """Whether the user asked for TensorFlow's notices: `TFRL_VERBOSE` is true, or
    `TF_CPP_MIN_LOG_LEVEL` is set below 2 (by the user; tfrl only ever sets 3)."""
    if _truthy(os.environ.get(VERBOSE_ENV_VAR)):
        return True
    level = os.environ.get(TF_LOG_LEVEL_VAR)
    if level is None:
        return False
    try:
        return int(level) < 2
    except ValueError:
        return True  # a value TensorFlow does not understand: leave everything as is


def filter_notices(text: str) -> str:
    """`text` without the lines that match `NOTICE_PATTERNS`."""
    kept = [line for line in text.splitlines(keepends=True)
            if not any(p.match(line) for p in NOTICE_PATTERNS)]
    return "".join(kept)


class _QuietLoader(importlib.abc.Loader):
    """Runs the real loader of `tensorflow` with stderr captured and filtered."""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module keeps its real loader (resources, reload); only this run is wrapped.
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        module.__loader__ = self._loader
        with FilteredStderr():
            self._loader.exec_module(module)


class _QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """One-shot `sys.meta_path` hook: wraps the loader of the first `tensorflow` import."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != "tensorflow":
            return None
        _remove_finder()
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or verbose_requested():
            return spec
        spec.loader = _QuietLoader(spec.loader)
        return spec


class FilteredStderr:
    """Sends file descriptor 2 to a temporary file; on exit writes back what is not a
    start-up notice."""

    def __enter__(self) -> "FilteredStderr":
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._file = tempfile.TemporaryFile(mode="w+b")
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        text = self._file.read().decode("utf-8", errors="replace")
        self._file.close()
        rest = filter_notices(text)
        if rest:
            sys.stderr.write(rest)
            sys.stderr.flush()


def _remove_finder() -> None:
    finder = _state["finder"]
    if finder is not None and finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _state["finder"] = None


def install() -> None:
    """Makes TensorFlow's start-up quiet (see the module docstring); run by `import tfrl`.

    Does nothing when the user asked for the notices (`verbose_requested()`). Sets
    `TF_CPP_MIN_LOG_LEVEL=3` only if it is unset, and hooks the first import of TensorFlow
    only if TensorFlow is not imported yet. Calling it again does no harm.
    """
    if verbose_requested():
        return
    if TF_LOG_LEVEL_VAR not in os.environ:
        os.environ[TF_LOG_LEVEL_VAR] = _QUIET_LEVEL
        _state["set_level"] = True
    if "tensorflow" not in sys.modules and _state["finder"] is None:
        finder = _QuietTensorFlowFinder()
        sys.meta_path.insert(0, finder)
        _state["finder"] = finder


def set_verbose(verbose: bool) -> None:
    """Keeps (True) or hides (False) TensorFlow's start-up notices from now on: the
    CLI's `--verbose`. True removes the import hook and the `TF_CPP_MIN_LOG_LEVEL` that
    tfrl set (a value the user set stays), and Ray workers started later get
    `TFRL_VERBOSE=1` (`worker_env_vars`). False installs the quiet start again (unless
    the environment asks for the notices). Has no effect on a TensorFlow already loaded."""
    _state["verbose"] = bool(verbose)
    if verbose:
        _remove_finder()
        if _state["set_level"] and os.environ.get(TF_LOG_LEVEL_VAR) == _QUIET_LEVEL:
            del os.environ[TF_LOG_LEVEL_VAR]
        _state["set_level"] = False
    else:
        install()


def worker_env_vars() -> Dict[str, str]:
    """The environment variables a remote worker (a Ray actor's `runtime_env`) needs to
    be as quiet, or as verbose, as this process: `TF_CPP_MIN_LOG_LEVEL` and
    `TFRL_VERBOSE` as set here (`TFRL_VERBOSE=1` after `set_verbose(True)`); the
    worker's `import tfrl` then hooks its own TensorFlow import, or not.

    Example:
        >>> sorted(worker_env_vars()) in (["TF_CPP_MIN_LOG_LEVEL"],
        ...                               ["TFRL_VERBOSE"],
        ...                               ["TFRL_VERBOSE", "TF_CPP_MIN_LOG_LEVEL"], [])
        True
    """
    env = {name: os.environ[name] for name in (TF_LOG_LEVEL_VAR, VERBOSE_ENV_VAR)
           if name in os.environ}
    if _state["verbose"]:
        env[VERBOSE_ENV_VAR] = "1"
    return env
