"""The documentation site's Python code blocks run (pytest marker `docs`).

Every fenced ```python block of `docs/**/*.md` runs, except a block right after a line
`<!-- docs-test: skip -->` (for code that needs a server, a cluster or a long run; the
page's text says so). The blocks of one page run in order as one script, as
`python -c <script>` in an empty temporary directory (so a page may build on its earlier
blocks, and no page sees another's state); the script must exit with status 0. Budgets
are tiny in the pages themselves.

The scripts are not started as new interpreters but forked from one (tests/
docs_fork_server.py) that has imported TensorFlow, Keras and tfrl and run nothing else:
each page used to pay those imports again (~5 CPU-s). The forked child looks like a fresh
`python -c` (test_fork_server_child_looks_like_a_fresh_interpreter compares the two); a
page that touches the environment (`os.environ`), which a fresh interpreter would read
at TensorFlow's import, runs in a fresh interpreter, as does every page if the server's
imports ever leave TensorFlow initialised (test_fork_server_parent_is_pristine says so).

    python -m pytest -m docs tests/test_docs_site.py
"""

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Dict, List, Optional, Tuple

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO_ROOT, "docs")
SKIP_MARKER = "<!-- docs-test: skip -->"
TIMEOUT_S = 600  # per page; generous for a loaded shared machine

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^\n`]*)$")

pytestmark = pytest.mark.docs


def code_blocks(markdown: str) -> List[Tuple[int, str, str, bool]]:
    """(first line number, language, code, skipped) of each fenced block in `markdown`."""
    blocks = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, ticks = match.group("indent"), match.group("ticks")
        info = match.group("info").strip()
        language = info.split()[0].lstrip("{.").rstrip("}") if info else ""
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        body = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != ticks:
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: a code fence is not closed")
        blocks.append((i + 1, language, textwrap.dedent("\n".join(body)),
                       previous == SKIP_MARKER))
        i = j + 1
    return blocks


def page_scripts() -> Dict[str, List[Tuple[int, str]]]:
    """docs-relative page path -> [(line, code)] of its Python blocks to run."""
    pages = {}
    for folder, _, names in os.walk(DOCS):
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, DOCS).replace(os.sep, "/")
            blocks = [(line, code) for line, language, code, skipped
                      in code_blocks(open(path, encoding="utf-8").read())
                      if language in ("python", "py") and not skipped]
            if blocks:
                pages[rel] = blocks
    return dict(sorted(pages.items()))


PAGES = page_scripts()


def test_code_blocks_are_found():
    # The extractor sees the pages that teach with code (a broken fence rule would
    # silently run nothing).
    assert {"getting-started.md", "concepts.md", "guides/custom-model.md"} <= set(PAGES)
    assert sum(len(blocks) for blocks in PAGES.values()) >= 15


def test_skip_marker_precedes_a_block():
    for folder, _, names in os.walk(DOCS):
        for name in names:
            if not name.endswith(".md"):
                continue
            lines = open(os.path.join(folder, name), encoding="utf-8").read().splitlines()
            for i, line in enumerate(lines):
                if line.strip() == SKIP_MARKER:
                    following = next((l for l in lines[i + 1:] if l.strip()), "")
                    assert _FENCE.match(following), (
                        f"{name}:{i + 1}: {SKIP_MARKER} must be followed by a code block")


def test_extractor_on_a_sample():
    sample = textwrap.dedent("""\
        ```python
        a = 1
        ```
        <!-- docs-test: skip -->
        ```python
        serve_forever()
        ```
        ```bash
        ls
        ```
        !!! note
            ```python
            b = 2
            ```
        """)
    assert code_blocks(sample) == [(1, "python", "a = 1", False),
                                   (5, "python", "serve_forever()", True),
                                   (8, "bash", "ls", False),
                                   (12, "python", "b = 2", False)]


def page_env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        TF_CPP_MIN_LOG_LEVEL="2", TFRL_EXAMPLE_SMOKE="1", MPLBACKEND="Agg")


def needs_fresh_interpreter(script: str) -> bool:
    """A script that sets environment variables may mean them for TensorFlow's import,
    which the fork server has done already."""
    return "os.environ" in script or "putenv" in script


def same_environment(a: Dict[str, str], b: Dict[str, str]) -> bool:
    """Whether a server started with environment `a` imported TensorFlow as a fresh
    interpreter with `b` would (pytest's own per-test variable aside)."""
    ignore = ("PYTEST_CURRENT_TEST",)
    return ({k: v for k, v in a.items() if k not in ignore}
            == {k: v for k, v in b.items() if k not in ignore})


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class ForkServer:
    """Client of tests/docs_fork_server.py (started with `env`, the pages' environment)."""

    def __init__(self, env: Dict[str, str]):
        self.env = env
        self.pending = b""
        self.home = tempfile.mkdtemp(prefix="docs_fork_server_")  # its empty cwd
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO_ROOT, "tests", "docs_fork_server.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=self.home)
        self.problems = self._receive(TIMEOUT_S)["ready"]

    def _receive(self, timeout: float) -> Optional[dict]:
        """The server's next message, or None after `timeout` seconds without one (read
        unbuffered: a buffered reader could hold a message select() does not see)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the docs fork server ended (exit {self.proc.wait()})")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, script: str, cwd: str, stdout: str, stderr: str,
            timeout: float) -> subprocess.CompletedProcess:
        """Runs `script` as `python -c script` would in `cwd`; raises
        subprocess.TimeoutExpired (the child killed) as subprocess.run does."""
        self.proc.stdin.write(json.dumps({"script": script, "cwd": cwd, "env": page_env(),
                                          "stdout": stdout, "stderr": stderr}) + "\n")
        self.proc.stdin.flush()
        pid = self._receive(TIMEOUT_S)["pid"]
        done = self._receive(timeout)
        timed_out = done is None
        if timed_out:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:  # not yet its own process group
                os.kill(pid, signal.SIGKILL)
            done = self._receive(TIMEOUT_S)
        out, err = (read_text(path) for path in (stdout, stderr))
        if timed_out:
            raise subprocess.TimeoutExpired([sys.executable, "-c", script], timeout, out, err)
        proc = subprocess.CompletedProcess([sys.executable, "-c", script], done["status"],
                                           out, err)
        proc.cpu_s = done["cpu_s"]
        return proc

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.home, ignore_errors=True)


class LazyForkServer:
    """The pages' fork server, started by the first page that asks for it."""

    def __init__(self):
        self.server: Optional[ForkServer] = None

    def start(self) -> ForkServer:
        if self.server is None:
            self.server = ForkServer(page_env())
        return self.server

    def __call__(self) -> Optional[ForkServer]:
        """The server, or None if its imports left TensorFlow initialised or the pages'
        environment changed since it started (then the pages run in fresh interpreters)."""
        server = self.start()
        if server.problems or not same_environment(server.env, page_env()):
            return None
        return server


@pytest.fixture(scope="module")
def fork_server():
    lazy = LazyForkServer()
    yield lazy
    if lazy.server is not None:
        lazy.server.close()


def run_script(script: str, tmp_path, server: Optional[ForkServer],
               timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """`python -c script` in the empty directory tmp_path/run, forked from `server` (None:
    a fresh interpreter)."""
    cwd = tmp_path / "run"
    cwd.mkdir()
    if server is None:
        return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=page_env(),
                              capture_output=True, text=True, timeout=timeout)
    return server.run(script, str(cwd), str(tmp_path / "stdout.txt"),
                      str(tmp_path / "stderr.txt"), timeout)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_code_runs(page, tmp_path, fork_server):
    script = "\n\n".join(f"# docs/{page}, line {line}\n{code}" for line, code in PAGES[page])
    server = None if needs_fresh_interpreter(script) else fork_server()
    proc = run_script(script, tmp_path, server)
    if server is not None:
        print(f"docs/{page}: forked, {proc.cpu_s:.1f} CPU-s")
    assert proc.returncode == 0, (
        f"docs/{page}: its code blocks failed (exit {proc.returncode}).\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-5000:]}")


def test_pages_that_set_the_environment_run_in_a_fresh_interpreter():
    assert needs_fresh_interpreter("import os\nos.environ['TF_ENABLE_ONEDNN_OPTS'] = '0'\n"
                                   "import tensorflow as tf")
    assert not needs_fresh_interpreter("import tensorflow as tf\nprint(tf.__version__)")
    assert not same_environment(page_env(), dict(page_env(), TF_ENABLE_ONEDNN_OPTS="0"))
    assert same_environment(page_env(), dict(page_env(), PYTEST_CURRENT_TEST="x"))


def test_fork_server_parent_is_pristine(fork_server):
    # The server's imports ran no TF op, configured no device and started no thread:
    # otherwise its children would share (or fail to set up) TF's runtime, and every
    # page would fall back to a fresh interpreter, slowly.
    assert fork_server.start().problems == []


# What a script sees of its interpreter; the forked child must see the same.
PROBE = """\
import json, os, sys, threading
state = {"argv": sys.argv, "path0": sys.path[0], "cwd": os.path.basename(os.getcwd()),
         "files": os.listdir("."), "name": __name__, "globals": sorted(globals()),
         "main": sys.modules["__main__"].__dict__ is globals(),
         "threads": threading.active_count(), "env": dict(os.environ),
         "stdout": [sys.stdout.isatty(), sys.stdout.encoding, sys.stdout.line_buffering],
         "tests_modules": [m for m, v in list(sys.modules.items())
                           if "/tests/" in (getattr(v, "__file__", None) or "")]}
from tensorflow.python.eager import context
state["tf_context_before"] = context.context_safe() is not None and context.context()._initialized
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
state["logical_cpus"] = len(tf.config.list_logical_devices("CPU"))
state["sum"] = float(tf.reduce_sum(tf.ones(3)))
tf.this_run_was_here = True
print(json.dumps(state, sort_keys=True))
os.write(2, b"written to fd 2\\n")
print("printed to sys.stderr", file=sys.stderr)
sys.exit(3)
"""


def test_fork_server_child_looks_like_a_fresh_interpreter(fork_server, tmp_path_factory):
    fresh = run_script(PROBE, tmp_path_factory.mktemp("fresh"), None)
    server = fork_server()
    assert server is not None
    forked = run_script(PROBE, tmp_path_factory.mktemp("forked"), server)
    assert (forked.returncode, fresh.returncode) == (3, 3), (fresh.stderr, forked.stderr)
    state = json.loads(forked.stdout)
    assert state == json.loads(fresh.stdout)
    assert state["files"] == [] and state["argv"] == ["-c"] and state["name"] == "__main__"
    assert state["env"] == page_env()
    assert not state["tf_context_before"] and state["logical_cpus"] == 3
    for out in (fresh, forked):
        assert out.stderr.count("written to fd 2\nprinted to sys.stderr\n") == 1
    # Nothing a child did shows in the next one: globals, modules' state, random state.
    again = run_script("import random, numpy, tensorflow as tf\n"
                       "assert not hasattr(tf, 'this_run_was_here')\n"
                       "assert 'state' not in globals()\n"
                       "print(random.random(), numpy.random.random())",
                       tmp_path_factory.mktemp("again"), server)
    twice = run_script("import random, numpy\nprint(random.random(), numpy.random.random())",
                       tmp_path_factory.mktemp("twice"), server)
    assert again.returncode == 0, again.stderr
    assert again.stdout != twice.stdout  # reseeded from the OS, as a fresh interpreter


def test_fork_server_child_errors_and_timeouts_as_python_c(fork_server, tmp_path_factory):
    server = fork_server()
    assert server is not None
    script = "import sys\nprint('before')\nraise ValueError('a docs page failed')"
    fresh = run_script(script, tmp_path_factory.mktemp("fresh"), None)
    forked = run_script(script, tmp_path_factory.mktemp("forked"), server)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr) == (
        1, "before\n", 'Traceback (most recent call last):\n  File "<string>", line 3, in '
        "<module>\nValueError: a docs page failed\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_script("import time\ntime.sleep(600)", tmp_path_factory.mktemp("slow"), server,
                   timeout=1)
    # The server goes on after a killed child.
    assert run_script("pass", tmp_path_factory.mktemp("after"), server).returncode == 0
