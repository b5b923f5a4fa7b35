"""PPO on CartPole-v1: tfrl's in-graph path vs its Python path vs Stable-Baselines3.

    python bench/bench_in_graph.py                       # 100k steps, seed 0, + 1M in-graph
    python bench/bench_in_graph.py --steps 20000 --million-steps 0

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

Every run is its own subprocess. Numbers from a machine shared with other work are
indicative only.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_ppo_cartpole import (ISSUE_SETTINGS, SOLVED, TUNED_CARTPOLE, _fmt,  # noqa: E402
                                frameworks_to_compare, launch, print_result, run_sb3)

#: The 1M-step in-graph run's settings (over the tuned file, beside ISSUE_SETTINGS).
FAST_SETTINGS = ["num_envs_per_worker=64", "rollout_fragment_length=32",
                 "train_batch_size=2048", "sgd_minibatch_size=512", "num_sgd_iter=4"]


def run_tfrl(seed: int, steps: int, t0: float, in_graph: bool, fast: bool = False) -> dict:
    from tfrl.utils.progress import quiet_tensorflow
    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment

    overrides = ISSUE_SETTINGS + (FAST_SETTINGS if fast else []) + [
        f"seed={seed}", f"lr_schedule=[[0, 1.0e-3], [{steps}, 0.0]]"]
    config = build_config(resolve_experiment(TUNED_CARTPOLE, overrides=overrides))
    if in_graph:
        config = config.replace(env="tfrl/CartPole-v1", in_graph=True)
    algo = get_algorithm_class("PPO")(config=config)
    start = time.time()
    solved_steps = None
    result = {"timesteps_total": 0}
    while result["timesteps_total"] < steps:
        result = algo.train()
        if solved_steps is None and result["episode_reward_mean"] >= SOLVED:
            solved_steps = result["timesteps_total"]
    wall = time.time() - start
    algo.stop()
    return {"steps": result["timesteps_total"], "wall_s": wall,
            "process_s": time.time() - t0, "steps_per_s": result["timesteps_total"] / wall,
            "solved_steps": solved_steps, "final_reward": result["episode_reward_mean"]}


def child(kind: str, seed: int, steps: int, t0: float) -> None:
    if kind == "sb3":
        result = run_sb3(seed, steps, t0)
        result["process_s"] = time.time() - t0
    else:
        result = run_tfrl(seed, steps, t0, in_graph=kind != "python",
                          fast=kind == "in-graph-fast")
    print_result(result)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--child", choices=["in-graph", "python", "sb3", "in-graph-fast"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, default=None)
    parser.add_argument("--million-steps", type=int, default=1_000_000,
                        help="env steps of the in-graph throughput run (0: skip it)")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed, args.steps, args.t0 or time.time())
        return 0

    kinds = ["in-graph", "python"] + (["sb3"] if "sb3" in frameworks_to_compare() else [])
    print(f"PPO CartPole-v1, {args.steps} env steps, seed(s) {args.seeds}")
    print(f"{'run':16s} {'wall s':>8s} {'process s':>9s} {'steps/s':>8s} {'steps@475':>10s} "
          f"{'final R':>8s}")
    rows = {}
    for seed in args.seeds:
        for kind in kinds:
            r = launch(kind, seed, args.steps, script=__file__)
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
    if args.million_steps:
        r = launch("in-graph-fast", args.seeds[0], args.million_steps, script=__file__)
        print(f"in-graph, {args.million_steps} steps ({' '.join(FAST_SETTINGS)}): wall "
              f"{r['wall_s']:.1f} s ({r['process_s']:.1f} s with start-up), "
              f"{r['steps_per_s']:.0f} steps/s, 475 at {_fmt(r['solved_steps'], 'd')} "
              f"steps, final mean return {r['final_reward']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
