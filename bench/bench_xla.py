"""XLA (`jit_compile`) A/B of the learner alone: CPU time and wall per learn call.

For each workload two algorithms are built from the tuned file, one with
`jit_compile=True`; both train a few iterations, alternating, and every
`TrainStep.learn` call (one learning phase) is timed: wall and the process's user+sys
CPU time (resource.getrusage). Medians after the first (tracing) call are printed
("training": new batches, so new shapes for recurrent policies). Then each policy
repeats its last learning phase on that same fixed batch `--repeats` times,
interleaved ("fixed batch").

    python bench/bench_xla.py [--workloads=ppo_lstm,sac,td3,ppo] [--iters=6] [--repeats=10]
"""

import os
import resource
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # noqa: E402

_WORKLOADS = flags.DEFINE_list("workloads", ["ppo_lstm", "sac", "td3", "ppo"], "Workloads.")
_ITERS = flags.DEFINE_integer("iters", 6, "train() calls per algorithm.")
_REPEATS = flags.DEFINE_integer("repeats", 10, "Fixed-batch learn calls per policy.")

TUNED = {"ppo_lstm": "ppo_lstm_stateless_cartpole.yaml", "sac": "sac_pendulum.yaml",
         "td3": "td3_pendulum.yaml", "ppo": "ppo_cartpole.yaml"}
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _print(name, what, timings):
    for jit in (False, True):
        calls = timings.get(jit, [])[1:]  # the first call may trace or compile
        if not calls:
            print(f"{name} jit={jit}: no learn calls")
            continue
        wall = statistics.median(c[0] for c in calls) * 1e3
        cpu = statistics.median(c[1] for c in calls) * 1e3
        print(f"{name:9s} {what:12s} jit_compile={jit!s:5s} {len(calls):3d} calls  "
              f"wall {wall:8.2f} ms  cpu {cpu:8.2f} ms", flush=True)


def main(argv):
    del argv
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment
    from tfrl.policy import tf_train_step

    timings = {}
    last = {}
    original = tf_train_step.TrainStep.learn

    def timed(self, *args, **kwargs):
        wall, cpu = time.perf_counter(), _cpu()
        out = original(self, *args, **kwargs)
        key = bool(self._policy.config["jit_compile"])
        last[key] = (self, args, kwargs)
        timings.setdefault(key, []).append((time.perf_counter() - wall, _cpu() - cpu))
        return out

    tf_train_step.TrainStep.learn = timed
    for name in _WORKLOADS.value:
        timings.clear()
        algos = {}
        for jit in (False, True):
            experiment = resolve_experiment(os.path.join(_ROOT, "tfrl", "tuned", TUNED[name]),
                                            overrides=[f"jit_compile={jit}"])
            config = build_config(experiment)
            algos[jit] = get_algorithm_class(experiment.algo)(config=config)
        for _ in range(_ITERS.value):
            for jit in (False, True):
                algos[jit].train()
        _print(name, "training", timings)
        timings.clear()
        for _ in range(_REPEATS.value + 1):
            for jit in (False, True):
                step, args, kwargs = last[jit]
                timed(step, *args, **kwargs)
        _print(name, "fixed batch", timings)
        for algo in algos.values():
            algo.stop()


if __name__ == "__main__":
    app.run(main)
