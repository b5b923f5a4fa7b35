"""tfrl.utils.lazy_exports and the lazy packages that use it (tfrl.env, tfrl.models,
tfrl.evaluation.rollout_worker)."""

import ast
import os
import subprocess
import sys

import pytest

from tfrl.utils.lazy_exports import lazy_exports


def _printed_lines(code):
    """The lines `code` prints in a fresh interpreter started at the repository root."""
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=repo_root).stdout.splitlines()


def test_lazy_exports_imports_on_first_access_and_lists_all():
    getattr_, names = lazy_exports("pkg", {"math": ["sqrt", "pi"], "json": ["dumps"]})
    assert names == ["dumps", "pi", "sqrt"]
    assert getattr_("sqrt")(9.0) == 3.0 and getattr_("dumps")([1]) == "[1]"
    with pytest.raises(AttributeError, match="^module 'pkg' has no attribute 'cos'$"):
        getattr_("cos")


def test_lazy_exports_rejects_a_name_under_two_modules():
    with pytest.raises(ValueError, match="pkg exports 'sqrt' from two modules: 'math' and "
                                         "'cmath'"):
        lazy_exports("pkg", {"math": ["sqrt"], "cmath": ["sqrt"]})


def test_packages_export_lazily_without_tensorflow():
    # tfrl.evaluation.rollout_worker.env: what a sub-env process (remote_worker_envs)
    # imports to unpickle the worker's env maker.
    code = ("import sys, tfrl.env, tfrl.models, tfrl.evaluation.rollout_worker.env; "
            "assert 'tensorflow' not in sys.modules; "
            "print(tfrl.env.__all__); print(tfrl.models.__all__); "
            "from tfrl.env import PolicyClient, make_multi_agent; "
            "from tfrl.models import ModelCatalog; print(ModelCatalog.__module__)")
    out = _printed_lines(code)
    assert ast.literal_eval(out[0]) == sorted([
        "BaseEnv", "EnvContext", "ExternalEnv", "ExternalMultiAgentEnv", "MultiAgentEnv",
        "ParallelPettingZooEnv", "PettingZooEnv",
        "PolicyClient", "PolicyServerInput", "RemoteVectorEnv", "SingleAgentEpisode",
        "VectorEnv", "make_multi_agent", "register_env"])
    assert ast.literal_eval(out[1]) == ["MODEL_DEFAULTS", "ModelCatalog", "Preprocessor",
                                        "get_preprocessor"]
    assert out[2] == "tfrl.models.catalog"


def test_execution_package_imports_only_the_operators_used():
    code = ("import sys, tfrl.execution.iter; "
            "print(sorted(m for m in sys.modules if m.startswith('tfrl.execution'))); "
            "from tfrl.execution import ReplayBuffer, TrainOneStep; import tfrl.execution; "
            "print(ReplayBuffer.__module__, TrainOneStep.__module__, len(tfrl.execution.__all__))")
    out = _printed_lines(code)
    loaded = ast.literal_eval(out[0])
    assert "tfrl.execution.iter" in loaded
    assert not {"tfrl.execution.replay_buffer", "tfrl.execution.train_ops",
                "tfrl.execution.multi_gpu_learner_thread"} & set(loaded)
    assert out[1] == "tfrl.execution.replay_buffer tfrl.execution.train_ops 42"


def test_a_replay_shard_actor_process_needs_no_tensorflow():
    # An Ape-X replay-shard actor imports WorkerActor's module (the Ray backend, and through
    # it the worker-set handles) and its LocalReplayBuffer: no policy, model or TensorFlow
    # (a shard started in ~0.7 GB and minutes under load when the worker-set package
    # imported WorkerSet eagerly).
    pytest.importorskip("ray")
    code = ("import sys, tfrl.backends.ray.worker, tfrl.algorithms.apex_dqn.replay_shards; "
            "import tfrl.evaluation.worker_set as ws; "
            "print(sorted(ws.__all__)); "
            "print(sorted(m for m in ('tensorflow', 'keras', 'tfrl.policy.tf_policy', "
            "'tfrl.evaluation.rollout_worker.rollout_worker') if m in sys.modules)); "
            "print(ws.WorkerSet.__module__)")
    out = _printed_lines(code)
    assert ast.literal_eval(out[0]) == ["MAX_RECREATIONS_PER_CALL", "WorkerSet"]
    assert ast.literal_eval(out[1]) == []
    assert out[2] == "tfrl.evaluation.worker_set.worker_set"
