"""Start-up cost and peak memory of PPO on CartPole-v1 against a bare `import tensorflow`.

    python bench/bench_startup.py                       # 3 rounds, this source tree
    python bench/bench_startup.py --runs 5
    python bench/bench_startup.py --tfrl /path/to/old/checkout --tfrl .   # before/after
    python bench/bench_startup.py --iterations 2        # start-up only (no full run)

Targets (issue 13): the tuned PPO run peaks at most 60 MB above a bare
`import tensorflow`; the first learning step comes 0.4 s or more sooner than with the
TFP-backed action distributions.

Each round runs, for every `--tfrl` source tree in turn (so trees are interleaved on a
machine whose load changes), two fresh subprocesses in that tree (first on sys.path):

- the TF child: `import tensorflow` (plus the one-thread settings of
  examples/ppo_cartpole.py) and nothing else; its peak RSS is the baseline.
- the PPO child, timing from its own start (before any import): `import tensorflow`, the
  `tfrl.algorithms.ppo` import, `build()`, the end of the first `train()` (the first
  learning step: sampling 256 steps, tracing and running the compiled update) and its
  CPU seconds at that point (less sensitive to a loaded machine than wall time); then it
  trains until the config's stop criteria (solved, or 100k steps) or `--iterations`.
  Its peak RSS is `resource.getrusage(RUSAGE_SELF).ru_maxrss` at the end of the run.

The config is `tfrl/tuned/ppo_cartpole.yaml` (= `examples/ppo_cartpole.py`'s). The
parent prints every run, then per tree the median and range of each mark, including the
PPO peak minus the TF peak of the same round and `first_train_after_tf` (the first
learning step counted from the end of `import tensorflow`, whose own time swings most
on a loaded machine).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TF_CHILD = r"""
import time
START = time.time()
import resource, json
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
marks = {"import_tf": time.time() - START,
         "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
print("BENCH " + json.dumps(marks), flush=True)
"""

PPO_CHILD = r"""
import time
START = time.time()
import resource, json, os, sys
MAX_ITERATIONS = int(sys.argv[1])
marks = {}
# TensorFlow through tfrl first, as examples/ppo_cartpole.py does (older trees: a plain
# import after tfrl's, which loaded TFP lazily that way).
try:
    from tfrl.utils.progress import quiet_tensorflow
    quiet_tensorflow()
except ImportError:
    import tfrl
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
marks["import_tf"] = time.time() - START
import tfrl.algorithms.ppo
from tfrl.cli.experiment import build_config, resolve_experiment
marks["import_tfrl"] = time.time() - START
# The tuned file: in the package since issue 30, in examples/tuned/ before it.
experiment = resolve_experiment(next(p for p in ("tfrl/tuned/ppo_cartpole.yaml",
                                                 "examples/tuned/ppo_cartpole.yaml")
                                      if os.path.exists(p)))
algo = build_config(experiment).build()
marks["built"] = time.time() - START
result = algo.train()
marks["first_train"] = time.time() - START
usage = resource.getrusage(resource.RUSAGE_SELF)
marks["cpu_first_train"] = usage.ru_utime + usage.ru_stime
iterations = 1
while iterations < MAX_ITERATIONS and not any(
        result[key] >= value for key, value in experiment.stop.items()):
    result = algo.train()
    iterations += 1
marks["run_end"] = time.time() - START
marks["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
marks["tfp_imported"] = "tensorflow_probability" in sys.modules
marks["tf_keras_imported"] = "tf_keras" in sys.modules
marks["timesteps"] = int(result["timesteps_total"])
marks["reward"] = float(result["episode_reward_mean"])
algo.stop()
print("BENCH " + json.dumps(marks), flush=True)
"""

PPO_KEYS = ("import_tf", "import_tfrl", "built", "first_train", "first_train_after_tf",
            "cpu_first_train", "run_end", "peak_rss_mb")


def run_child(code: str, tree: str, args: List[str] = ()) -> Dict:
    """One fresh process in `tree` (first on sys.path); returns its marks."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=tree, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH "):])
    raise RuntimeError(f"child failed (exit {out.returncode}):\n{out.stderr[-3000:]}")


def _stat(values: List[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--tfrl", action="append", default=None, metavar="DIR",
                        help="source tree to measure (repeatable; default: this one)")
    parser.add_argument("--iterations", type=int, default=10**9,
                        help="stop the PPO child after this many train() calls")
    args = parser.parse_args()
    trees = [os.path.abspath(t) for t in (args.tfrl or [ROOT])]
    results: Dict[str, List[Dict]] = {t: [] for t in trees}
    for i in range(args.runs):
        for tree in trees:
            tf_marks = run_child(TF_CHILD, tree)
            marks = run_child(PPO_CHILD, tree, [str(args.iterations)])
            marks["tf_peak_rss_mb"] = tf_marks["peak_rss_mb"]
            marks["rss_above_tf_mb"] = marks["peak_rss_mb"] - tf_marks["peak_rss_mb"]
            marks["first_train_after_tf"] = marks["first_train"] - marks["import_tf"]
            results[tree].append(marks)
            print(f"run {i} {tree}: tf_peak_rss_mb {tf_marks['peak_rss_mb']:.0f}  "
                  + "  ".join(f"{k} {marks[k]:.2f}" for k in PPO_KEYS)
                  + f"  rss_above_tf_mb {marks['rss_above_tf_mb']:.0f}"
                  + f"  steps {marks['timesteps']}  reward {marks['reward']:.1f}"
                  + f"  tfp {marks['tfp_imported']}  tf_keras {marks['tf_keras_imported']}"
                  + f"  load {os.getloadavg()[0]:.1f}", flush=True)
    print("median [min-max] over rounds:")
    for tree, runs in results.items():
        print(f"{tree}:")
        for key in ("tf_peak_rss_mb", "peak_rss_mb", "rss_above_tf_mb") + PPO_KEYS[:-1]:
            print(f"  {key:16s} {_stat([r[key] for r in runs])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
