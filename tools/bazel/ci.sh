#!/usr/bin/env bash
# Run tfrl's tests through Bazel, offline. Used by .ci/run after the pytest suite.
#
#   tools/bazel/ci.sh [PYTHON] [-- BAZEL_TEST_ARGS...]
#
# PYTHON: a virtualenv Python with tfrl's dependencies (tensorflow, pytest, ...).
#   Default: $TFRL_PYTHON, else <repo>/.venv/bin/python (what .ci/run creates).
# BAZEL_TEST_ARGS: targets and flags for `bazel test`, replacing the default
#   `--config=quick //...` (every test file; `learning`-marked tests deselected, since
#   the pytest suite runs those already). Also settable as $TFRL_BAZEL_TEST_ARGS.
#
# Installs Debian's bazel-bootstrap (Bazel 4.2.3) with apt-get if `bazel` is missing.
# Exits with Bazel's code (0 all passed, 3 some test failed, 4 no test targets, ...).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

py=""
if [[ $# -gt 0 && "$1" != "--" ]]; then
    py=$1
    shift
fi
if [[ $# -gt 0 && "$1" == "--" ]]; then
    shift
fi
if [[ $# -gt 0 ]]; then
    test_args=("$@")
elif [[ -n "${TFRL_BAZEL_TEST_ARGS:-}" ]]; then
    read -r -a test_args <<<"$TFRL_BAZEL_TEST_ARGS"
else
    test_args=(--config=quick //...)
fi

py=${py:-${TFRL_PYTHON:-$repo/.venv/bin/python}}
# Absolute, but not symlink-resolved: a venv's bin/python is a symlink to the base
# interpreter, and resolving it would lose the venv.
[[ "$py" == /* ]] || py="$PWD/$py"
if [[ ! -x "$py" ]]; then
    echo "tools/bazel/ci.sh: no Python at $py; pass a venv's python or set TFRL_PYTHON" >&2
    exit 2
fi
"$py" -c "import pytest" || {
    echo "tools/bazel/ci.sh: $py cannot import pytest; install tfrl's test extras" >&2
    exit 2
}
export TFRL_PYTHON=$py

if ! command -v bazel >/dev/null 2>&1; then
    echo "== installing bazel-bootstrap (Debian's Bazel 4.2.3)"
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
    export DEBIAN_FRONTEND=noninteractive
    t0=$SECONDS
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends bazel-bootstrap >/dev/null
    echo "== bazel installed in $((SECONDS - t0))s"
fi

echo "== bazel test ${test_args[*]}  (TFRL_PYTHON=$TFRL_PYTHON)"
t0=$SECONDS
log=$(mktemp)
status=0
# --nocache_test_results: CI reports tests that ran now, not results cached from an
# earlier run in the same output base (the cache does not see venv changes).
bazel test \
    --color=no --curses=no --show_progress_rate_limit=30 \
    --nocache_test_results \
    "${test_args[@]}" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
echo "== bazel test finished in $((SECONDS - t0))s with exit code $status"

# Bazel's summary, one line per test target; then a plain count line.
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log" || true)
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE)' "$log" || true)
rm -f "$log"

if [[ "${CI:-}" == "true" ]]; then
    # Leave no Bazel server running after a CI job.
    bazel shutdown >/dev/null 2>&1 || true
fi

echo "bazel: $passed passed, $failed failed"
exit "$status"
