#!/bin/sh
# The Python interpreter of tfrl's Bazel toolchain (//tools/bazel:python_runtime).
#
# Bazel runs every py_binary/py_test with this script. It execs the virtualenv
# Python that has tfrl's dependencies (tensorflow, pytest, ...), chosen by:
#   1. $TFRL_PYTHON, if set (passed into tests by `--test_env=TFRL_PYTHON` in .bazelrc);
#   2. otherwise <workspace>/.venv/bin/python, the venv that .ci/run creates.
# tfrl itself is imported from Bazel's runfiles (the source tree), not from the venv.
if [ -n "${TFRL_PYTHON:-}" ]; then
    exec "$TFRL_PYTHON" "$@"
fi
# This file is reached through runfiles/sandbox symlinks; the real path is in the
# source tree, <workspace>/tools/bazel/python3.sh.
self=$(readlink -f "$0")
workspace=${self%/tools/bazel/python3.sh}
if [ -x "$workspace/.venv/bin/python" ]; then
    exec "$workspace/.venv/bin/python" "$@"
fi
echo "tools/bazel/python3.sh: no Python for Bazel: set TFRL_PYTHON to a venv's python" \
     "(e.g. TFRL_PYTHON=\$HOME/venvs/tfrl/bin/python bazel test //...) or create $workspace/.venv" >&2
exit 127
