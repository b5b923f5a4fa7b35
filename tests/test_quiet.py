"""tfrl.utils.quiet: `import tfrl` hides TensorFlow's and CUDA's start-up notices unless the
user asks for them (`TFRL_VERBOSE=1`, their own `TF_CPP_MIN_LOG_LEVEL` below 2, the
CLI's `--verbose`), and Ray actors get the driver's setting."""

import json
import os
import subprocess
import sys

import pytest

from tfrl.utils import quiet

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The lines TensorFlow 2.20 printed on this machine (no GPU, AVX2) for
# `import tensorflow as tf; tf.constant(1)` without tfrl.
TF_NOTICES = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795852425.853563   20700 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
I0000 00:00:1795852426.043431   20700 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795852429.771872   20700 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
E0000 00:00:1795852431.866180   20700 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)
"""  # noqa: E501


def _env(**extra):
    """This process's environment without the variables that choose the verbosity."""
    env = {k: v for k, v in os.environ.items()
           if k not in (quiet.TF_LOG_LEVEL_VAR, quiet.VERBOSE_ENV_VAR)}
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def _run(code, timeout=300, **extra):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(**extra), cwd=REPO_ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_filter_drops_every_start_up_notice_and_keeps_other_lines():
    assert quiet.filter_notices(TF_NOTICES) == ""
    other = ("Traceback (most recent call last):\nValueError: bad\n"
             "E0000 00:00:17.5   1 some_kernel.cc:3] a real error\n"
             "W0000 00:00:17.5   1\n")
    assert quiet.filter_notices(TF_NOTICES + other) == other


@pytest.mark.slow  # a fresh interpreter imports TensorFlow
def test_import_tfrl_then_tensorflow_prints_nothing_on_stderr():
    proc = _run("import tfrl; import tensorflow as tf; tf.constant(1); "
                "import os, sys; print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), "
                "type(sys.modules['tensorflow'].__spec__.loader).__name__)")
    assert proc.stderr == ""
    # tfrl set the level (nobody had), and TensorFlow keeps its own loader.
    assert proc.stdout.split() == ["3", "SourceFileLoader"]


def test_real_stderr_output_while_filtered_still_shows():
    # What is written to file descriptor 2 while TensorFlow loads goes through the filter:
    # notices are dropped, anything else (a real warning or error) is written back.
    code = ("import os\n"
            "from tfrl.utils.quiet import FilteredStderr\n"
            "with FilteredStderr():\n"
            "    os.write(2, b'I0000 00:00:1.5   7 cudart_stub.cc:31] Could not find cuda\\n')\n"
            "    os.write(2, b'a real problem\\n')\n")
    assert _run(code, timeout=120).stderr == "a real problem\n"


def _probe(**extra):
    """The quiet state after `import tfrl` in a fresh interpreter (TensorFlow not loaded)."""
    code = ("import json, os, sys, tfrl\n"
            "from tfrl.utils import quiet\n"
            "hooked = lambda: any(type(f).__name__ == '_QuietTensorFlowFinder' "
            "for f in sys.meta_path)\n"
            "state = {'level': os.environ.get('TF_CPP_MIN_LOG_LEVEL'), 'hook': hooked(),\n"
            "         'workers': quiet.worker_env_vars(), 'tf': 'tensorflow' in sys.modules}\n"
            "quiet.set_verbose(True)\n"
            "state.update(verbose_level=os.environ.get('TF_CPP_MIN_LOG_LEVEL'),\n"
            "             verbose_hook=hooked(), verbose_workers=quiet.worker_env_vars())\n"
            "quiet.set_verbose(False)\n"
            "state.update(again_level=os.environ.get('TF_CPP_MIN_LOG_LEVEL'),\n"
            "             again_hook=hooked())\n"
            "print(json.dumps(state))\n")
    return json.loads(_run(code, timeout=120, **extra).stdout)


def test_import_tfrl_sets_the_level_only_if_unset_and_hooks_tensorflow():
    state = _probe()
    assert state == {
        "level": "3", "hook": True, "workers": {"TF_CPP_MIN_LOG_LEVEL": "3"}, "tf": False,
        # --verbose (set_verbose(True)) takes back what tfrl set; workers get the choice.
        "verbose_level": None, "verbose_hook": False,
        "verbose_workers": {"TFRL_VERBOSE": "1"},
        "again_level": "3", "again_hook": True}


@pytest.mark.parametrize("extra, level, hook, workers, verbose_level", [
    # The user asks for the notices ...
    ({"TFRL_VERBOSE": "1"}, None, False, {"TFRL_VERBOSE": "1"}, None),
    # ... or not.
    ({"TFRL_VERBOSE": "0"}, "3", True, {"TF_CPP_MIN_LOG_LEVEL": "3", "TFRL_VERBOSE": "0"},
     None),
    # The user's own level below 2 asks for them; any level the user set stays as set.
    ({"TF_CPP_MIN_LOG_LEVEL": "0"}, "0", False, {"TF_CPP_MIN_LOG_LEVEL": "0"}, "0"),
    ({"TF_CPP_MIN_LOG_LEVEL": "2"}, "2", True, {"TF_CPP_MIN_LOG_LEVEL": "2"}, "2"),
])
def test_the_user_chooses(extra, level, hook, workers, verbose_level):
    state = _probe(**extra)
    assert (state["level"], state["hook"], state["workers"]) == (level, hook, workers)
    assert state["verbose_level"] == verbose_level


def test_ray_actors_get_the_drivers_setting_in_their_runtime_env(monkeypatch):
    pytest.importorskip("ray")
    import tfrl.backends.ray as ray_backend
    from tfrl.backends.ray import worker

    created = {}

    class FakeActorClass:
        @staticmethod
        def options(**options):
            created["options"] = options
            return FakeActorClass

        @staticmethod
        def remote(factory):
            return "actor"

    # A Ray runtime the user started (not tfrl): each actor carries the setting.
    monkeypatch.setattr(worker, "_RemoteWorkerActor", FakeActorClass)
    monkeypatch.setattr(worker, "init_ray", lambda: False)
    monkeypatch.setattr(worker, "_warn_if_unschedulable", lambda *args: None)
    monkeypatch.setitem(ray_backend._started, "by_tfrl", False)
    monkeypatch.setenv(quiet.TF_LOG_LEVEL_VAR, "3")
    monkeypatch.delenv(quiet.VERBOSE_ENV_VAR, raising=False)
    monkeypatch.setitem(quiet._state, "verbose", False)
    worker.RayWorkerHandle.create(lambda: None, 1, num_cpus=0.5)
    assert created["options"]["runtime_env"] == {"env_vars": {"TF_CPP_MIN_LOG_LEVEL": "3"}}
    monkeypatch.setenv(quiet.VERBOSE_ENV_VAR, "1")
    monkeypatch.delenv(quiet.TF_LOG_LEVEL_VAR)
    assert ray_backend.actor_runtime_env() == {"env_vars": {"TFRL_VERBOSE": "1"}}


def test_init_ray_puts_the_setting_in_the_job_runtime_env(monkeypatch):
    pytest.importorskip("ray")
    import tfrl.backends.ray as ray_backend

    calls = []
    monkeypatch.setattr(ray_backend.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_backend.ray, "init", lambda **kwargs: calls.append(kwargs))
    monkeypatch.setitem(ray_backend._started, "by_tfrl", False)
    monkeypatch.setenv(quiet.TF_LOG_LEVEL_VAR, "3")
    monkeypatch.delenv(quiet.VERBOSE_ENV_VAR, raising=False)
    monkeypatch.setitem(quiet._state, "verbose", False)
    assert ray_backend.init_ray(runtime_env={"env_vars": {"MINE": "1"}}) is True
    assert calls == [{"include_dashboard": False, "runtime_env": {
        "env_vars": {"TF_CPP_MIN_LOG_LEVEL": "3", "MINE": "1"}}}]
