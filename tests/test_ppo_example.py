"""examples/ppo_cartpole.py runs at a tiny budget and prints progress lines."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_ppo_cartpole_example_smoke():
    env = dict(os.environ, TFRL_EXAMPLE_STEPS="2560", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "examples", "ppo_cartpole.py")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("iter  10  steps   2560  reward"), proc.stdout
    assert "steps/s" in lines[0]
    assert lines[-1].startswith("Step budget of 2560 spent"), proc.stdout
