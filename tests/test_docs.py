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
