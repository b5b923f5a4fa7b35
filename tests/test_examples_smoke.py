"""Every example in examples/ runs at its tiny budget (`--smoke`) in a fresh interpreter.

Each test checks what the example prints (numbers in its progress and final lines),
not only its exit code. The quick examples run two at a time (one per core): each starts
when its test asks for it, with the next test's started alongside (QuickRuns); most of
each run is TensorFlow's start-up, which a second process overlaps. The slow ones
(multi-device learning, Ray workers) run on their own.
"""

import concurrent.futures
import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 600  # per example; generous for a loaded shared machine
PARALLEL = 2

# test name -> (script, arguments) of the examples run in the shared pool.
QUICK = {
    "test_custom_keras_model": ("custom_keras_model.py", ["--smoke"]),
    "test_multi_agent": ("multi_agent.py", ["--smoke"]),
    "test_custom_callbacks_metrics": ("custom_callbacks_metrics.py", ["--smoke"]),
    "test_rollout_worker_basics": ("rollout_worker_basics.py", ["--smoke"]),
    "test_saved_model_serving": ("saved_model_serving.py", ["--smoke"]),
    "test_external_env_http": ("external_env_http.py", ["--smoke"]),
    "test_ppo_cartpole": ("ppo_cartpole.py", ["--steps", "512"]),
    "test_cartpole_offline": ("offline/cartpole_offline.py", ["--smoke"]),
    "test_pendulum_offline": ("offline/pendulum_offline.py", ["--smoke"]),
}
# Examples that need an optional extra run only where it is installed.
if importlib.util.find_spec("pettingzoo") and importlib.util.find_spec("mpe2"):
    QUICK["test_pettingzoo_mpe"] = ("pettingzoo_mpe.py", ["--smoke"])


# Markers of TensorFlow's C++ start-up notices, which the examples hide (quiet_tensorflow),
# and of its Python warning about frequent retracing (tfrl's per-policy compiled functions
# each trace once; an example that builds several policies must not trigger it).
NOTICES = ("oneDNN", "cpu_feature_guard", "TF_ENABLE_ONEDNN_OPTS", "cudart",
           "absl::InitializeLog", "triggered tf.function retracing")


def run_example(script, args):
    """Runs examples/<script>; returns (stdout, seconds). Fails the test on exit != 0, or
    if TensorFlow's start-up notices show (TF_CPP_MIN_LOG_LEVEL is left to the example)."""
    # One TF thread pool thread each: two examples share two cores without oversubscribing.
    env = dict(os.environ, PYTHONPATH=REPO_ROOT,
               CUDA_VISIBLE_DEVICES="", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1",
               OMP_NUM_THREADS="1")
    for name in ("TFRL_EXAMPLE_SMOKE", "TFRL_EXAMPLE_STEPS", "TF_CPP_MIN_LOG_LEVEL"):
        env.pop(name, None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                          cwd=REPO_ROOT)
    took = time.monotonic() - start
    if proc.returncode != 0:
        pytest.fail(f"examples/{script} {' '.join(args)} exited with {proc.returncode}:\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    notices = [line for line in (proc.stdout + proc.stderr).splitlines()
               if any(n in line for n in NOTICES)]
    assert notices == [], f"examples/{script} printed TensorFlow's notices: {notices}"
    return proc.stdout, took


class QuickRuns:
    """The quick examples of the selected tests (`names`, in the order the tests run),
    each started when its test asks for it, with the next one started alongside: two run
    at a time.

    Not all of them up front: under pytest-xdist every worker's session holds every test,
    while a worker runs only some of them (with `--dist worksteal` a module may be split
    between workers): a worker that started all of them would also run, and wait for,
    the other worker's examples. Here a worker starts at most one it does not need.
    """

    def __init__(self, names):
        self.names = names
        self.pool = concurrent.futures.ThreadPoolExecutor(PARALLEL)
        self.futures = {}

    def _start(self, name):
        if name not in self.futures:
            self.futures[name] = self.pool.submit(run_example, *QUICK[name])

    def __getitem__(self, name):
        self._start(name)
        later = self.names[self.names.index(name) + 1:]
        if later:
            self._start(later[0])
        return self.futures[name]

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def quick_runs(request):
    """The quick examples whose tests are selected in this session (see QuickRuns)."""
    names = [item.originalname or item.name for item in request.session.items]
    runs = QuickRuns([name for i, name in enumerate(names)  # in the order they run
                      if name in QUICK and name not in names[:i]])
    yield runs
    runs.close()


def output_of(quick_runs, name):
    out, took = quick_runs[name].result()
    print(f"{QUICK[name][0]}: {took:.1f} s")
    return out


def line(out, pattern):
    """The match of the first line of `out` matching `pattern` (fails if none)."""
    for text in out.splitlines():
        match = re.search(pattern, text)
        if match:
            return match
    pytest.fail(f"No line matches {pattern!r} in:\n{out}")


# A finite decimal number: "nan" (a return that is not a number) fails the match. Every
# number a test reads goes through it; the one row that legitimately prints "nan" (no
# episode finished yet) spells it out (test_pettingzoo_mpe).
NUMBER = r"(-?\d+(?:\.\d+)?)"


def test_custom_keras_model(quick_runs):
    out = output_of(quick_runs, "test_custom_keras_model")
    # custom_model_config={"hidden": 32}: two towers of 2 x Dense(32) plus heads
    # (4*32+32 + 32*32+32) * 2 + (32*2+2) + (32+1) = 2531; the default 64 would differ.
    line(out, r"^policy model: TwoTowerModel \(in a \w+\), 2531 trainable parameters$")
    assert len(re.findall(rf"^iter +\d+ +steps +\d+ +reward +{NUMBER}$", out, re.M)) == 2
    line(out, r"^done: 2 iterations, 256 steps, reward " + NUMBER
         + r", greedy action for a sample obs: [01], ")


def test_cartpole_offline(quick_runs):
    out = output_of(quick_runs, "test_cartpole_offline")
    for part in ("expert", "mixed"):
        line(out, rf"^{part} +\d+ episodes +\d+ steps mean return {NUMBER}$")
    for algo, data in (("BC", "expert"), ("BC", "mixed"), ("MARWIL", "mixed")):
        line(out, rf"^{algo} +on {data} *: rollouts +{NUMBER}; estimated discounted value "
                  rf"from the mixed data: is {NUMBER}, wis {NUMBER}, dr {NUMBER}$")
    line(out, rf"^CQL +on mixed : rollouts +{NUMBER} after \d+ gradient steps \(discrete CQL "
              r"on DQN\)$")
    line(out, r"^done: data in ")


def test_pendulum_offline(quick_runs):
    out = output_of(quick_runs, "test_pendulum_offline")
    line(out, rf"^data +5 episodes +1000 steps mean return {NUMBER}$")
    line(out, rf"^CQL: rollouts {NUMBER} after 50 gradient steps$")
    line(out, rf"^BC : rollouts {NUMBER}$")
    line(out, r"^done: data in ")


def test_multi_agent(quick_runs):
    out = output_of(quick_runs, "test_multi_agent")
    # "reward" (summed over the agents), then the mean return of each policy.
    rows = re.findall(rf"^iter +(\d+) +steps +(\d+) +reward +{NUMBER} +learner reward +{NUMBER} "
                      rf"+frozen reward +{NUMBER}$", out, re.M)
    assert [(int(i), int(s)) for i, s, _, _, _ in rows] == [(1, 128), (2, 256)]
    assert all(float(r) > 0 for _, _, _, a, b in rows for r in (a, b))  # both policies act
    line(out, r"^done: trained policies \['learner'\], learner weights changed: True, "
              r"frozen weights changed: False$")


def test_custom_callbacks_metrics(quick_runs):
    out = output_of(quick_runs, "test_custom_callbacks_metrics")
    rows = re.findall(rf"pole_angle_mean {NUMBER}  pole_angle_max {NUMBER}  "
                      rf"mean_reward_in_batch {NUMBER}  sampled_batches (\d+)$", out, re.M)
    assert len(rows) == 2
    for i, (mean, high, batch_reward, batches) in enumerate(rows):
        assert 0 < float(mean) <= float(high) < 0.21  # CartPole ends at 0.2095 rad
        assert float(batch_reward) == 1.0  # CartPole pays 1 per step
        assert int(batches) == i + 1
    match = line(out, r"^done: custom_metrics keys \['pole_angle_max', 'pole_angle_mean', "
                      r"'pole_angle_min'\], (\d+) pole angles in hist_stats")
    assert int(match.group(1)) > 0


def test_rollout_worker_basics(quick_runs):
    out = output_of(quick_runs, "test_rollout_worker_basics")
    columns = line(out, r"^sampled 128 steps; columns: (.*)$").group(1)
    for column in ("'advantages'", "'value_targets'", "'vf_preds'", "'action_logp'"):
        assert column in columns
    rows = re.findall(rf"^iter +\d+ +steps +128 +episodes +(\d+) +reward +{NUMBER} +total_loss "
                      rf"+{NUMBER} ", out, re.M)
    assert len(rows) == 2 and all(int(n) > 0 and float(r) > 0 for n, r, _ in rows)
    line(out, r"^done: 2 iterations; greedy action [01], value estimate -?\d+\.\d+ ")


def test_saved_model_serving(quick_runs):
    out = output_of(quick_runs, "test_saved_model_serving")
    line(out, r"^signatures: \['action_dist_inputs', 'deterministic_action', 'serving_default', "
              r"'stochastic_action', 'value'\]$")
    line(out, r"^served actions equal the algorithm's greedy actions: True ")
    match = line(out, r"^done: served episode return (\d+\.\d), value of a probe observation")
    assert 8 <= float(match.group(1)) <= 500


def test_external_env_http(quick_runs):
    out = output_of(quick_runs, "test_external_env_http")
    line(out, r"^policy server listening on 127\.0\.0\.1:\d+$")
    # Later rows print "nan" for an iteration in which no client episode ended; the first
    # has episodes (checked below), so a finite reward and loss.
    first = line(out, rf"^iter +1 +steps +(\d+) +client episodes +(\d+) +reward +{NUMBER} "
                      rf"+total_loss +{NUMBER}$")
    assert int(first.group(1)) >= 128 and int(first.group(2)) > 0
    match = line(out, r"^done: trained on (\d+) steps sent by HTTP clients in 2 iterations$")
    assert int(match.group(1)) >= 256


def test_ppo_cartpole(quick_runs):
    out = output_of(quick_runs, "test_ppo_cartpole")
    # Every 10th iteration and the last: 512 steps are 2 iterations of 256.
    last = line(out, rf"^iter +2  steps +512  reward +{NUMBER} +\d+ steps/s  elapsed "
                     r"\d:\d\d:\d\d  ETA 0:00:00$")
    match = line(out, rf"^Step budget of 512 spent; mean return {NUMBER} \(solved at 475\)")
    assert float(match.group(1)) == float(last.group(1)) > 0


def test_pettingzoo_mpe(quick_runs):
    pytest.importorskip("pettingzoo")
    pytest.importorskip("mpe2")
    out = output_of(quick_runs, "test_pettingzoo_mpe")
    baseline = float(line(out, rf"^random actions: team return {NUMBER}$").group(1))
    assert -200 < baseline < 0  # simple_spread pays distances and collisions: negative
    # 128 steps in 8 envs finish no 25-step episode: the first row has no return yet.
    line(out, r"^iter +1 +steps +128 +reward +nan +agent_0 +nan +agent_1 +nan$")
    rows = re.findall(rf"^iter +(\d+) +steps +(\d+) +reward +{NUMBER} +agent_0 +{NUMBER} "
                      rf"+agent_1 +{NUMBER}$", out, re.M)
    assert [(int(i), int(s)) for i, s, _, _, _ in rows] == [(2, 256)]
    match = line(out, rf"^done: team return {NUMBER} after 256 env steps \(random actions "
                      rf"{NUMBER}, [+-]\d+\.\d+\); trained policies \['agent_0', 'agent_1'\]$")
    assert float(match.group(2)) == baseline
    # Episodes last 25 steps: 256 steps in 8 envs finish 8 of them, whose team return is
    # the sum of the two agents' returns.
    _, _, _, a0, a1 = rows[-1]
    assert float(match.group(1)) == pytest.approx(float(a0) + float(a1), abs=0.02)


@pytest.mark.slow
def test_multi_device_learning():
    out, took = run_example("multi_device_learning.py", ["--smoke"])
    print(f"multi_device_learning.py: {took:.1f} s")
    line(out, r"^policy strategy: MirroredStrategy with 2 replicas on \[.*CPU:0', .*CPU:1'\]$")
    diff = float(line(out, r"max weight difference (\S+)$").group(1))
    assert diff < 1e-5  # the same update on one device and on two replicas
    line(out, rf"^iter +1 +steps +128 +reward +{NUMBER} ")
    line(out, r"^done: 1 iterations on 2 replicas")


@pytest.mark.slow
@pytest.mark.ray
def test_ray_workers():
    pytest.importorskip("ray")
    out, took = run_example("ray_workers.py", ["--smoke"])
    print(f"ray_workers.py: {took:.1f} s")
    pids = line(out, r"driver pid (\d+), remote worker pids \[(\d+), (\d+)\]").groups()
    assert len(set(pids)) == 3  # three processes
    line(out, rf"^iter +1 +steps +128 +reward +{NUMBER} +healthy workers 2$")
    line(out, r"^done: 1 iterations with 2 Ray workers, weights in sync: True$")
