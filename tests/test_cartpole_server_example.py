"""examples/cartpole_server.py + examples/cartpole_client.py as two processes.

The server trains PPO for a tiny step budget from the episodes the client plays; the
test checks the server's progress lines and final line, and that the client connects
and exits cleanly once the server is gone.
"""

import os
import re
import socket
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 300  # per process; generous for a loaded shared machine
STEPS = 600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def example(script, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO_ROOT,
               CUDA_VISIBLE_DEVICES="", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1",
               OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "examples", script),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO_ROOT)


def finish(proc, name):
    """(stdout, stderr) of `proc`; kills it (and fails) if it runs past TIMEOUT_S."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"{name} ran longer than {TIMEOUT_S} s:\n{out[-2000:]}\n{err[-3000:]}")
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}:\n{out}\n{err[-4000:]}"
    return out, err


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["remote", "local"])
def test_cartpole_server_and_client(mode):
    port = free_port()
    server = example("cartpole_server.py", "--port", str(port), "--stop-timesteps",
                     str(STEPS), "--stop-reward", "1e9")
    client = example("cartpole_client.py", "--port", str(port), "--inference-mode", mode,
                     "--connect-timeout", "240", "--print-every", "5")
    try:
        out, _ = finish(server, "cartpole_server.py")
        client_out, _ = finish(client, "cartpole_client.py")
    finally:
        for proc in (server, client):
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    assert f"policy server listening on 127.0.0.1:{port}" in out.splitlines()
    iters = [re.fullmatch(r"iter (\d+)  timesteps (\d+)  reward (nan|\d+\.\d\d)  episodes "
                          r"(\d+)  loss (-?\d+\.\d+)", line) for line in out.splitlines()
             if line.startswith("iter ")]
    assert iters and all(iters), out
    assert [int(m.group(1)) for m in iters] == list(range(1, len(iters) + 1))
    steps = [int(m.group(2)) for m in iters]
    assert steps[0] >= 256 and steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[-1] >= STEPS and steps[-2] < STEPS  # stopped at the budget, not before
    # The client's episodes were reported: a mean return of at least 8 (CartPole's
    # shortest episode) by the last iteration.
    assert int(iters[-1].group(4)) > 0 and float(iters[-1].group(3)) >= 8
    match = re.search(r"^done: budget spent after (\d+) timesteps; mean return (\d+\.\d\d)",
                      out, re.M)
    assert match and int(match.group(1)) == steps[-1], out
    assert f"client: connected to 127.0.0.1:{port} (inference_mode={mode})" in client_out
    assert re.search(r"^episode 5  return \d+  mean\(last 20\) \d+\.\d$", client_out, re.M)
    assert "client: the policy server is gone after" in client_out
