"""The documentation site's Python code blocks run (pytest marker `docs`).

Every fenced ```python block of `docs/**/*.md` runs, except a block right after a line
`<!-- docs-test: skip -->` (for code that needs a server, a cluster or a long run; the
page's text says so). The blocks of one page run in order as one script, in a fresh
interpreter started in an empty temporary directory (so a page may build on its earlier
blocks, and no page sees another's state); the script must exit with status 0. Budgets
are tiny in the pages themselves, so the whole file runs in about a minute.

    python -m pytest -m docs tests/test_docs_site.py
"""

import os
import re
import subprocess
import sys
import textwrap
from typing import Dict, List, Tuple

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


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_code_runs(page, tmp_path):
    script = "\n\n".join(f"# docs/{page}, line {line}\n{code}" for line, code in PAGES[page])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        TF_CPP_MIN_LOG_LEVEL="2", TFRL_EXAMPLE_SMOKE="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, (
        f"docs/{page}: its code blocks failed (exit {proc.returncode}).\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-5000:]}")
