"""Where the time and memory of PPO on ALE/Breakout-v5 go, tfrl vs SB3 (bench_atari's settings).

    python bench/profile_atari.py tfrl --iters 6            # one framework per process
    python bench/profile_atari.py sb3 --iters 6
    python bench/profile_atari.py tfrl --iters 6 --override mixed_precision=bfloat16

Each iteration is one rollout of 8 envs x 128 steps then one learning phase (4 epochs of
minibatches of 256), as in `bench/bench_atari.py`. Per phase it reports wall seconds, the
process's CPU seconds (all threads: less sensitive than wall time to a loaded machine),
the current RSS and the high-water mark (VmHWM) after the phase, so the phase that raises
the peak shows. The first iteration (tracing, warm-up) is left out of the means. Inference
is timed around the policy's action call (tfrl: `compute_actions`; SB3: `policy.forward`
inside `collect_rollouts`), per env step of the 8 envs.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_atari import ENV_ID, NUM_ENVS, TUNED_BREAKOUT  # noqa: E402


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


class Phases:
    """Accumulates wall/CPU seconds per phase name; records RSS/HWM after each phase."""

    def __init__(self):
        self.rows = []  # (iteration, phase, wall, cpu, rss, hwm)
        self.iteration = 0
        self.inference = [0.0, 0]  # seconds, calls in the current iteration
        self.inference_log = []

    def timed(self, name, fn):
        def wrapper(*args, **kwargs):
            w, c = time.perf_counter(), _cpu()
            out = fn(*args, **kwargs)
            self.rows.append((self.iteration, name, time.perf_counter() - w, _cpu() - c,
                              _status_mb("VmRSS"), _status_mb("VmHWM")))
            return out
        return wrapper

    def inference_timer(self, fn):
        def wrapper(*args, **kwargs):
            w = time.perf_counter()
            out = fn(*args, **kwargs)
            self.inference[0] += time.perf_counter() - w
            self.inference[1] += 1
            return out
        return wrapper

    def end_iteration(self):
        self.inference_log.append(tuple(self.inference))
        self.inference = [0.0, 0]
        self.iteration += 1

    def report(self, label):
        print(f"{label}: per-phase (iteration: wall s, CPU s, RSS MB, HWM MB)")
        for it, name, wall, cpu, rss, hwm in self.rows:
            print(f"  it {it} {name:8s} wall {wall:6.2f} cpu {cpu:6.2f} rss {rss:7.0f} "
                  f"hwm {hwm:7.0f}")
        summary = {}
        for name in sorted({r[1] for r in self.rows}):
            rows = [r for r in self.rows if r[1] == name and r[0] >= 1]
            if rows:
                summary[name] = {"wall_s": float(np.mean([r[2] for r in rows])),
                                 "cpu_s": float(np.mean([r[3] for r in rows]))}
        calls = self.inference_log[1:]
        if calls:
            seconds = sum(c[0] for c in calls)
            n = sum(c[1] for c in calls)
            summary["inference_ms_per_env_step"] = 1000.0 * seconds / max(n, 1)
        summary["peak_rss_mb"] = _status_mb("VmHWM")
        print("SUMMARY " + json.dumps(summary), flush=True)


def run_tfrl(iters: int, threads: int, overrides: list) -> None:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tfrl.cli.experiment import build_config, resolve_experiment

    phases = Phases()
    config = build_config(resolve_experiment(
        TUNED_BREAKOUT, overrides=["seed=0", "lr_schedule=null"] + overrides))
    algo = config.build()
    print(f"after build: rss {_status_mb('VmRSS'):.0f} hwm {_status_mb('VmHWM'):.0f}")
    worker = algo.workers.local_worker()
    policy = worker.get_policy()
    worker.sample = phases.timed("sample", worker.sample)
    policy.learn_on_batch = phases.timed("learn", policy.learn_on_batch)
    policy.compute_actions = phases.inference_timer(policy.compute_actions)
    for _ in range(iters):
        w, c = time.perf_counter(), _cpu()
        algo.train()
        phases.rows.append((phases.iteration, "train", time.perf_counter() - w, _cpu() - c,
                            _status_mb("VmRSS"), _status_mb("VmHWM")))
        phases.end_iteration()
    phases.report(f"tfrl ({threads} TF threads, inference {policy.inference})")
    algo.stop()


def run_sb3(iters: int, threads: int, overrides: list) -> None:
    from bench_ppo_cartpole import hide_tensorflow

    hide_tensorflow()
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from tfrl.env.wrappers.atari import make_atari

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    phases = Phases()
    env = make_vec_env(lambda: make_atari(ENV_ID, clip_rewards=False), n_envs=NUM_ENVS, seed=0,
                       wrapper_class=lambda e: gym.wrappers.ClipReward(e, -1.0, 1.0))
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=256, n_epochs=4, gamma=0.99,
                gae_lambda=0.95, clip_range=0.1, ent_coef=0.01, vf_coef=0.5,
                max_grad_norm=0.5, learning_rate=2.5e-4, seed=0, device="cpu", verbose=0)
    print(f"after build: rss {_status_mb('VmRSS'):.0f} hwm {_status_mb('VmHWM'):.0f}")
    model.collect_rollouts = phases.timed("sample", model.collect_rollouts)
    model.train = phases.timed("learn", model.train)
    model.policy.forward = phases.inference_timer(model.policy.forward)
    model.learn(total_timesteps=NUM_ENVS * 128)  # sets up; first iteration
    phases.end_iteration()
    for _ in range(iters - 1):
        model.learn(total_timesteps=NUM_ENVS * 128, reset_num_timesteps=False)
        phases.end_iteration()
    phases.report(f"sb3 ({threads} torch threads)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=["tfrl", "sb3"])
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--override", action="append", default=[],
                        help="tfrl config override KEY=VALUE (repeatable)")
    args = parser.parse_args()
    (run_tfrl if args.framework == "tfrl" else run_sb3)(args.iters, args.threads, args.override)


if __name__ == "__main__":
    main()
