"""Start-up cost of PPO on CartPole-v1 (targets: first learning step <= 5 s, peak RSS <= 650 MB).

    /work/venv/bin/python bench/bench_startup.py            # 3 fresh processes, medians
    /work/venv/bin/python bench/bench_startup.py --runs 5

Each run is a fresh subprocess that times, from its own start (before any import):
`import tensorflow` (plus the one-thread settings of examples/ppo_cartpole.py), the
`tfrl.algorithms.ppo` import, `build()` and the end of the first `train()`
(the first learning step: sampling 256 steps, tracing and running the compiled update),
the process's CPU seconds at that point (less sensitive to a loaded machine than wall
time), and its peak RSS (`resource.getrusage(RUSAGE_SELF).ru_maxrss`). The config is
`examples/tuned/ppo_cartpole.yaml` (= `examples/ppo_cartpole.py`'s). The parent prints
every run and the medians.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import time
START = time.time()
import resource, json, sys
marks = {}
import tfrl  # before TensorFlow, as examples/ppo_cartpole.py does (see tfrl/__init__.py)
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
marks["import_tf"] = time.time() - START
import tfrl.algorithms.ppo
from tfrl.cli.experiment import build_config, resolve_experiment
marks["import_tfrl"] = time.time() - START
config = build_config(resolve_experiment("examples/tuned/ppo_cartpole.yaml"))
algo = config.build()
marks["built"] = time.time() - START
result = algo.train()
marks["first_train"] = time.time() - START
usage = resource.getrusage(resource.RUSAGE_SELF)
marks["cpu_first_train"] = usage.ru_utime + usage.ru_stime
result = algo.train()
marks["second_train"] = time.time() - START
marks["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
marks["tfp_imported"] = "tensorflow_probability" in sys.modules
marks["timesteps"] = int(result["timesteps_total"])
algo.stop()
print("BENCH " + json.dumps(marks), flush=True)
"""

KEYS = ("import_tf", "import_tfrl", "built", "first_train", "second_train", "cpu_first_train",
        "peak_rss_mb")


def run_once() -> dict:
    """One fresh process; returns its marks (seconds from process start, RSS in MB)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=env, cwd=root, timeout=300)
    for line in out.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH "):])
    raise RuntimeError(f"child failed (exit {out.returncode}):\n{out.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        marks = run_once()
        runs.append(marks)
        print(f"run {i}: " + "  ".join(f"{k} {marks[k]:.2f}" for k in KEYS)
              + f"  tfp_imported {marks['tfp_imported']}  load {os.getloadavg()[0]:.1f}",
              flush=True)
    print("median: " + "  ".join(f"{k} {statistics.median(r[k] for r in runs):.2f}" for k in KEYS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
