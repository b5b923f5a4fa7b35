"""PPO on CartPole-v1 and Pendulum-v1: tfrl's in-graph path vs its Python path vs SB3.

    python bench/bench_in_graph.py                       # 100k steps, seed 0, + 1M in-graph
    python bench/bench_in_graph.py --steps 20000 --million-steps 0
    python bench/bench_in_graph.py --env pendulum        # 200k steps, seed 0

One run of each, side by side, the same settings (bench_ppo_cartpole.py's: RL Baselines3
Zoo's tuned CartPole PPO, 8 envs x 32 steps, 20 epochs of minibatch 256, lr 1e-3 decayed
to 0 over the budget; one TF / torch thread):

- `in-graph`: `.environment("tfrl/CartPole-v1").rollouts(in_graph=True)`: the TF-native
  CartPole, each iteration (256 env steps, GAE, 20 epochs) one compiled call;
- `python`: gymnasium's CartPole-v1 on tfrl's Python sampling path;
- `sb3`: Stable-Baselines3 (TensorFlow hidden from its process, as in the other benches).

Reported per run: the wall seconds of the training budget, the seconds from process
start to its end (start-up included), env steps/s, the env steps at which the mean return
of the last 100 episodes first reached 475, and the final mean return; then the ratios
to SB3. With `--million-steps N` (default 1M) a last in-graph run trains N steps with
the throughput settings `FAST_SETTINGS` (64 envs x 32 steps, 4 epochs of 4 minibatches:
fewer optimizer steps per env step; the in-graph path pays per step of the loop, not per
env) and reports its wall time and final return.

With `--env pendulum`, PPO on Pendulum-v1 (Box actions, 200-step episodes truncated and
bootstrapped): `tfrl/tuned/ppo_pendulum.yaml` (4 envs x 256 steps, 10 epochs of
minibatches of 64, gamma 0.9, lambda 0.95, lr 1e-3 constant, 64x64 tanh nets, a
state-dependent log std) with `observation_filter=NoFilter` on every row, since the
in-graph path refuses observation filters (`PENDULUM_SETTINGS`); SB3 runs the same
numbers without `VecNormalize` (its log std is a free parameter: SB3 has no
state-dependent one for PPO). Reported: the same columns, with the env steps at which the
mean return first reached -400; default budget 200k steps, no throughput run.

Every run is its own subprocess. Numbers from a machine shared with other work are
indicative only.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_ppo_cartpole import (ISSUE_SETTINGS, SOLVED, TUNED_CARTPOLE, _fmt,  # noqa: E402
                                frameworks_to_compare, hide_tensorflow, launch, print_result,
                                run_sb3)

TUNED_PENDULUM = os.path.join(os.path.dirname(TUNED_CARTPOLE), "ppo_pendulum.yaml")
#: The Pendulum rows' settings over the tuned file (every row: the in-graph path refuses
#: observation filters).
PENDULUM_SETTINGS = ["observation_filter=NoFilter"]
#: Pendulum's "solved" mark (the tuned file's stop and the learning test's threshold).
PENDULUM_SOLVED = -400.0

#: The 1M-step in-graph run's settings (over the tuned file, beside ISSUE_SETTINGS).
FAST_SETTINGS = ["num_envs_per_worker=64", "rollout_fragment_length=32",
                 "train_batch_size=2048", "sgd_minibatch_size=512", "num_sgd_iter=4"]


def run_tfrl(seed: int, steps: int, t0: float, in_graph: bool, fast: bool = False,
             env: str = "cartpole") -> dict:
    from tfrl.utils.progress import quiet_tensorflow
    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment

    if env == "pendulum":
        tuned, solved = TUNED_PENDULUM, PENDULUM_SOLVED
        overrides = PENDULUM_SETTINGS + [f"seed={seed}"]
    else:
        tuned, solved = TUNED_CARTPOLE, SOLVED
        overrides = ISSUE_SETTINGS + (FAST_SETTINGS if fast else []) + [
            f"seed={seed}", f"lr_schedule=[[0, 1.0e-3], [{steps}, 0.0]]"]
    config = build_config(resolve_experiment(tuned, overrides=overrides))
    if in_graph:
        config = config.replace(env="tfrl/" + config.env, in_graph=True)
    algo = get_algorithm_class("PPO")(config=config)
    start = time.time()
    solved_steps = None
    result = {"timesteps_total": 0}
    while result["timesteps_total"] < steps:
        result = algo.train()
        if solved_steps is None and result["episode_reward_mean"] >= solved:
            solved_steps = result["timesteps_total"]
    wall = time.time() - start
    algo.stop()
    return {"steps": result["timesteps_total"], "wall_s": wall,
            "process_s": time.time() - t0, "steps_per_s": result["timesteps_total"] / wall,
            "solved_steps": solved_steps, "final_reward": result["episode_reward_mean"]}


def run_sb3_pendulum(seed: int, steps: int) -> dict:
    """SB3's PPO with the settings of `tfrl/tuned/ppo_pendulum.yaml` (see the module
    docstring), one torch thread, TensorFlow hidden."""
    hide_tensorflow()
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)

    class Watch(BaseCallback):
        solved_steps = None

        def _on_rollout_end(self):
            buf = self.model.ep_info_buffer
            if (self.solved_steps is None and buf
                    and np.mean([e["r"] for e in buf]) >= PENDULUM_SOLVED):
                self.solved_steps = self.num_timesteps

        def _on_step(self):
            return True

    env = make_vec_env("Pendulum-v1", n_envs=4, seed=seed)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=10, gamma=0.9,
                gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
                learning_rate=1e-3, policy_kwargs={"net_arch": [64, 64]}, seed=seed,
                device="cpu", verbose=0)
    watch = Watch()
    start = time.time()
    model.learn(total_timesteps=steps, callback=watch)
    wall = time.time() - start
    rewards = [e["r"] for e in model.ep_info_buffer]
    return {"steps": model.num_timesteps, "wall_s": wall,
            "steps_per_s": model.num_timesteps / wall, "solved_steps": watch.solved_steps,
            "final_reward": float(np.mean(rewards)) if rewards else None}


def child(kind: str, seed: int, steps: int, t0: float, env: str = "cartpole") -> None:
    if kind == "sb3":
        result = run_sb3_pendulum(seed, steps) if env == "pendulum" else run_sb3(seed, steps, t0)
        result["process_s"] = time.time() - t0
    else:
        result = run_tfrl(seed, steps, t0, in_graph=kind != "python",
                          fast=kind == "in-graph-fast", env=env)
    print_result(result)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=["cartpole", "pendulum"], default="cartpole",
                        help="CartPole-v1 (the tuned CartPole settings, + the throughput "
                             "run) or Pendulum-v1 (ppo_pendulum.yaml, no throughput run)")
    parser.add_argument("--steps", type=int, default=None,
                        help="env steps of each run (default: 100k CartPole, 200k Pendulum)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--child", choices=["in-graph", "python", "sb3", "in-graph-fast"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, default=None)
    parser.add_argument("--runs", nargs="+", choices=["in-graph", "python", "sb3"],
                        default=["in-graph", "python", "sb3"],
                        help="which runs to compare (default: all; sb3 needs the bench extra)")
    parser.add_argument("--million-steps", type=int, default=1_000_000,
                        help="env steps of the in-graph throughput run (0: skip it)")
    args = parser.parse_args()
    pendulum = args.env == "pendulum"
    if args.steps is None:
        args.steps = 200_000 if pendulum else 100_000
    if args.child:
        child(args.child, args.seed, args.steps, args.t0 or time.time(), env=args.env)
        return 0

    kinds = [k for k in args.runs if k != "sb3"]
    if "sb3" in args.runs and "sb3" in frameworks_to_compare():
        kinds.append("sb3")
    mark = "-400" if pendulum else "475"
    print(f"PPO {'Pendulum-v1' if pendulum else 'CartPole-v1'}, {args.steps} env steps, "
          f"seed(s) {args.seeds}")
    print(f"{'run':16s} {'wall s':>8s} {'process s':>9s} {'steps/s':>8s} "
          f"{'steps@' + mark:>10s} {'final R':>8s}")
    rows = {}
    for seed in args.seeds:
        for kind in kinds:
            r = launch(kind, seed, args.steps, script=__file__,
                       extra_args=("--env", args.env))
            rows.setdefault(kind, []).append(r)
            print(f"{kind + ' s' + str(seed):16s} {r['wall_s']:8.1f} {r['process_s']:9.1f} "
                  f"{r['steps_per_s']:8.0f} {_fmt(r['solved_steps'], '10d')} "
                  f"{_fmt(r['final_reward'], '8.1f')}", flush=True)
    for base in ("sb3", "python"):
        if base not in rows:
            continue
        for kind in kinds:
            if kind == base:
                continue
            wall = sum(r["wall_s"] for r in rows[kind]) / sum(r["wall_s"] for r in rows[base])
            process = (sum(r["process_s"] for r in rows[kind])
                       / sum(r["process_s"] for r in rows[base]))
            print(f"{kind}/{base}: wall {wall:.2f}x, with start-up {process:.2f}x")
    if args.million_steps and not pendulum:
        r = launch("in-graph-fast", args.seeds[0], args.million_steps, script=__file__)
        print(f"in-graph, {args.million_steps} steps ({' '.join(FAST_SETTINGS)}): wall "
              f"{r['wall_s']:.1f} s ({r['process_s']:.1f} s with start-up), "
              f"{r['steps_per_s']:.0f} steps/s, 475 at {_fmt(r['solved_steps'], 'd')} "
              f"steps, final mean return {r['final_reward']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
