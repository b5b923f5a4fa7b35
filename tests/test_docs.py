"""The examples in docstrings and in the README run and say what they show."""

import doctest
import importlib
import os
import pkgutil
import re

import pytest

import tfrl

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Modules whose docstring examples run an optional extra's package: skipped without it.
NEEDS = {"tfrl.env.wrappers.pettingzoo_env": "pettingzoo"}


def _modules():
    names = []
    for info in pkgutil.walk_packages(tfrl.__path__, prefix="tfrl."):
        # Optional backends import optional extras (Ray); they have no doctests.
        if ".backends." not in info.name:
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"


def test_readme_python_blocks_run():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert blocks, "README.md has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_readme_is_short_and_its_links_resolve():
    # Issue 30: the README fits on two screens (at most 150 lines); the rest is the
    # documentation site (docs/), which its links must reach.
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.splitlines()) <= 150
    for marker in ("main-command", "test-command", "rllib-compat-table"):
        assert f"<!-- {marker}:begin -->" in text and f"<!-- {marker}:end -->" in text
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if "://" not in t
               and not os.path.exists(os.path.join(REPO_ROOT, t))]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_readme_walk_anchors_point_at_the_calls_they_name():
    # Issue 35: the README walks from algo.train() to the optimizer step with file:line
    # anchors; each `path:N` must be a def in that file, and each bare `:N` after it a
    # line of the last named file that names a function or a call (code moved -> this fails).
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    walk = text[text.index("## How tfrl is built"):]
    walk = walk[:walk.index("\n## ") if "\n## " in walk else len(walk)]
    anchors = re.findall(r"`(tfrl/[\w/]+\.py)?:(\d+)`", walk)
    assert len(anchors) >= 10, anchors
    current, lines, wrong = None, [], []
    for path, number in anchors:
        if path:
            current = path
            with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
                lines = f.read().splitlines()
        line = lines[int(number) - 1].strip() if int(number) <= len(lines) else ""
        if path and not line.startswith(("def ", "class ")):
            wrong.append(f"{current}:{number} is not a def: {line!r}")
        elif not path and not re.search(r"(def |\w\()", line):
            wrong.append(f"{current}:{number} names no function or call: {line!r}")
    assert not wrong, "README walk anchors out of date:\n" + "\n".join(wrong)
