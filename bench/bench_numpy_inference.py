"""Micro-benchmark: `TFPolicy.compute_actions` on the numpy inference path.

The catalog's default model (256x256 tanh, separate value net) and a Categorical over
2 actions, on 8 CartPole-shaped float32 observations (the sampler's common case),
`explore=True` and `False`; also `value()`. Prints the median over rounds of the mean
process CPU time per call (timeit, one BLAS thread: steadier than wall time on a
loaded machine), in microseconds.

    python bench/bench_numpy_inference.py [--calls=10000] [--rounds=5]
"""

import os
import statistics
import sys
import time
import timeit

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # CPU time of one thread

import gymnasium as gym
import numpy as np
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CALLS = flags.DEFINE_integer("calls", 10000, "Calls per round.")
_ROUNDS = flags.DEFINE_integer("rounds", 5, "Rounds (median taken).")


def _time(fn, calls, rounds):
    fn()
    times = timeit.repeat(fn, timer=time.thread_time, number=calls, repeat=rounds)
    return statistics.median(times) / calls * 1e6


def main(argv):
    del argv
    from tfrl.policy.tf_policy import TFPolicy

    env = gym.make("CartPole-v1")
    policy = TFPolicy(env.observation_space, env.action_space, {"seed": 0})
    assert policy.inference == "numpy"
    obs = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    calls, rounds = _CALLS.value, _ROUNDS.value
    cases = {
        "compute_actions(obs, explore=True)": lambda: policy.compute_actions(obs, explore=True),
        "compute_actions(obs, explore=False)": lambda: policy.compute_actions(obs, explore=False),
        "compute_actions(obs, timestep=t)": lambda: policy.compute_actions(
            obs, explore=True, timestep=policy.global_timestep),
        "value(obs)": lambda: policy.value(obs),
    }
    for name, fn in cases.items():
        print(f"{name:<40} {_time(fn, calls, rounds):8.1f} us/call", flush=True)


if __name__ == "__main__":
    app.run(main)
