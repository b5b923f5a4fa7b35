"""examples/data_layer_demo.py runs, at a tiny budget, in a fresh interpreter.

The other examples are run by tests/test_examples_smoke.py.
"""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args, timeout=120):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO_ROOT)
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "examples", script), *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_data_layer_demo():
    out = _run("data_layer_demo.py", "--episodes=3", "--fragment_length=8",
               "--minibatch_size=8", "--epochs=2")
    assert "episode   3/3" in out
    assert "split_by_episode: 3 episodes" in out
    assert "and back, exact" in out
    assert "over 2 epochs" in out
