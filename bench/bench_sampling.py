"""Sampling benchmark: `RolloutWorker.sample()` vs a numpy-only loop over the same env.

tfrl: a RolloutWorker with 8 CartPole sub-envs (`num_envs=8`; the worker vectorizes
CartPole through gymnasium's `vector_entry_point`, the fast path) and the default MLP
policy (PPO's TF policy with the catalog's default model: separate 256-256 tanh policy and
value towers), `rollout_fragment_length=100` (800 env steps per `sample()`), including
postprocessing (GAE).

Ceiling: a numpy MLP of the same size (both towers, softmax sampling) stepping
`gymnasium.make_vec("CartPole-v1", 8, vectorization_mode="vector_entry_point")` directly,
with no batch building at all — the ceiling for any RL library on this CPU.

Prints env steps/s of both and the ratio tfrl / ceiling (higher is better; target >= 0.4).
The ceiling counts 8 rows per `env.step`, including the rows where a sub-env is reset
(NEXT_STEP autoreset: no transition); tfrl's 800 rows are transitions, which take ~4%
more vector steps. The ratio over transitions is printed as well (the target uses the
plain ratio).

With `--breakdown` (default on) it then prints where the time of one vector step goes,
in µs (medians over interleaved rounds): the env step, the policy's `compute_actions`,
its `postprocess_trajectory` (GAE and value bootstrap) and the rest of the sampler, for
tfrl; the env step and the MLP for the ceiling.

    python bench/bench_sampling.py [--repeats=5] [--policy=ppo|pg] [--breakdown]
"""

import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import gymnasium as gym
import numpy as np
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repetitions per side (median taken).")
_POLICY = flags.DEFINE_enum("policy", "ppo", ["ppo", "pg"], "tfrl policy class to sample with.")
_BREAKDOWN = flags.DEFINE_bool("breakdown", True, "Also print the µs per vector step of the parts.")

NUM_ENVS, FRAGMENT, HIDDEN = 8, 100, 256
STEPS_PER_SAMPLE = NUM_ENVS * FRAGMENT


class NumpyMLP:
    """Policy and value towers (4 -> 256 -> 256 -> 2 and -> 1), tanh, softmax sampling."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)

        def layer(n_in, n_out):
            return (rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_out)).astype(np.float32),
                    np.zeros(n_out, np.float32))

        self.pi = [layer(4, HIDDEN), layer(HIDDEN, HIDDEN), layer(HIDDEN, 2)]
        self.vf = [layer(4, HIDDEN), layer(HIDDEN, HIDDEN), layer(HIDDEN, 1)]
        self.rng = rng

    @staticmethod
    def _tower(layers, x):
        for w, b in layers[:-1]:
            x = np.tanh(x @ w + b)
        w, b = layers[-1]
        return x @ w + b

    def act(self, obs):
        logits = self._tower(self.pi, obs)  # [B, 2]
        value = self._tower(self.vf, obs)[:, 0]  # [B]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        actions = (self.rng.random(len(obs)) < p[:, 1]).astype(np.int64)
        return actions, value


def make_ceiling():
    env = gym.make_vec("CartPole-v1", NUM_ENVS, vectorization_mode="vector_entry_point")
    policy = NumpyMLP()
    obs, _ = env.reset(seed=0)
    state = {"obs": obs, "done": np.zeros(NUM_ENVS, bool), "transitions": 0, "rows": 0}

    def run():
        obs, done, resets = state["obs"], state["done"], 0
        for _ in range(FRAGMENT):
            actions, _ = policy.act(obs.astype(np.float32))
            resets += int(np.count_nonzero(done))  # rows that reset a sub-env (no transition)
            obs, rewards, terminated, truncated, infos = env.step(actions)
            done = terminated | truncated
        state["obs"], state["done"] = obs, done
        state["rows"] += STEPS_PER_SAMPLE
        state["transitions"] += STEPS_PER_SAMPLE - resets
        return STEPS_PER_SAMPLE

    run.state = state
    run.policy, run.env = policy, env
    return run


def make_worker():
    from tfrl.evaluation.rollout_worker import RolloutWorker

    if _POLICY.value == "ppo":
        from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy as policy_class
    else:
        from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy as policy_class
    worker = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                           policy_spec=policy_class, num_envs=NUM_ENVS,
                           rollout_fragment_length=FRAGMENT, seed=0)
    vec = getattr(getattr(worker.async_env, "vector_env", None), "env", None)
    print(f"worker env: {type(getattr(vec, 'unwrapped', worker.async_env)).__name__}, "
          f"sampler runner: {type(worker.sampler.runner).__name__}, "
          f"policy: {type(worker.get_policy()).__name__} "
          f"(inference={worker.get_policy().config.get('inference')})", flush=True)

    def run():
        batch = worker.sample()
        assert batch.count == STEPS_PER_SAMPLE, batch.count
        return batch.count

    run.worker = worker
    return run


def _timed_calls(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _ceiling_parts(ceiling_run):
    """The ceiling loop of one `run()`, timing its env steps and MLP calls (µs/step)."""
    state, policy, env = ceiling_run.state, ceiling_run.policy, ceiling_run.env
    obs, clock, env_s, mlp_s = state["obs"], time.perf_counter, 0.0, 0.0
    start = clock()
    for _ in range(FRAGMENT):
        t0 = clock()
        actions, _ = policy.act(obs.astype(np.float32))
        t1 = clock()
        obs, _, terminated, truncated, _ = env.step(actions)
        env_s += clock() - t1
        mlp_s += t1 - t0
    total = clock() - start
    state["obs"], state["done"] = obs, terminated | truncated
    return env_s * 1e6 / FRAGMENT, mlp_s * 1e6 / FRAGMENT, total * 1e6 / FRAGMENT


def breakdown(worker_run, ceiling_run, rounds=5):
    """µs per vector step of each part (medians over interleaved rounds)."""
    worker = worker_run.worker
    policy = worker.get_policy()
    perf = worker.sampler.perf_stats
    obs = ceiling_run.state["obs"].astype(np.float32)
    post = {"seconds": 0.0}
    original = policy.postprocess_trajectory

    def timed_postprocess(*args, **kwargs):  # (an instance attribute: no effect on acting)
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            post["seconds"] += time.perf_counter() - start

    policy.postprocess_trajectory = timed_postprocess
    parts = {k: [] for k in ("ceiling env.step", "ceiling numpy MLP", "ceiling total per step",
                             "tfrl env (poll_arrays)", "tfrl policy compute_actions",
                             "tfrl postprocess_trajectory",
                             "tfrl sampler (the rest)", "tfrl total per poll")}
    try:
        for _ in range(rounds):
            env_us, mlp_us, total_us = _ceiling_parts(ceiling_run)
            parts["ceiling env.step"].append(env_us)
            parts["ceiling numpy MLP"].append(mlp_us)
            parts["ceiling total per step"].append(total_us)
            parts.setdefault("ceiling MLP alone (hot loop)", []).append(
                _timed_calls(lambda: ceiling_run.policy.act(obs), 200))
            parts.setdefault("tfrl compute_actions alone (hot loop)", []).append(_timed_calls(
                lambda: policy.compute_actions(obs, timestep=policy.global_timestep), 200))
            perf.__init__()
            post["seconds"] = 0.0
            start = time.perf_counter()
            for _ in range(3):
                worker_run()
            total = (time.perf_counter() - start) * 1e6 / perf.iters
            stats = perf.get()
            env_us = stats["mean_env_wait_ms"] * 1e3
            policy_us = stats["mean_inference_ms"] * 1e3
            post_us = post["seconds"] * 1e6 / perf.iters
            parts["tfrl env (poll_arrays)"].append(env_us)
            parts["tfrl postprocess_trajectory"].append(post_us)
            parts["tfrl sampler (the rest)"].append(total - env_us - policy_us - post_us)
            parts["tfrl total per poll"].append(total)
            parts["tfrl policy compute_actions"].append(policy_us)
            parts.setdefault("tfrl polls per 100 steps of each sub-env", []).append(
                perf.iters / 3)
    finally:
        del policy.postprocess_trajectory
    return {name: statistics.median(values) for name, values in parts.items()}


def main(argv):
    del argv
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs", flush=True)
    sides = {"tfrl RolloutWorker.sample()": make_worker(), "numpy MLP + make_vec (ceiling)": make_ceiling()}
    for run in sides.values():  # warm-up: tracing, caches, first resets
        run(), run()
    rates = {name: [] for name in sides}
    for _ in range(_REPEATS.value):  # interleaved so both see the same machine load
        for name, run in sides.items():
            steps, start = 0, time.perf_counter()
            while time.perf_counter() - start < 1.0:
                steps += run()
            rates[name].append(steps / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in medians.items():
        print(f"{name:<36} {rate:10.0f} env steps/s", flush=True)
    tfrl_rate, ceiling = medians.values()
    ratio = tfrl_rate / ceiling
    print(f"ratio tfrl / ceiling: {ratio:.2f}x (target >= 0.4x) "
          f"{'ok' if ratio >= 0.4 else 'UNDER TARGET'}", flush=True)
    state = sides["numpy MLP + make_vec (ceiling)"].state
    share = state["transitions"] / state["rows"]
    print(f"ceiling rows that are transitions: {share:.3f}; ratio over transitions: "
          f"{ratio / share:.2f}x", flush=True)
    if _BREAKDOWN.value:
        print("µs per vector step (8 sub-envs), medians:", flush=True)
        for name, value in breakdown(*sides.values()).items():
            print(f"  {name:<42} {value:8.1f}", flush=True)


if __name__ == "__main__":
    app.run(main)
