#!/bin/sh
echo "bazel coverage is not supported in tfrl's offline Bazel setup (stub remote_coverage_tools)" >&2
exit 1
