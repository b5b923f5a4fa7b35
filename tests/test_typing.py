"""Static types: mypy is clean on tfrl.core, tfrl.execution and tfrl.algorithms, and the
concrete classes satisfy the Protocols of `tfrl.core.types`.

mypy runs in this process through its API, with the `[tool.mypy]` config of
pyproject.toml and its cache in `.mypy_cache/` at the repository root (ignored by git):
measured on the 2-core dev machine, a cold run takes ~4 s of CPU (11 s of wall time under
load), a warm one ~1 s.
"""

import os
import textwrap

from mypy import api as mypy_api  # in the test extra: pip install -e '.[test]'

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO_ROOT, "pyproject.toml")
# Bazel runs tests in a sandbox whose writable scratch directory is TEST_TMPDIR.
CACHE_DIR = os.path.join(os.environ.get("TEST_TMPDIR") or REPO_ROOT, ".mypy_cache")


def run_mypy(*args):
    """`(report, exit_status)` of mypy run from the repository root."""
    cwd = os.getcwd()
    os.chdir(REPO_ROOT)  # the config's package names resolve against the root
    try:
        stdout, stderr, status = mypy_api.run(
            ["--config-file", CONFIG, "--cache-dir", CACHE_DIR, *args])
    finally:
        os.chdir(cwd)
    return stdout + stderr, status


def test_mypy_is_clean_on_core_execution_and_algorithms():
    report, status = run_mypy()  # the packages listed in [tool.mypy]
    assert status == 0, report
    assert "Success: no issues found" in report


# Each assignment below is checked by mypy: the concrete class must have every member
# of the Protocol, with compatible signatures.
CONFORMANCE = """
from typing import Any, List, Tuple

from tfrl.core import types
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.evaluation.worker_set.handles import ThreadWorkerHandle, WorkerHandle
from tfrl.evaluation.worker_set import WorkerSet
from tfrl.execution.rollout_ops import ConcatBatches
from tfrl.execution.train_ops import TrainOneStep
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.policy import Policy
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.tf_policy import TFPolicy
from tfrl.utils.typing import SampleBatchType


def conforms(sample_batch: SampleBatch, ma_batch: MultiAgentBatch, policy: Policy,
             tf_policy: TFPolicy, worker: RolloutWorker, worker_set: WorkerSet,
             handle: WorkerHandle, thread_handle: ThreadWorkerHandle,
             concat: ConcatBatches, train: TrainOneStep) -> None:
    batches: List[types.Batch] = [sample_batch, ma_batch]
    policies: List[types.Policy] = [policy, tf_policy]
    w: types.Worker = worker
    ws: types.WorkerSet = worker_set
    handles: List[types.RemoteWorker] = [handle, thread_handle]
    op1: types.Operator[types.Batch, List[SampleBatchType]] = concat
    op2: types.Operator[types.Batch, Tuple[types.Batch, Any]] = train
"""


def check_snippet(tmp_path, code):
    """mypy on `code` alone (a file on the command line replaces the config's files)."""
    path = tmp_path / "snippet.py"
    path.write_text(code)
    return run_mypy(str(path))


def test_concrete_classes_satisfy_the_protocols(tmp_path):
    report, status = check_snippet(tmp_path, CONFORMANCE)
    assert status == 0, report


def test_a_class_missing_a_member_does_not_satisfy_the_protocol(tmp_path):
    # The check above can fail: a worker set without `sync_weights` is rejected.
    code = textwrap.dedent("""
        from typing import Any, List
        from tfrl.core import types

        class HalfWorkerSet:
            def local_worker(self) -> Any: ...
            def remote_workers(self) -> List[Any]: ...
            def foreach_worker(self, func: Any) -> List[Any]: ...
            def stop(self) -> None: ...

        ws: types.WorkerSet = HalfWorkerSet()
    """)
    report, status = check_snippet(tmp_path, code)
    assert status == 1, report
    assert "sync_weights" in report, report
