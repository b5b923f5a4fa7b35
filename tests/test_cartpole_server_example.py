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


def free_ports(n):
    """`n` consecutive ports that are free right now."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            for port in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {n} consecutive free ports found")


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


def run_pair(mode, num_workers=0):
    """Runs the server and one client per server port; returns their outputs."""
    port = free_ports(max(num_workers, 1))
    server = example("cartpole_server.py", "--port", str(port), "--stop-timesteps",
                     str(STEPS), "--stop-reward", "1e9", "--num-workers", str(num_workers))
    clients = [example("cartpole_client.py", "--port", str(port + i), "--inference-mode", mode,
                       "--connect-timeout", "240", "--print-every", "5", "--seed", str(100 * i))
               for i in range(max(num_workers, 1))]
    try:
        out, _ = finish(server, "cartpole_server.py")
        client_outs = [finish(c, "cartpole_client.py")[0] for c in clients]
    finally:
        for proc in (server, *clients):
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    return port, out, client_outs


def check_server_output(out, ports):
    for port in ports:
        assert f"policy server listening on 127.0.0.1:{port}" in out.splitlines(), out
    iters = [re.fullmatch(r"iter +(\d+)  steps +(\d+)  reward +(nan|\d+\.\d\d)  episodes "
                          r"(\d+)  loss (-?\d+\.\d+)", line) for line in out.splitlines()
             if line.startswith("iter ")]
    assert iters and all(iters), out
    assert [int(m.group(1)) for m in iters] == list(range(1, len(iters) + 1))
    # The mean return is nan only while no episode has finished: once a client episode
    # was reported (episodes_total > 0), every later iteration has a number.
    episodes = [int(m.group(4)) for m in iters]
    assert episodes == sorted(episodes), out
    for m in iters:
        assert (m.group(3) == "nan") == (int(m.group(4)) == 0), m.group(0)
    steps = [int(m.group(2)) for m in iters]
    assert steps[0] >= 256 and steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[-1] >= STEPS and steps[-2] < STEPS  # stopped at the budget, not before
    # The client's episodes were reported: a mean return of at least 8 (CartPole's
    # shortest episode) by the last iteration.
    assert int(iters[-1].group(4)) > 0 and float(iters[-1].group(3)) >= 8
    match = re.search(r"^done: budget spent after (\d+) timesteps; mean return (\d+\.\d\d)",
                      out, re.M)
    assert match and int(match.group(1)) == steps[-1], out


def check_client_output(out, port, mode):
    assert f"client: connected to 127.0.0.1:{port} (inference_mode={mode})" in out
    assert re.search(r"^episode 5  return \d+  mean\(last 20\) \d+\.\d$", out, re.M), out
    assert "client: the policy server is gone after" in out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["remote", "local"])
def test_cartpole_server_and_client(mode):
    port, out, (client_out,) = run_pair(mode)
    check_server_output(out, [port])
    check_client_output(client_out, port, mode)


@pytest.mark.slow
def test_cartpole_server_with_two_workers_and_two_clients():
    port, out, client_outs = run_pair("local", num_workers=2)
    check_server_output(out, [port, port + 1])
    for i, client_out in enumerate(client_outs):
        check_client_output(client_out, port + i, "local")


def _server_lines(*iters):
    lines = ["policy server listening on 127.0.0.1:9900"]
    lines += [f"iter {i:3d}  steps {steps:5d}  reward {reward:>6}  episodes {eps}  loss 0.123"
              for i, (steps, reward, eps) in enumerate(iters, 1)]
    return "\n".join(lines + ["done: budget spent after 768 timesteps; mean return 21.00 "
                               "(3.0 s)"])


def test_server_output_check_allows_nan_only_before_the_first_episode():
    """The check the slow tests apply, on made-up server output (fast)."""
    check_server_output(_server_lines((256, "nan", 0), (512, "18.00", 3), (768, "21.00", 5)),
                        [9900])
    with pytest.raises(AssertionError, match="reward    nan  episodes 3"):
        check_server_output(_server_lines((256, "nan", 0), (512, "nan", 3), (768, "21.00", 5)),
                            [9900])
    with pytest.raises(AssertionError, match="reward  12.00  episodes 0"):  # a mean of nothing
        check_server_output(_server_lines((256, "12.00", 0), (512, "18.00", 3),
                                          (768, "21.00", 5)), [9900])
    with pytest.raises(AssertionError):  # the final check stays: a number at the end
        check_server_output(_server_lines((256, "nan", 0), (512, "nan", 0), (768, "nan", 0)),
                            [9900])
