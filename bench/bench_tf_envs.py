"""Env steps per second: TF-native CartPole (tfrl.env.tf_envs) vs gymnasium's vector envs.

    python bench/bench_tf_envs.py                   # 1,024 envs, 1 thread, 3 rounds
    python bench/bench_tf_envs.py --num-envs 64 --threads 2

Random actions, auto-reset on, one process. Rows:

- `tf loop (graph)` / `tf loop (XLA)`: `--steps` steps of all envs inside one
  `tf.function` (a `tf.while_loop` carrying the state; actions drawn in the graph), as the
  in-graph training loop will run them; the first call (tracing, compiling) is timed
  apart.
- `tf step per call`: one compiled step per Python call (actions passed in), the cost
  when the env is stepped from Python.
- `gymnasium SyncVectorEnv`: `gymnasium.make_vec(..., vectorization_mode="sync")`, one
  CartPoleEnv per sub-env stepped in a Python loop (tfrl's default vector env).
- `gymnasium CartPoleVectorEnv`: gymnasium's own numpy-batched CartPole
  (`vectorization_mode="vector_entry_point"`).

Each row prints the median over `--rounds` of steps/s (env steps: calls x num_envs).
"""

import argparse
import os
import statistics
import sys
import time

import gymnasium as gym
import numpy as np
import tensorflow as tf

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tfrl.env.tf_envs import make_tf_env  # noqa: E402


def _median_rate(fn, env_steps, rounds):
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        rates.append(env_steps / (time.perf_counter() - start))
    return statistics.median(rates)


def bench_tf_loop(num_envs, steps, rounds, jit_compile):
    env = make_tf_env("tfrl/CartPole-v1", num_envs)

    @tf.function(jit_compile=jit_compile)
    def rollout(state, key):
        def body(t, state, total):
            seed = tf.stack([key, tf.cast(t, tf.int64)])
            action = tf.random.stateless_uniform([num_envs], seed, maxval=2, dtype=tf.int32,
                                                 alg="philox")
            step = env.step(state, action)
            return t + 1, step.state, total + step.reward

        _, state, total = tf.while_loop(lambda t, *_: t < steps, body,
                                        (0, state, tf.zeros([num_envs])))
        return state, total

    state, _ = env.reset(seed=0)
    key = tf.constant(1, tf.int64)
    start = time.perf_counter()
    state, total = rollout(state, key)
    first = time.perf_counter() - start
    assert float(tf.reduce_sum(total)) == steps * num_envs

    def run():
        rollout(state, key)[1].numpy()

    return _median_rate(run, steps * num_envs, rounds), first


def bench_tf_step_per_call(num_envs, steps, rounds):
    env = make_tf_env("tfrl/CartPole-v1", num_envs)
    step = tf.function(env.step)
    state, _ = env.reset(seed=0)
    actions = [tf.constant(a) for a in np.random.default_rng(0).integers(0, 2, (16, num_envs))]
    step(state, actions[0])

    def run():
        s = state
        for t in range(steps):
            s = step(s, actions[t % 16]).state
        s.physics.numpy()

    return _median_rate(run, steps * num_envs, rounds)


def bench_gymnasium(num_envs, steps, rounds, mode):
    envs = gym.make_vec("CartPole-v1", num_envs, vectorization_mode=mode)
    envs.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, (16, num_envs))

    def run():
        for t in range(steps):
            envs.step(actions[t % 16])

    rate = _median_rate(run, steps * num_envs, rounds)
    envs.close()
    return rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=1000, help="steps per TF loop call")
    parser.add_argument("--python-steps", type=int, default=100,
                        help="steps per round of the Python-driven rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="TF intra/inter-op threads")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    n = args.num_envs
    print(f"CartPole-v1, {n} envs, {args.threads} TF thread(s), median of {args.rounds}")
    for jit in (False, True):
        rate, first = bench_tf_loop(n, args.steps, args.rounds, jit)
        name = "tf loop (XLA)" if jit else "tf loop (graph)"
        print(f"{name:30s} {rate:14,.0f} steps/s  (first call {first:.2f} s)")
    rate = bench_tf_step_per_call(n, args.python_steps, args.rounds)
    print(f"{'tf step per call':30s} {rate:14,.0f} steps/s")
    for mode, name in (("sync", "gymnasium SyncVectorEnv"),
                       ("vector_entry_point", "gymnasium CartPoleVectorEnv")):
        rate = bench_gymnasium(n, args.python_steps, args.rounds, mode)
        print(f"{name:30s} {rate:14,.0f} steps/s")


if __name__ == "__main__":
    main()
