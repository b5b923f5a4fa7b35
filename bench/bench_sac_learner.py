"""SAC's (or TD3's) compiled learning call alone: CPU ms per gradient step on a fixed batch.

Builds the policy from spaces only (Pendulum-v1: obs 3, act 1; HalfCheetah-v5: obs 17,
act 6), feeds it a fixed random batch of `K * 256` rows and times `--calls`
`learn_on_batch` calls of K gradient steps each (256-row minibatches, in order, one call
per learning phase as the off-policy plan makes them) with `time.process_time`. Prints
the median CPU and wall ms per gradient step after `--warmup` calls. `--ops` prints the
learn graph's op counts by type instead (the concrete function's graph and its while
loop body); `--save FILE` writes the weights after the timed calls (an .npz) so that two
code versions can be compared for equality on the same seed.

    python bench/bench_sac_learner.py --env pendulum --k 16 --calls 20 --jit 1
"""

import argparse
import collections
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

SHAPES = {"pendulum": (3, 1, 2.0), "halfcheetah": (17, 6, 1.0)}


def make_policy(algo: str, env: str, hiddens, jit: bool, seed: int):
    import keras

    obs_size, act_size, bound = SHAPES[env]
    obs_space = gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
    act_space = gym.spaces.Box(-bound, bound, (act_size,), np.float32)
    keras.utils.set_random_seed(seed)
    if algo == "SAC":
        from tfrl.algorithms.sac.sac_tf_policy import SACTFPolicy
        config = {"q_model_config": {"fcnet_hiddens": hiddens},
                  "policy_model_config": {"fcnet_hiddens": hiddens},
                  "optimization": {"actor_learning_rate": 1e-3,
                                   "critic_learning_rate": 1e-3,
                                   "entropy_learning_rate": 1e-3},
                  "train_batch_size": 256, "jit_compile": jit, "seed": seed,
                  # TFRL_BENCH_NO_SOFT_UPDATE=1: no target update in the learning call
                  # (to measure its cost).
                  "target_network_update_freq": int(os.environ.get(
                      "TFRL_BENCH_NO_SOFT_UPDATE", "0"))}
        from tfrl.algorithms.sac.sac_config import SACConfig
        return SACTFPolicy(obs_space, act_space, SACConfig.from_dict(config).to_dict())
    from tfrl.algorithms.td3.td3_tf_policy import TD3TFPolicy
    config = {"actor_hiddens": hiddens, "critic_hiddens": hiddens, "train_batch_size": 256,
              "jit_compile": jit, "seed": seed, "policy_delay": 2}
    from tfrl.algorithms.td3.td3_config import TD3Config
    return TD3TFPolicy(obs_space, act_space, TD3Config.from_dict(config).to_dict())


def make_batch(policy, env: str, rows: int, seed: int):
    from tfrl.core.columns import Columns

    obs_size, act_size, bound = SHAPES[env]
    rng = np.random.default_rng(seed)
    return {Columns.OBS: rng.standard_normal((rows, obs_size), np.float32),
            Columns.NEXT_OBS: rng.standard_normal((rows, obs_size), np.float32),
            Columns.ACTIONS: rng.uniform(-bound, bound, (rows, act_size)).astype(np.float32),
            Columns.REWARDS: rng.standard_normal(rows).astype(np.float32),
            Columns.TERMINATEDS: (rng.random(rows) < 0.01).astype(np.float32)}


def learn(policy, batch):
    return policy.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=256,
                                 shuffle_sequences=False)


def op_counts(policy) -> None:
    fn = policy._train._learn_fns[None]  # rows: one function, no sequence bound
    graph = fn.graph
    totals = collections.Counter()

    def walk(graph_def_functions):
        for function in graph_def_functions:
            counts = collections.Counter(node.op for node in function.node_def)
            print(f"-- function {function.signature.name}: {sum(counts.values())} ops")
            for op, n in counts.most_common(25):
                print(f"   {n:5d} {op}")
            totals.update(counts)

    graph_def = graph.as_graph_def()
    top = collections.Counter(node.op for node in graph_def.node)
    print(f"-- outer graph: {sum(top.values())} ops")
    walk(graph_def.library.function)


def print_profile(logdir: str, steps: int) -> None:
    """Time per gradient step by op type (TF executor events of the host plane)."""
    import glob
    import re

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    by_type = collections.Counter()
    count = collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                match = re.match(r"^(.*):(\w+)$", name)
                if not match:
                    continue
                by_type[match.group(2)] += event.duration_ps
                count[match.group(2)] += 1
    total = sum(by_type.values())
    print(f"profile: {total / 1e9 / steps:.3f} ms of op time per step, "
          f"{sum(count.values()) / steps:.0f} ops per step")
    for op, ps in by_type.most_common(30):
        print(f"  {op:28s} {ps / 1e9 / steps:7.3f} ms/step  {count[op] / steps:6.1f}/step")
    print("by count: " + ", ".join(f"{op} {n / steps:.1f}" for op, n in count.most_common()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="SAC", choices=["SAC", "TD3"])
    parser.add_argument("--env", default="pendulum", choices=sorted(SHAPES))
    parser.add_argument("--hiddens", type=int, nargs="+", default=None)
    parser.add_argument("--k", type=int, default=16, help="gradient steps per call")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--jit", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ops", action="store_true")
    parser.add_argument("--save", default="")
    parser.add_argument("--profile", default="",
                        help="a log dir: profile the timed calls (TF profiler) and print "
                             "the time by op type")
    args = parser.parse_args()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    hiddens = args.hiddens or ([256, 256] if args.algo == "SAC" else [400, 300])
    policy = make_policy(args.algo, args.env, hiddens, bool(args.jit), args.seed)
    batch = make_batch(policy, args.env, args.k * 256, args.seed)
    learn(policy, batch)
    if args.ops:
        op_counts(policy)
        return 0
    cpu, wall = [], []
    if args.profile:
        for _ in range(args.warmup):
            learn(policy, batch)
        args.warmup = 0
        tf.profiler.experimental.start(args.profile)
    for i in range(args.warmup + args.calls):
        c0, w0 = time.process_time(), time.perf_counter()
        stats = learn(policy, batch)
        if i >= args.warmup:
            cpu.append((time.process_time() - c0) / args.k * 1e3)
            wall.append((time.perf_counter() - w0) / args.k * 1e3)
    if args.profile:
        tf.profiler.experimental.stop()
        print_profile(args.profile, args.calls * args.k)
    load = os.getloadavg()[0]
    print(f"{args.algo} {args.env} {hiddens} jit={args.jit} K={args.k}: cpu "
          f"{statistics.median(cpu):.2f} ms/step (min {min(cpu):.2f}), wall "
          f"{statistics.median(wall):.2f} ms/step, load {load:.1f}, "
          f"loss {stats['learner_stats']['total_loss']:.6f}", flush=True)
    if args.save:
        np.savez(args.save, *[v.numpy() for v in policy.model.variables],
                 *[v.numpy() for v in policy.target_model.variables])
    return 0


if __name__ == "__main__":
    sys.exit(main())
