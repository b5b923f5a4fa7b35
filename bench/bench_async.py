"""IMPALA and APPO throughput: tfrl with 2 Ray workers, tfrl's learner on 1 vs 2 logical
devices, and RLlib 2.x's own IMPALA/APPO on the same settings when it can run them.

    python bench/bench_async.py                          # everything, tuned budgets
    python bench/bench_async.py --parts learner --learner_steps 20
    python bench/bench_async.py --parts train --algos IMPALA --seeds 0 --max_steps 50000

Parts (each run is its own subprocess, so that TensorFlow's logical devices and Ray
start fresh):

- `train`: `examples/tuned/<algo>_cartpole.yaml` (2 Ray workers, 0.5 CPU each) until a
  mean return of 150 or `--max_steps`; reports env steps sampled and trained per second
  (wall time from the algorithm's construction, Ray start-up excluded) and the seconds and
  env steps to 150.
- `learner`: the policy's `learn_on_batch` on a fixed CartPole-shaped batch of
  `train_batch_size` rows (in time order, episodes of 25 steps), under one device and a
  2-replica `MirroredStrategy` on logical CPUs (the batch split in the graph, and fed
  by a distributed `tf.data` pipeline, `learn_input="tf_data"`); reports rows learned
  per second.
- `rllib`: RLlib's IMPALA/APPO with the same settings. RLlib 2.x dropped TensorFlow:
  when `ray.rllib` is missing or cannot build a TF2 algorithm, the part prints why and
  is skipped.

Timing numbers on a shared machine are off by 30 % or more: run alone for final numbers.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 150.0


def tuned(algo: str) -> str:
    return os.path.join(REPO, "examples", "tuned", f"{algo.lower()}_cartpole.yaml")


def child_train(algo: str, seed: int, max_steps: int) -> dict:
    from tfrl.cli.experiment import build_config, resolve_experiment
    from tfrl.algorithms.registry import get_algorithm_class

    config = build_config(resolve_experiment(tuned(algo), overrides=[f"seed={seed}"]))
    instance = get_algorithm_class(algo)(config=config)
    start = time.monotonic()
    reached = None
    try:
        while True:
            result = instance.train()
            if reached is None and result["episode_reward_mean"] >= TARGET:
                reached = (time.monotonic() - start, result["timesteps_total"])
            if reached is not None or result["timesteps_total"] >= max_steps:
                break
    finally:
        instance.stop()
    wall = time.monotonic() - start
    counters = result["counters"]
    return {"part": "train", "algo": algo, "seed": seed, "wall_s": round(wall, 2),
            "env_steps_sampled_per_s": round(counters["num_env_steps_sampled"] / wall, 1),
            "env_steps_trained_per_s": round(counters.get("num_env_steps_trained", 0) / wall, 1),
            "s_to_150": None if reached is None else round(reached[0], 2),
            "steps_to_150": None if reached is None else reached[1],
            "final_return": round(result["episode_reward_mean"], 1)}


def child_learner(algo: str, devices: int, steps: int, learn_input: str = "in_graph") -> dict:
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import gymnasium as gym
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment
    from tfrl.policy.sample_batch import SampleBatch

    config = build_config(resolve_experiment(tuned(algo))).to_dict()
    config.update(seed=0, num_gpus=devices if devices > 1 else 0, _fake_gpus=devices > 1,
                  learn_input=learn_input)
    policy = get_algorithm_class(algo).default_policy_class(
        gym.spaces.Box(-4.8, 4.8, (4,), np.float32), gym.spaces.Discrete(2), config)
    rows = config["train_batch_size"]
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (rows + 1, 4)).astype(np.float32)
    actions, _, extras = policy.compute_actions(obs[:-1])
    t = np.arange(rows) % 25
    batch = SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                        rewards=np.ones(rows, np.float32), terminateds=t == 24,
                        truncateds=np.zeros(rows, bool), eps_id=np.arange(rows) // 25, t=t,
                        **extras)
    batch = policy.postprocess_trajectory(batch)
    policy.learn_on_batch(batch)  # traces
    start = time.perf_counter()
    for _ in range(steps):
        policy.learn_on_batch(batch)
    took = time.perf_counter() - start
    return {"part": "learner", "algo": algo, "devices": devices, "learn_input": learn_input,
            "rows_per_s": round(steps * rows * config["num_sgd_iter"] / took, 1),
            "ms_per_batch": round(1000 * took / steps, 2)}


def child_rllib(algo: str, seed: int, max_steps: int) -> dict:
    try:
        from ray.rllib.algorithms.registry import get_algorithm_class as rllib_class
    except Exception as e:  # noqa: BLE001 - any import failure means: skip
        return {"part": "rllib", "algo": algo, "skipped": f"ray.rllib not importable: {e!r}"}
    try:
        cls, _ = rllib_class(algo, return_config=True)
        config = cls.get_default_config().framework("tf2").environment("CartPole-v1")
        config = config.rollouts(num_rollout_workers=2).debugging(seed=seed)
        instance = config.build()
    except Exception as e:  # noqa: BLE001
        return {"part": "rllib", "algo": algo,
                "skipped": f"RLlib cannot build {algo} with framework='tf2': {e!r}"}
    start = time.monotonic()
    reached = None
    try:
        while True:
            result = instance.train()
            steps = result.get("num_env_steps_sampled", result.get("timesteps_total", 0))
            reward = result.get("episode_reward_mean",
                                result.get("env_runners", {}).get("episode_return_mean", 0))
            if reward >= TARGET and reached is None:
                reached = (time.monotonic() - start, steps)
            if reached is not None or steps >= max_steps:
                break
    finally:
        instance.stop()
    wall = time.monotonic() - start
    return {"part": "rllib", "algo": algo, "seed": seed, "wall_s": round(wall, 2),
            "env_steps_sampled_per_s": round(steps / wall, 1),
            "s_to_150": None if reached is None else round(reached[0], 2)}


def run_child(args: list) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(args)],
                         capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": REPO + os.pathsep
                              + os.environ.get("PYTHONPATH", ""),
                              "TF_CPP_MIN_LOG_LEVEL": "2"})
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": out.stderr[-2000:], "args": args}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", default=["train", "learner", "rllib"],
                        choices=["train", "learner", "rllib"])
    parser.add_argument("--algos", nargs="+", default=["IMPALA", "APPO"],
                        choices=["IMPALA", "APPO"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--max_steps", type=int, default=500_000)
    parser.add_argument("--learner_steps", type=int, default=50)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = json.loads(args.child)
        fn = {"train": child_train, "learner": child_learner, "rllib": child_rllib}[kind]
        print(json.dumps(fn(*rest)), flush=True)
        return
    for algo in args.algos:
        if "learner" in args.parts:
            for devices, learn_input in ((1, "in_graph"), (2, "in_graph"), (2, "tf_data")):
                print(json.dumps(run_child(["learner", algo, devices, args.learner_steps,
                                            learn_input])), flush=True)
        for seed in args.seeds:
            if "train" in args.parts:
                print(json.dumps(run_child(["train", algo, seed, args.max_steps])), flush=True)
            if "rllib" in args.parts:
                print(json.dumps(run_child(["rllib", algo, seed, args.max_steps])), flush=True)


if __name__ == "__main__":
    main()
