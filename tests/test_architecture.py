"""The house rules that the import graph must keep.

- Layers: a module imports only from its own layer or the layers below (the
  import-linter contract in pyproject.toml, checked with `lint-imports`).
- No module circle: the graph of tfrl's modules (grimp, import-linter's graph library)
  has no strongly connected component with more than one module.
- An import inside a function only defers TensorFlow or Ray, and says so.
- The data and env layers import without TensorFlow (and nothing imports Ray until a
  Ray backend is used).
- In the data and env layers no module writes another object's private fields.
"""

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import grimp
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
TFRL = REPO_ROOT / "tfrl"


def _env_with_repo_on_path():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return env


def test_layers_contract_is_kept():
    lint_imports = pathlib.Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), f"import-linter is not installed next to {sys.executable}."
    run = subprocess.run([str(lint_imports), "--no-cache"], capture_output=True, text=True,
                         cwd=REPO_ROOT, env=_env_with_repo_on_path(), timeout=300)
    assert run.returncode == 0 and " 0 broken." in run.stdout, (
        "A tfrl module imports from a layer above its own (see the layers in "
        "[tool.importlinter] in pyproject.toml). Broken chains:\n" + run.stdout + run.stderr)
    assert "tfrl layers (imports point down only) KEPT" in run.stdout


def _strongly_connected_components(graph):
    """Tarjan's algorithm, iteratively; returns the components as sorted lists."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _a_cycle_through(graph, members):
    """One concrete circle `a -> b -> ... -> a` inside a strongly connected component."""
    members = set(members)
    start = min(members)
    path, seen = [start], {start}
    while True:
        nexts = sorted(m for m in graph.find_modules_directly_imported_by(path[-1])
                       if m in members)
        if start in nexts and len(path) > 1:
            return path + [start]
        fresh = [m for m in nexts if m not in seen]
        if not fresh:  # Fall back to naming the members.
            return sorted(members)
        path.append(fresh[0])
        seen.add(fresh[0])


def test_no_module_circle():
    # grimp records every import statement (at module top, inside functions and under
    # TYPE_CHECKING) as an edge importer -> imported, and no implicit edge from a module
    # to its parent package. So a package __init__ that re-exports its submodules adds
    # no circle by itself; a submodule that imports its own package's __init__ (which
    # imports the submodule) shows up as the real circle it is.
    graph = grimp.build_graph("tfrl", cache_dir=None)
    circles = [c for c in _strongly_connected_components(graph) if len(c) > 1]
    described = ["  " + " -> ".join(_a_cycle_through(graph, c)) + f"  ({len(c)} modules)"
                 for c in circles]
    assert not circles, "tfrl modules import each other in a circle:\n" + "\n".join(described)


def test_cycle_finder_finds_a_circle():
    class Graph:  # a -> b -> c -> a, c -> d
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}

        def find_modules_directly_imported_by(self, module):
            return self.edges[module]

    graph = Graph()
    components = _strongly_connected_components(graph)
    assert sorted(components) == [["a", "b", "c"], ["d"]]
    assert _a_cycle_through(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


# In-function imports of tfrl modules that are allowed: each defers a heavy optional
# dependency (TensorFlow for a TF-free start, or Ray) and says so in a comment.
ALLOWED_FUNCTION_IMPORTS = {
    ("tfrl/backends/__init__.py", "tfrl.backends.ray.remote_env"),  # Ray
    ("tfrl/backends/__init__.py", "tfrl.backends.ray.worker"),  # Ray
    ("tfrl/cli/commands.py", "tfrl.cli.train_callbacks"),  # TensorFlow (CLI start-up)
    ("tfrl/cli/commands.py", "tfrl.utils.progress_callbacks"),  # TensorFlow (CLI start-up)
    ("tfrl/cli/commands.py", "tfrl.utils.tensorboard"),  # TensorFlow (CLI start-up)
    ("tfrl/cli/experiment.py", "tfrl.models.catalog"),  # TensorFlow (CLI start-up)
    ("tfrl/cli/main.py", "tfrl.cli.sweep_run"),  # Ray Tune (only `tfrl tune` needs it)
    ("tfrl/evaluation/sampling/loop_core.py", "tfrl.utils.tf_run_builder"),  # TensorFlow
    # TensorFlow: the env layer imports tfrl.offline, which stays TF-free until a
    # TFRecord input or output is configured.
    ("tfrl/offline/input_creators.py", "tfrl.offline.tfrecord"),
    ("tfrl/offline/output_creators.py", "tfrl.offline.tfrecord"),
}


def _function_imports_of_tfrl():
    """(path, module, line, comment) of every tfrl import inside a function."""
    found = []
    for path in sorted(TFRL.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for func in ast.walk(ast.parse(source)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules = [node.module or ""]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                for module in modules:
                    if module == "tfrl" or module.startswith("tfrl."):
                        line = node.lineno
                        comment = " ".join(lines[i] for i in (line - 2, line - 1)
                                           if "#" in lines[i])
                        found.append((str(path.relative_to(REPO_ROOT)), module, line, comment))
    return sorted(set(found))


def test_imports_inside_functions_only_defer_tensorflow_or_ray():
    found = _function_imports_of_tfrl()
    unexpected = [f"{p}:{line}: from {m} import ..." for p, m, line, _ in found
                  if (p, m) not in ALLOWED_FUNCTION_IMPORTS]
    assert not unexpected, (
        "Imports inside functions (move them to the module top; if that makes a circle, "
        "a name sits in the wrong layer):\n" + "\n".join(unexpected))
    assert {(p, m) for p, m, _, _ in found} == ALLOWED_FUNCTION_IMPORTS, (
        "An allowed deferred import is gone: drop it from ALLOWED_FUNCTION_IMPORTS.")
    uncommented = [f"{p}:{line}" for p, m, line, comment in found
                   if not any(word in comment for word in ("TensorFlow", "Ray"))]
    assert not uncommented, ("Deferred imports must say what they defer (TensorFlow or Ray) "
                             "in a comment on or above the line: " + ", ".join(uncommented))


def _run_python(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=REPO_ROOT, env=_env_with_repo_on_path(), timeout=300)


def test_data_and_env_layers_import_without_tensorflow_or_ray():
    run = _run_python("""
        import sys
        import tfrl.data, tfrl.data.sample_batch, tfrl.data.single_agent_episode
        import tfrl.data.infinite_lookback_buffer, tfrl.data.rollout_metrics
        import tfrl.env.base_env, tfrl.env.single_agent_episode
        import tfrl.env.utils.infinite_lookback_buffer, tfrl.policy.sample_batch
        import tfrl.evaluation.rollout_metrics, tfrl.utils.backend_registry
        print(sorted(m for m in ("tensorflow", "ray") if m in sys.modules))
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_rllib_paths_re_export_the_data_layer():
    from tfrl.algorithms.callbacks import DefaultCallbacks, make_multi_callbacks
    from tfrl.data import rollout_metrics, sample_batch, single_agent_episode
    from tfrl.data.infinite_lookback_buffer import InfiniteLookbackBuffer
    from tfrl.env.single_agent_episode import SingleAgentEpisode
    from tfrl.env.utils import infinite_lookback_buffer
    from tfrl.evaluation import callbacks
    from tfrl.evaluation.rollout_metrics import RolloutMetrics
    from tfrl.policy import multi_agent_batch
    from tfrl.policy import sample_batch as policy_sample_batch

    assert policy_sample_batch.SampleBatch is sample_batch.SampleBatch
    assert policy_sample_batch.MultiAgentBatch is sample_batch.MultiAgentBatch
    assert multi_agent_batch.MultiAgentBatch is sample_batch.MultiAgentBatch
    assert policy_sample_batch.concat_samples is sample_batch.concat_samples
    assert policy_sample_batch.DEFAULT_POLICY_ID == "default_policy"
    assert SingleAgentEpisode is single_agent_episode.SingleAgentEpisode
    assert infinite_lookback_buffer.InfiniteLookbackBuffer is InfiniteLookbackBuffer
    assert RolloutMetrics is rollout_metrics.RolloutMetrics
    assert DefaultCallbacks is callbacks.DefaultCallbacks
    assert make_multi_callbacks is callbacks.make_multi_callbacks


def test_backends_are_registered_by_import_tfrl_without_importing_ray():
    run = _run_python("""
        import sys, tfrl
        from tfrl.utils import backend_registry as r
        print(r.registered_backends(r.REMOTE_ENV_POOL), r.registered_backends(r.REMOTE_WORKER),
              "ray" in sys.modules)
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['ray'] ['ray'] False"


def test_load_backend_names_the_registered_backends():
    from tfrl.utils.backend_registry import REMOTE_ENV_POOL, load_backend

    with pytest.raises(ValueError, match=r"No remote_env_pool backend named 'dask' is "
                                         r"registered; registered: \['ray'\]"):
        load_backend(REMOTE_ENV_POOL, "dask")


def test_base_env_to_base_env_needs_the_converter_of_tfrl_env_base_env():
    # The interface module alone (tfrl.env is lazy, so tfrl.env.base_env stays unloaded).
    run = _run_python("""
        import sys
        from tfrl.env.base_env_interface import BaseEnv
        assert "tfrl.env.base_env" not in sys.modules
        try:
            BaseEnv.to_base_env(object())
        except RuntimeError as e:
            print(e)
    """)
    assert run.returncode == 0, run.stderr
    assert "BaseEnv.to_base_env() needs the env converter of tfrl.env.base_env" in run.stdout
    import gymnasium as gym

    from tfrl.env.base_env import BaseEnv, convert_to_base_env
    from tfrl.env.vector_env_to_base_env import _VectorEnvToBaseEnv

    base = BaseEnv.to_base_env(gym.make("CartPole-v1"), num_envs=2,
                               make_env=lambda i: gym.make("CartPole-v1"))
    assert isinstance(base, _VectorEnvToBaseEnv)
    assert sorted(base.try_reset(seed=0)[0]) == [0, 1]
    assert isinstance(convert_to_base_env(gym.make("CartPole-v1")), _VectorEnvToBaseEnv)


def _private_writes_to_other_objects(path):
    """`x._field = ...` (or `x._field[k] = ...`, `x._field += ...`) with x not self/cls."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if not isinstance(target, ast.Attribute):
                continue
            private = target.attr.startswith("_") and not target.attr.startswith("__")
            owner = target.value
            own = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            if private and not own:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: "
                             f"{ast.unparse(target)}")
    return found


def test_data_and_env_write_no_other_objects_private_fields():
    found = [w for package in ("data", "env")
             for path in sorted((TFRL / package).rglob("*.py"))
             for w in _private_writes_to_other_objects(path)]
    assert not found, ("A module writes another object's private fields (make it a method "
                       "of the owner):\n" + "\n".join(found))


def test_utils_replay_buffers_only_re_exports_the_execution_layer():
    # RLlib's path `ray.rllib.utils.replay_buffers` sits in the bottom layer, but the
    # buffers need SampleBatch: the code is in tfrl.execution.replay_buffers, and the
    # contract's listed exception holds only if these modules define nothing themselves
    # and nothing in tfrl imports them (so no layer below execution reaches up through
    # them).
    import importlib

    package = TFRL / "utils" / "replay_buffers"
    for path in sorted(package.glob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node in body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            re_export = (isinstance(node, ast.ImportFrom) and node.module is not None
                         and node.module.startswith("tfrl.execution.replay_buffers."))
            names = (isinstance(node, ast.Assign)
                     and [ast.unparse(t) for t in node.targets] == ["__all__"])
            assert docstring or re_export or names, (
                f"{path.relative_to(REPO_ROOT)}:{node.lineno} does more than re-export "
                f"tfrl.execution.replay_buffers: {ast.unparse(node)}")
        module = importlib.import_module(
            "tfrl.utils.replay_buffers" + ("" if path.stem == "__init__" else f".{path.stem}"))
        imported = set()
        for node in body:
            if isinstance(node, ast.ImportFrom):
                source = importlib.import_module(node.module)
                for alias in node.names:
                    name = alias.asname or alias.name
                    assert getattr(module, name) is getattr(source, alias.name)
                    imported.add(name)
        assert set(module.__all__) == imported, module.__name__
    graph = grimp.build_graph("tfrl", cache_dir=None)
    importers = {m for m in graph.modules if not m.startswith("tfrl.utils.replay_buffers")
                 for imported in graph.find_modules_directly_imported_by(m)
                 if imported.startswith("tfrl.utils.replay_buffers")}
    assert not importers, f"tfrl modules import the RLlib-path shim: {sorted(importers)}"


@pytest.mark.parametrize("stem", ["policy_server_input", "policy_client"])
def test_env_serving_paths_only_re_export_the_serving_layer(stem):
    # RLlib's paths `ray.rllib.env.policy_server_input` / `.policy_client` sit in the env
    # layer, but the server and client live in tfrl.serving (above evaluation). The
    # contract's listed exception holds only if these modules define nothing themselves
    # and nothing in tfrl imports them.
    import importlib

    path = TFRL / "env" / f"{stem}.py"
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for node in body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        re_export = isinstance(node, ast.ImportFrom) and node.module == f"tfrl.serving.{stem}"
        names = (isinstance(node, ast.Assign)
                 and [ast.unparse(t) for t in node.targets] == ["__all__"])
        assert docstring or re_export or names, (
            f"{path.relative_to(REPO_ROOT)}:{node.lineno} does more than re-export "
            f"tfrl.serving.{stem}: {ast.unparse(node)}")
    module = importlib.import_module(f"tfrl.env.{stem}")
    source = importlib.import_module(f"tfrl.serving.{stem}")
    for name in module.__all__:
        assert getattr(module, name) is getattr(source, name)
    graph = grimp.build_graph("tfrl", cache_dir=None)
    assert not graph.find_modules_that_directly_import(f"tfrl.env.{stem}")
