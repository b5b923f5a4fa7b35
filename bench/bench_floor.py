"""The matmul floor of one SAC / TD3 gradient step, against SB3's measured step.

    python bench/bench_floor.py                      # SAC and TD3 Pendulum, SAC HalfCheetah
    python bench/bench_floor.py --steps 400 --threads 1

Why: issue 15 asks for tfrl's off-policy wall <= 0.5x Stable-Baselines3's at the same
settings (one thread each). A gradient step is dominated by dense matmuls whose count is
fixed by the algorithm and the network sizes, so no implementation can run a step faster
than those matmuls alone. This bench counts them and times them:

- `floor TF`: exactly the matmuls of one gradient step of the minimal math (forwards,
  weight gradients, and input gradients only where the loss needs them: the critics'
  weights get no gradient from the actor's loss; the actor's update counted 1/delay for
  TD3), with these shapes, run back to back in one `tf.function` (a `tf.while_loop` over
  the steps), nothing else: no activations, no losses, no optimizer.
- `floor torch`: the same matmuls in a Python loop of `torch.mm` (torch's dispatch included,
  as SB3 pays it).
- `SB3 step`: SB3's own `train(gradient_steps=N)` on a buffer filled with random
  transitions (the zoo's settings of bench_offpolicy / bench_mujoco).

Printed: milliseconds per gradient step, the GFLOP/s the floors reach, and
`floor TF / SB3 step`: the smallest tfrl/SB3 wall ratio any TF implementation could reach
on the learner (env stepping and acting come on top, for both). Each measurement runs in
its own subprocess with `--threads` intra/inter-op threads (TF) or torch threads; the SB3
and torch children do not import TensorFlow.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from typing import List, Tuple

BATCH = 256
# name -> (algo, obs dim, action dim, hiddens, policy delay)
WORKLOADS = {
    "sac_pendulum": ("SAC", 3, 1, (256, 256), 1),
    "td3_pendulum": ("TD3", 3, 1, (400, 300), 2),
    "sac_halfcheetah": ("SAC", 17, 6, (256, 256), 1),
}


def _mlp(dims) -> List[Tuple[int, int]]:
    return list(zip(dims[:-1], dims[1:]))


def matmuls(algo: str, obs: int, act: int, hiddens, delay: int):
    """[(m, k, n, weight)]: the matmuls [m, k] x [k, n] of one gradient step; `weight` is
    how often per gradient step (1/delay for TD3's actor update)."""
    b = BATCH
    actor = _mlp((obs, *hiddens, 2 * act if algo == "SAC" else act))
    critic = _mlp((obs + act, *hiddens, 1))

    def fwd(layers, w=1.0):
        return [(b, i, o, w) for i, o in layers]

    def wgrad(layers, w=1.0):
        return [(i, b, o, w) for i, o in layers]

    def igrad(layers, first, w=1.0):
        return [(b, o, i, w) for j, (i, o) in enumerate(layers) if first or j > 0]

    twin = 2
    out = fwd(actor)  # the (target) actor on next_obs
    out += fwd(critic, twin)  # twin target critics
    out += fwd(critic, twin) + wgrad(critic, twin) + igrad(critic, False, twin)  # critic loss
    w = 1.0 / delay
    q_for_actor = twin if algo == "SAC" else 1  # SAC: min of both; TD3: Q1
    out += fwd(actor, w) + fwd(critic, q_for_actor * w) + igrad(critic, True, q_for_actor * w)
    out += wgrad(actor, w) + igrad(actor, False, w)
    return out


def gflop(shapes) -> float:
    return sum(2.0 * m * k * n * w for m, k, n, w in shapes) / 1e9


def child_tf(name: str, steps: int, threads: int) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    shapes = matmuls(*WORKLOADS[name])
    # Integer-weight matmuls run every step; fractional ones (TD3's actor update) every
    # 1/w-th step, as the algorithm does.
    rng = tf.random.Generator.from_seed(0)
    pairs = [(tf.Variable(rng.normal((m, k))), tf.Variable(rng.normal((k, n))), w)
             for m, k, n, w in shapes]

    @tf.function
    def run(n_steps):
        def body(i, acc):
            total = acc
            for a, bm, w in pairs:
                reps = max(int(w), 1)
                every = int(round(1.0 / w)) if w < 1 else 1
                for _ in range(reps):
                    def mm(a=a, bm=bm):
                        # The loop index enters the operand: no hoisting out of the loop.
                        return tf.reduce_sum(tf.matmul(a + tf.cast(i, tf.float32) * 1e-9, bm))
                    if every > 1:
                        total += tf.cond(i % every == 0, mm, lambda: 0.0)
                    else:
                        total += mm()
            return i + 1, total

        return tf.while_loop(lambda i, _: i < n_steps, body, (0, 0.0))[1]

    run(tf.constant(2))  # trace
    start, cpu = time.perf_counter(), time.process_time()
    run(tf.constant(steps)).numpy()
    return {"ms": 1e3 * (time.perf_counter() - start) / steps,
            "cpu_ms": 1e3 * (time.process_time() - cpu) / steps}


def child_torch(name: str, steps: int, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shapes = matmuls(*WORKLOADS[name])
    pairs = [(torch.randn(m, k), torch.randn(k, n), w) for m, k, n, w in shapes]
    with torch.no_grad():
        for a, bm, _ in pairs:  # warm-up
            torch.mm(a, bm)
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(steps):
            for a, bm, w in pairs:
                every = int(round(1.0 / w)) if w < 1 else 1
                if i % every == 0:
                    for _ in range(max(int(w), 1)):
                        torch.mm(a, bm)
    return {"ms": 1e3 * (time.perf_counter() - start) / steps,
            "cpu_ms": 1e3 * (time.process_time() - cpu) / steps}


def child_sb3(name: str, steps: int, threads: int) -> dict:
    sys.modules["tensorflow"] = None  # SB3's logger would import it
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    torch.set_num_threads(threads)
    algo, _, _, hiddens, _ = WORKLOADS[name]
    env_id = "Pendulum-v1" if "pendulum" in name else "HalfCheetah-v5"
    env = gym.make(env_id)
    common = {"seed": 0, "device": "cpu", "verbose": 0, "learning_rate": 1e-3,
              "policy_kwargs": {"net_arch": list(hiddens)}}
    if algo == "SAC":
        model = SAC("MlpPolicy", env, **common)
    else:
        dim = env.action_space.shape[-1]
        model = TD3("MlpPolicy", env, gamma=0.98, **common,
                    action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)))
    model.learn(total_timesteps=2 * BATCH)  # fills the buffer with random transitions
    model.train(gradient_steps=10, batch_size=BATCH)  # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    model.train(gradient_steps=steps, batch_size=BATCH)
    return {"ms": 1e3 * (time.perf_counter() - start) / steps,
            "cpu_ms": 1e3 * (time.process_time() - cpu) / steps}


CHILDREN = {"tf": child_tf, "torch": child_torch, "sb3": child_sb3}


def _launch(kind: str, name: str, steps: int, threads: int) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--workload", name,
           "--steps", str(steps), "--threads", str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{kind} {name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS),
                        default=list(WORKLOADS))
    parser.add_argument("--steps", type=int, default=400, help="gradient steps timed")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", choices=sorted(CHILDREN))
    parser.add_argument("--workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(CHILDREN[args.child](args.workload, args.steps,
                                                           args.threads)), flush=True)
        return 0
    print(f"{args.threads} thread(s); batch {BATCH}; {args.steps} gradient steps timed; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'workload':16s} {'GFLOP/step':>10s} {'floor TF ms':>11s} {'GFLOP/s':>8s} "
          f"{'floor torch ms':>14s} {'SB3 step ms':>11s} {'floor TF / SB3':>14s}")
    for name in args.workloads:
        flops = gflop(matmuls(*WORKLOADS[name]))
        tf_r = _launch("tf", name, args.steps, args.threads)
        torch_r = _launch("torch", name, args.steps, args.threads)
        sb3_r = _launch("sb3", name, args.steps, args.threads)
        print(f"{name:16s} {flops:10.3f} {tf_r['ms']:11.2f} {flops / tf_r['ms'] * 1e3:8.1f} "
              f"{torch_r['ms']:14.2f} {sb3_r['ms']:11.2f} {tf_r['ms'] / sb3_r['ms']:14.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
