"""Ape-X DQN: env steps trained per second with 2 Ray workers against tfrl's plain DQN, the
cost of each actor's unit of work, and the throughput those costs predict for 1-8 workers
on a two-node cluster.

    python bench/bench_apex.py                  # ~3 min: costs, Ray latency, both runs
    python bench/bench_apex.py --seconds 20     # shorter throughput runs

Both runs use `tfrl/tuned/apex_cartpole.yaml`'s network and loss ([256, 256] relu,
3-step double Q, batch 64) on CartPole-v1 and the same replay ratio
(`training_intensity` 8: 8 replayed rows per sampled row):

- Ape-X: the tuned file as it is (2 Ray rollout workers of 0.5 CPU, 2 replay shards of
  no CPU, the learner thread on the driver);
- DQN: `num_workers=0`, rounds of 16 steps on the driver and then 2 gradient steps of
  64 rows in one compiled call (16 x 8 / 64), prioritized replay.

Each runs `--seconds` seconds after its replay starts; reported: env steps sampled and
trained per second over that window.

Per-actor costs (in this process, median of `--reps` calls, one TF thread): a rollout
worker's `sample()` of 16 steps and the priorities it computes for them (3-step TD
errors); a shard's `add_batch` of those 16 rows, `replay()` of 64 rows and
`update_priorities` of 64 rows; the learner's gradient step on 64 rows and the TD errors
of those rows under the new weights. Ray's round trip to a shard actor (a `__len__`
call, and an `add_batch` of 16 rows) is measured on a local Ray runtime.

The model (written for a cluster where each actor has a core of its own: e.g. two nodes,
the driver, learner and shards on one, the workers spread over both): with `N` workers,
sampled steps/s = min(N x worker rate, learner rate / intensity, shard rate), where the
worker rate is 1 / (sample + prioritize + send cost per step), the learner rate is the
rows per second of gradient step + new TD errors, and the shard rate is
S / (add + intensity x (replay + update)) per step for S shards. Trained steps/s =
intensity x sampled steps/s.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TUNED = os.path.join(ROOT, "tfrl", "tuned", "apex_cartpole.yaml")


def _median_s(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def apex_config(**overrides):
    from tfrl.cli.experiment import build_config, resolve_experiment
    return build_config(resolve_experiment(TUNED, overrides=["seed=0"])).replace(**overrides)


def measure_costs(reps):
    """Seconds per unit of each actor's work (see the module docstring)."""
    from tfrl.algorithms.apex_dqn import ApexDQN
    from tfrl.algorithms.apex_dqn.apex_learner_thread import ApexLearnerThread
    from tfrl.algorithms.apex_dqn.replay_shards import add_worker_priorities
    from tfrl.execution.replay_buffer import LocalReplayBuffer
    from tfrl.algorithms.apex_dqn.replay_shards import shard_kwargs

    config = apex_config(num_workers=0, num_steps_sampled_before_learning_starts=0)
    algo = ApexDQN(config=config)
    worker = algo.workers.local_worker()
    fragment = config.rollout_fragment_length
    batch_size = config.train_batch_size
    shard = LocalReplayBuffer(**shard_kwargs(config, 0))
    for _ in range(200):  # a shard holding some rows
        shard.add_batch(add_worker_priorities(worker, worker.sample()))
    batch = worker.sample()
    prioritized = add_worker_priorities(worker, batch)
    replayed = shard.replay()
    learner = ApexLearnerThread(worker, batch_size, 4, prioritized_replay=True)

    def learn():
        learner.inqueue.put((0, replayed))
        learner.step()
        return learner.outqueue.get_nowait()

    learn()  # traces
    output = learn()
    costs = {
        "sample_per_step": _median_s(worker.sample, reps) / fragment,
        "prioritize_per_step": _median_s(lambda: add_worker_priorities(worker, batch),
                                         reps) / fragment,
        "shard_add_per_step": _median_s(lambda: shard.add_batch(prioritized), reps) / fragment,
        "shard_replay_per_row": _median_s(shard.replay, reps) / batch_size,
        "shard_update_per_row": _median_s(
            lambda: shard.update_priorities(output.td_errors), reps) / batch_size,
        "learner_step_per_row": _median_s(learn, reps) / batch_size,
    }
    algo.stop()
    return costs


def measure_ray_latency(reps):
    """Seconds of a round trip to a replay-shard actor: `__len__`, `add_batch` of 16 rows."""
    from tfrl.algorithms.apex_dqn import ApexDQN
    from tfrl.algorithms.apex_dqn.replay_shards import ReplayShards, add_worker_priorities
    config = apex_config(num_workers=0, optimizer={"num_replay_buffer_shards": 1})
    algo = ApexDQN(config=config)
    worker = algo.workers.local_worker()
    prioritized = add_worker_priorities(worker, worker.sample())
    shards = ReplayShards(config, remote=True)
    shards.wait_ready(120)
    out = {"ray_call_s": _median_s(lambda: shards.call(0, "__len__").result(60), reps),
           "ray_add_16_rows_s": _median_s(
               lambda: shards.call(0, "add_batch", prioritized).result(60), reps)}
    shards.stop()
    algo.stop()
    return out


def run_for(algo, seconds, label):
    """Trains until replay has run `seconds` s; sampled and trained steps/s over that."""
    def counters():
        c = algo.train()["counters"]
        return c.get("num_env_steps_sampled", 0), c.get("num_env_steps_trained", 0)

    sampled0, trained0 = counters()
    while trained0 == 0:
        sampled0, trained0 = counters()
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        sampled, trained = counters()
    wall = time.monotonic() - start
    out = {"sampled_per_s": (sampled - sampled0) / wall,
           "trained_per_s": (trained - trained0) / wall, "window_s": wall}
    print(f"{label}: {json.dumps({k: round(v, 1) for k, v in out.items()})}", flush=True)
    return out


def measure_throughput(seconds):
    from tfrl.algorithms.apex_dqn import ApexDQN
    from tfrl.algorithms.dqn import DQN
    apex = ApexDQN(config=apex_config())
    try:
        apex_out = run_for(apex, seconds, "Ape-X, 2 Ray workers")
    finally:
        apex.stop()
    config = apex_config()
    dqn_keys = {k: v for k, v in config.to_dict().items()
                if k not in ("optimizer", "max_requests_in_flight_per_sampler_worker",
                             "max_requests_in_flight_per_replay_worker",
                             "timeout_s_sampler_manager", "timeout_s_replay_manager",
                             "learner_queue_size", "num_cpus_per_replay_shard",
                             "custom_resources_per_replay_shard")}
    dqn_keys.update(num_workers=0, exploration_config={
        "type": "EpsilonGreedy", "initial_epsilon": 1.0, "final_epsilon": 0.02,
        "epsilon_timesteps": 10000},
        replay_buffer_config={**config.replay_buffer_config,
                              "worker_side_prioritization": False})
    dqn = DQN(config=dqn_keys)
    try:
        dqn_out = run_for(dqn, seconds, "DQN, driver only")
    finally:
        dqn.stop()
    return {"apex_2_workers": apex_out, "dqn": dqn_out}


def model_curve(costs, ray, intensity, shards=2, max_workers=8):
    """Predicted sampled and trained steps/s for 1..max_workers workers (module docstring)."""
    worker_s = costs["sample_per_step"] + costs["prioritize_per_step"] + \
        ray["ray_add_16_rows_s"] / 16
    learner_rows_per_s = 1.0 / costs["learner_step_per_row"]
    shard_s = costs["shard_add_per_step"] + intensity * (
        costs["shard_replay_per_row"] + costs["shard_update_per_row"])
    rows = []
    for n in range(1, max_workers + 1):
        limits = {"workers": n / worker_s, "learner": learner_rows_per_s / intensity,
                  "shards": shards / shard_s}
        bound = min(limits, key=limits.get)
        rows.append({"workers": n, "sampled_per_s": limits[bound],
                     "trained_per_s": intensity * limits[bound], "bound": bound})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args()
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.backends.ray import init_ray
    init_ray(num_cpus=2, log_to_driver=False, configure_logging=False)

    costs = measure_costs(args.reps)
    print("costs (us):", json.dumps({k: round(v * 1e6, 1) for k, v in costs.items()}),
          flush=True)
    ray = measure_ray_latency(args.reps)
    print("Ray round trips (ms):", json.dumps({k: round(v * 1e3, 2) for k, v in ray.items()}),
          flush=True)
    throughput = measure_throughput(args.seconds)
    curves = {}
    # The tuned file's replay ratio, and RLlib's default (one replayed row per sampled row).
    for intensity in (float(apex_config().training_intensity), 1.0):
        curves[intensity] = curve = model_curve(costs, ray, intensity)
        print(f"training_intensity {intensity:g}: workers | predicted sampled/s | "
              "trained/s | bound")
        for row in curve:
            print(f"{row['workers']} | {row['sampled_per_s']:.0f} | "
                  f"{row['trained_per_s']:.0f} | {row['bound']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"costs_s": costs, "ray_s": ray, "throughput": throughput,
                       "curves": {str(k): v for k, v in curves.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
