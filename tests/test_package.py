"""Checks on the tfrl package itself: it imports, lazily, from the tested sources."""

import os
import re
import subprocess
import sys

import pytest

import tfrl

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _setup_py_version():
    with open(os.path.join(REPO_ROOT, "setup.py"), encoding="utf-8") as f:
        match = re.search(r"""version\s*=\s*["']([^"']+)["']""", f.read())
    assert match, "setup.py has no version=..."
    return match.group(1)


def test_imports_from_this_source_tree():
    # Under pytest and under Bazel alike, `tfrl` is the package next to tests/, not a
    # copy installed elsewhere.
    package_dir = os.path.dirname(os.path.abspath(tfrl.__file__))
    assert package_dir == os.path.join(REPO_ROOT, "tfrl")


def test_import_is_light():
    # `import tfrl` must not pull in Ray (an optional extra) as a side effect. Run in a
    # fresh interpreter: this process already imported TensorFlow in conftest.py.
    code = "import sys, tfrl; print(sorted(m for m in ('ray',) if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    ).stdout
    assert out.strip() == "[]"


def test_setup_py_version_is_pep440():
    # e.g. "0.1.0.dev0", "0.2.0rc1", "1.0.0"
    pattern = r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
    assert re.fullmatch(pattern, _setup_py_version())


def test_version_matches_setup_py():
    if not hasattr(tfrl, "__version__"):
        pytest.skip("tfrl/__init__.py defines no __version__")
    assert tfrl.__version__ == _setup_py_version()
