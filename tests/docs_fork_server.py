"""A fork server for tests/test_docs_site.py: import TensorFlow once, fork a child per page.

Each docs page's script used to run in a fresh `python -c <script>`, and each paid Python's,
TensorFlow's, Keras's and tfrl's imports (~4-6 CPU-s, far more on a loaded machine) before
its own few seconds of work. This server imports those modules once, runs nothing else
(no TF op, no device set-up: TF's eager context, its thread pools and its logical devices
are created lazily, at the first op or device query, so a forked child still creates
them itself), and forks a child per page.

The child runs the script as `python -c` would: `__main__` is a new, empty module,
`sys.argv == ["-c"]`, `sys.path[0] == ""`, the working directory and the environment are
the request's, stdin is /dev/null, stdout and stderr (file descriptors 1 and 2, so also
TensorFlow's C++ logging) go to the request's files, Python's and numpy's global random
states are reseeded from the OS (a fresh interpreter seeds them so too), and the child
exits through the interpreter's normal exit (non-daemon threads joined, atexit handlers
run) with the status `python -c` would give.

What a forked child cannot undo: the modules are imported already (a page that must set
an environment variable *before* TensorFlow's import, e.g. TF_ENABLE_ONEDNN_OPTS, sees no
effect; such pages run the old way, see `needs_fresh_interpreter` in the test file); the
hash seed of str keys is the server's; what TensorFlow prints while it is imported
(absl's "WARNING: All log messages before absl::InitializeLog()..." and the CUDA stub's
notice) went to the server's stderr, not the page's.

Threads: after the imports the server runs one Python thread and three native ones
(seen in /proc/<pid>/task on 2026-11-29: the OpenBLAS pools of numpy and of scipy, and
the jemalloc background thread of a library TensorFlow loads); OpenBLAS and jemalloc
register fork handlers (pthread_atfork) for exactly this, and the child starts with only
the forking thread, as POSIX fork does. TensorFlow's own pools do not exist yet.

Protocol (one request at a time), on the descriptors 0 (in) and 1 (out), JSON lines:
  the server sends {"ready": [problems]} once its imports are done (problems: reasons
  the parent is not pristine, e.g. TF's context was initialised; the caller must not use
  a server that lists any);
  request {"script", "cwd", "env", "stdout", "stderr"} -> {"pid"} then {"status"}
  (status as subprocess.Popen.returncode: exit code, or -signal; and "cpu_s", the
  child's user + system CPU seconds).
"""

import json
import os
import sys

# What the pages import (tests/test_docs_site.py checks this list leaves TF untouched).
PRELOAD = ("numpy", "tensorflow", "keras", "gymnasium", "tfrl.algorithms.ppo",
           "tfrl.algorithms.dqn", "tfrl.env.registry", "tfrl.policy.policy",
           "tfrl.policy.sample_batch", "tfrl.models.catalog")


def preload():
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    # tfrl's packages export lazily: resolve what the pages use most.
    from tfrl.algorithms.ppo import PPO, PPOConfig  # noqa: F401
    from tfrl.algorithms.dqn import DQN, DQNConfig  # noqa: F401


def problems():
    """Why this process is not safe to fork a fresh-looking interpreter from (none: [])."""
    import threading

    found = []
    if threading.active_count() != 1:
        found.append(f"Python threads are running: {threading.enumerate()}")
    from tensorflow.python.eager import context

    if context.context_safe() is not None:
        ctx = context.context()
        if getattr(ctx, "_initialized", True) or getattr(ctx, "_context_handle", 1):
            found.append("TensorFlow's eager context is initialised (an op ran or "
                         "devices were listed)")
        if getattr(ctx, "_virtual_device_map", 1) or getattr(ctx, "_visible_device_list", 1):
            found.append("TensorFlow's devices were configured")
    return found


def run_child(request, channels):
    """In the forked child: becomes `python -c <script>`; never returns (raises
    SystemExit, which ends the interpreter the normal way)."""
    import builtins
    import importlib.machinery
    import random
    import types

    os.setpgid(0, 0)  # a timeout kills the page's whole process group
    null = os.open(os.devnull, os.O_RDWR)
    for fd in channels:  # the protocol's descriptors: not the page's business
        os.dup2(null, fd)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-c"]
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    main = types.ModuleType("__main__")
    main.__loader__ = importlib.machinery.BuiltinImporter
    main.__builtins__ = builtins
    main.__annotations__ = {}
    server_main = sys.modules["__main__"]
    for name, module in list(sys.modules.items()):  # "__main__" and aliases of it
        if module is server_main:  # (a preloaded library sets "__mp_main__")
            sys.modules[name] = main
    code = compile(request["script"], "<string>", "exec")
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # as the interpreter's top level: traceback, exit 1
        error.__traceback__ = error.__traceback__.tb_next  # this function's frame
        sys.excepthook(type(error), error, error.__traceback__)
        raise SystemExit(1)
    raise SystemExit(0)


def serve():
    # As under `python -c`: the working directory first on the path, not this file's
    # folder (tests/, whose modules must not shadow anything the imports look for). The
    # caller starts the server in an empty directory.
    sys.path[0] = ""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    channels = (requests.fileno(), replies.fileno())
    # Anything an import prints goes to stderr, not into the protocol.
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    preload()

    def reply(message):
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    reply({"ready": problems()})
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(request, channels)
        reply({"pid": pid})
        _, status, usage = os.wait4(pid, 0)
        reply({"status": os.waitstatus_to_exitcode(status),
               "cpu_s": usage.ru_utime + usage.ru_stime})


if __name__ == "__main__":
    serve()
