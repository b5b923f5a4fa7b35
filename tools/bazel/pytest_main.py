"""Main of every tfrl py_test: runs pytest on one test file, inside Bazel's runfiles.

//:BUILD generates one py_test per tests/test_*.py; each runs this file with the test
file's workspace-relative path as its first argument, e.g.

    pytest_main.py tests/test_package.py [extra pytest args from --test_arg ...]

pytest runs with the runfiles copy of the workspace as rootdir and pyproject.toml as
its config, so tests/conftest.py and the `[tool.pytest.ini_options]` apply exactly as
in a plain `pytest` run, while `tfrl` is imported from the runfiles (the sources Bazel
tracks), not from an editable install in the venv.
"""

import os
import sys


def _workspace_root():
    # This file is <runfiles>/<workspace name>/tools/bazel/pytest_main.py (a symlink;
    # not resolved, so the root is the runfiles copy of the workspace, as for Bazel's own
    # cwd under `bazel test`). The cwd is the fallback for unusual launches.
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.dirname(os.path.dirname(here)), os.getcwd()]
    for root in candidates:
        if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isdir(
            os.path.join(root, "tests")
        ):
            return root
    raise SystemExit(f"pytest_main: no workspace root (pyproject.toml) among {candidates}")


def main(argv):
    if len(argv) < 2:
        raise SystemExit("usage: pytest_main.py tests/test_x.py [pytest args...]")
    root = _workspace_root()
    test_file, extra = argv[1], argv[2:]

    # Make the runfiles workspace the first place `tfrl` is found (Bazel's stub puts it on
    # PYTHONPATH already; this also covers a direct `python pytest_main.py` run).
    if root not in sys.path:
        sys.path.insert(0, root)
    os.chdir(root)

    import pytest

    args = [
        "--rootdir",
        root,
        "-c",
        os.path.join(root, "pyproject.toml"),
        # The runfiles tree is read-only and per-test; a cache there is useless.
        "-p",
        "no:cacheprovider",
    ]
    tmp = os.environ.get("TEST_TMPDIR")
    if tmp:
        args += ["--basetemp", os.path.join(tmp, "pytest")]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        # Bazel shows per-test-case results from this file (test.xml).
        args += ["--junitxml", xml]
    args += [os.path.join(root, test_file)] + extra

    code = pytest.main(args)
    # Exit code 5: no tests collected/selected, e.g. every test in the file is marked
    # `learning` and PYTEST_ADDOPTS deselects them (`--config=quick`). Not a failure.
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        return 0
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
