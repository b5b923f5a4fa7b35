"""IMPALA and APPO throughput: tfrl with 2 Ray workers against RLlib 2.x's own IMPALA/APPO
on the same settings, and tfrl's learner on 1 vs 2 logical devices, in one run.

    python bench/bench_async.py                          # everything, tuned budgets
    python bench/bench_async.py --parts learner --learner_steps 20
    python bench/bench_async.py --parts train rllib --algos IMPALA --seeds 0 --max_steps 20000
    python bench/bench_async.py --parts train rllib --seeds 0 --max_steps 100000 \
        --curves bench/curves                            # learning curves, whole budget

Run it with a Python that has tfrl and Ray (`pip install -e '.[ray]'`, e.g. the
project's main venv); RLlib runs in its own virtualenv (`--rllib_python`, default
`$TFRL_RLLIB_PYTHON`: torch + `ray[rllib]==2.60` + lz4), because RLlib 2.x has
no TensorFlow and needs its own torch/Ray pins. Every run is its own subprocess, so
TensorFlow's logical devices and Ray start fresh; each prints one JSON line that this
script parses, then a summary with the ratios and the issue's targets.

Parts:

- `train`: `tfrl/tuned/<algo>_cartpole.yaml` (2 Ray workers of 0.5 CPU, 8 envs
  each, fragments of 50, train batches of 400) on a local Ray runtime of 2 CPUs, until
  a mean return of 150 over 100 episodes or `--max_steps` / `--max_wall_s`. Reports
  env steps sampled and trained per second and the seconds and env steps to 150, all
  timed from the end of the algorithm's construction (Ray start-up and the actors'
  start-up excluded, on both sides).
- `rllib`: RLlib's IMPALA/APPO (torch) from the same tuned file, every key mapped to
  RLlib's name (an unmapped key is an error, so the settings cannot drift apart), on
  the same Ray resources, timed the same way. `--rllib_stack old` (the default) is
  RLlib's old API stack (`RolloutWorker`s and a learner thread: the programming model
  tfrl follows); `--rllib_stack new` is the SamplingLoop/Learner stack with a local
  learner (`num_learners=0`). On the 2-core dev VM the new stack's IMPALA starts
  slowly: thousands of empty `train()` iterations before its first sampled steps, and
  most iterations report no mean return (bench/RESULTS.md has the numbers), so the old
  stack is the default; a run is cut at `--max_wall_s` either way. RLlib counts trained
  steps per epoch (APPO's 2 passes: 2x), as tfrl does.
- tfrl's time to 150 includes the learner's first call, which traces its compiled
  update (~1.5-3.5 s on the dev VM, most of a ~5 s run); RLlib's torch has no trace.
- `learner`: the policy's `learn_on_batch` on a fixed CartPole-shaped batch of
  `train_batch_size` rows (in time order, episodes of 25 steps), on one device and
  under a 2-replica `MirroredStrategy` on logical CPUs (same global batch, split in the
  graph; `--learn_inputs in_graph tf_data` adds the distributed `tf.data` feed).
  Reports rows learned per second.

With `--curves DIR` (or `$TFRL_BENCH_CURVES`) every `train` and `rllib` run trains for
its whole `--max_steps` instead of stopping at 150, and writes its learning curve
(bench/curves.py: env steps sampled, the mean return of the last `SMOOTHING` training
episodes on both sides, wall s) as `<algo>_CartPole-v1_tfrl_seed<k>.csv` and
`..._rllib_seed<k>.csv`; the RLlib header names its version, framework and stack, both
name the tuned file. The JSON lines then also give the env steps to a mean return of
150 and 450 (`steps_to`). tools/plot_curves.py draws them side by side.

Targets (issue 16): tfrl >= 2x RLlib's env steps trained per second and <= 0.5x its
time to 150. Timing numbers on a shared machine are off by 30 % or more: run alone for
final numbers.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from curves import ENV_VAR as CURVES_ENV_VAR, Curve

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 150.0
#: The returns whose first env-step count a curve run reports.
MILESTONES = (150.0, 450.0)
#: Episodes in the mean return, set on both sides (tfrl's metrics_smoothing_episodes,
#: RLlib's metrics_num_episodes_for_smoothing; both default to 100).
SMOOTHING = 100


def tuned(algo: str) -> str:
    return os.path.join(REPO, "tfrl", "tuned", f"{algo.lower()}_cartpole.yaml")


def tuned_source(algo: str) -> str:
    """The tuned file as a curve header's `source` (relative to the repository)."""
    return os.path.relpath(tuned(algo), REPO).replace(os.sep, "/")


def _train_loop(train, reward_and_counts, max_steps: int, max_wall_s: float,
                curve: "Curve | None" = None) -> dict:
    """Calls `train()` until the mean return reaches TARGET or a budget runs out; with a
    `curve`, until the budget runs out, adding every iteration's mean return to it.

    `reward_and_counts(result)` gives (mean return, env steps sampled, env steps
    trained). Returns the timings: the clock starts at the first `train()` call."""
    start = time.monotonic()
    reached = {}  # milestone -> (s, env steps sampled) when the mean first reached it
    iterations = 0
    while True:
        result = train()
        iterations += 1
        reward, sampled, trained = reward_and_counts(result)
        now = time.monotonic() - start
        if curve is not None:
            curve.add(sampled, reward, now)
        for milestone in MILESTONES:
            if milestone not in reached and reward >= milestone:
                reached[milestone] = (now, sampled)
        if ((curve is None and TARGET in reached) or sampled >= max_steps
                or now > max_wall_s):
            break
    wall = time.monotonic() - start
    to_target = reached.get(TARGET)
    out = {"wall_s": round(wall, 2), "iterations": iterations, "env_steps_sampled": sampled,
           "env_steps_trained": trained,
           "env_steps_sampled_per_s": round(sampled / wall, 1),
           "env_steps_trained_per_s": round(trained / wall, 1),
           "s_to_150": None if to_target is None else round(to_target[0], 2),
           "steps_to_150": None if to_target is None else to_target[1],
           "final_return": round(float(reward), 1)}
    if curve is not None:
        out["steps_to"] = {f"{m:g}": reached[m][1] if m in reached else None
                           for m in MILESTONES}
        out["curve"] = curve.write()
    return out


def _curve(algo: str, library: str, seed: int, max_steps: int, **fields) -> "Curve | None":
    """The run's learning curve when `$TFRL_BENCH_CURVES` names a folder, else None."""
    if not os.environ.get(CURVES_ENV_VAR):
        return None
    return Curve(algo, "CartPole-v1", library, seed, max_steps, smoothing=SMOOTHING,
                 source=tuned_source(algo), fields=fields)


def child_train(algo: str, seed: int, max_steps: int, max_wall_s: float) -> dict:
    import ray

    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = build_config(resolve_experiment(
        tuned(algo), overrides=[f"seed={seed}", f"metrics_smoothing_episodes={SMOOTHING}"]))
    built = time.monotonic()
    instance = get_algorithm_class(algo)(config=config)
    build_s = time.monotonic() - built

    def counts(result):
        counters = result["counters"]
        return (result["episode_reward_mean"], counters["num_env_steps_sampled"],
                counters.get("num_env_steps_trained", 0))

    curve = _curve(algo, "tfrl", seed, max_steps)
    try:
        timings = _train_loop(instance.train, counts, max_steps, max_wall_s, curve)
    finally:
        instance.stop()
        ray.shutdown()
    return {"part": "train", "algo": algo, "seed": seed, "build_s": round(build_s, 2), **timings}


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




# tfrl's tuned-file keys -> RLlib's old-stack AlgorithmConfig attributes.
RLLIB_OLD_KEYS = {
    "num_workers": "num_env_runners", "num_cpus_per_worker": "num_cpus_per_env_runner",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "rollout_fragment_length": "rollout_fragment_length",
    "train_batch_size": "train_batch_size", "num_sgd_iter": "num_epochs",
    "min_iter_time_s": "min_time_s_per_iteration", "lr": "lr", "gamma": "gamma",
    "vf_loss_coeff": "vf_loss_coeff", "entropy_coeff": "entropy_coeff",
    "grad_clip": "grad_clip", "model": "model", "seed": "seed",
}
# tfrl defaults that the tuned files leave out and RLlib 2.60 sets otherwise
# (tfrl: max_sample_requests_in_flight_per_worker), and the bench's smoothing window.
TFRL_DEFAULTS = {"max_requests_in_flight_per_env_runner": 2,
                 "metrics_num_episodes_for_smoothing": SMOOTHING}


def rllib_config(algo: str, seed: int, stack: str):
    """RLlib's IMPALA/APPO config (torch) with the settings of tfrl's tuned file."""
    import yaml
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    with open(tuned(algo)) as f:
        spec = yaml.safe_load(f)
    settings = {**spec["config"], "seed": seed}
    unknown = sorted(set(settings) - set(RLLIB_OLD_KEYS))
    if unknown:
        raise ValueError(f"bench_async: no RLlib name for {unknown} of {tuned(algo)}; add "
                         "them to RLLIB_OLD_KEYS so both sides run the same settings.")
    config = {"IMPALA": IMPALAConfig, "APPO": APPOConfig}[algo]().environment(spec["env"])
    config = config.framework("torch").resources(num_gpus=0)
    mapped = {RLLIB_OLD_KEYS[k]: v for k, v in settings.items()}
    mapped.update(TFRL_DEFAULTS)
    if stack == "old":
        config = config.api_stack(enable_rl_module_and_learner=False,
                                  enable_env_runner_and_connector_v2=False)
    else:
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
        config = config.learners(num_learners=0).rl_module(model_config=DefaultModelConfig(
            fcnet_hiddens=list(mapped.pop("model")["fcnet_hiddens"])))
        mapped["train_batch_size_per_learner"] = mapped.pop("train_batch_size")
    if "model" in mapped:  # merged into RLlib's model defaults (max_seq_len, ...)
        config = config.training(model=mapped.pop("model"))
    for key, value in mapped.items():
        if not hasattr(config, key):
            raise ValueError(f"bench_async: RLlib's {type(config).__name__} has no {key!r}.")
        setattr(config, key, value)
    return config


def child_rllib(algo: str, seed: int, max_steps: int, max_wall_s: float,
                stack: str = "old") -> dict:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = rllib_config(algo, seed, stack)
    built = time.monotonic()
    instance = config.build_algo()
    build_s = time.monotonic() - built

    def counts(result):
        runners = result.get("env_runners", {})
        reward = runners.get("episode_return_mean", runners.get("episode_reward_mean"))
        reward = float("nan") if reward is None else reward
        if stack == "old":
            return reward, result["num_env_steps_sampled"], result["num_env_steps_trained"]
        learners = result.get("learners", {}).get("__all_modules__", {})
        return (reward, result.get("num_env_steps_sampled_lifetime", 0),
                learners.get("num_env_steps_trained_lifetime", 0))

    curve = _curve(algo, "rllib", seed, max_steps, version=ray.__version__,
                   framework="torch", stack=stack)
    try:
        timings = _train_loop(instance.train, counts, max_steps, max_wall_s, curve)
    finally:
        instance.stop()
        ray.shutdown()
    return {"part": "rllib", "algo": algo, "seed": seed, "stack": stack,
            "build_s": round(build_s, 2), **timings}


def run_child(args: list, python: str, timeout_s: float, tfrl: bool = True) -> dict:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    if tfrl:
        env["PYTHONPATH"] = REPO + os.pathsep + os.environ.get("PYTHONPATH", "")
    else:  # RLlib's venv: keep its Ray/torch; keep RLlib from importing TensorFlow
        env.pop("PYTHONPATH", None)
        env["RLLIB_TEST_NO_TF_IMPORT"] = "1"
    try:
        out = subprocess.run([python, os.path.abspath(__file__), "--child", json.dumps(args)],
                             capture_output=True, text=True, cwd=REPO, env=env,
                             timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s", "args": args}
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": out.stderr[-2000:], "args": args}


def _mean(values: list):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _ratio(a, b):
    return None if a is None or not b else round(a / b, 2)


def summarize(results: list, algos: list) -> dict:
    """Per algorithm: tfrl / RLlib ratios (means over seeds) and 2 / 1 learner devices."""
    summary = {}
    for algo in algos:
        runs = {part: [r for r in results if r.get("part") == part and r.get("algo") == algo]
                for part in ("train", "rllib", "learner")}
        row = {}
        for part in ("train", "rllib"):
            done = runs[part]
            reached = [r["s_to_150"] for r in done if r.get("s_to_150") is not None]
            row[part] = {"trained_per_s": _mean([r["env_steps_trained_per_s"] for r in done]),
                         "s_to_150": _mean(reached) if len(reached) == len(done) else None,
                         "reached_150": f"{len(reached)}/{len(done)}"}
        row["throughput_ratio"] = _ratio(row["train"]["trained_per_s"],
                                         row["rllib"]["trained_per_s"])
        row["time_to_150_ratio"] = _ratio(row["train"]["s_to_150"], row["rllib"]["s_to_150"])
        row["meets_throughput_target"] = (None if row["throughput_ratio"] is None
                                          else row["throughput_ratio"] >= 2.0)
        row["meets_time_target"] = (None if row["time_to_150_ratio"] is None
                                    else row["time_to_150_ratio"] <= 0.5)
        by_devices = {(r["devices"], r["learn_input"]): r["rows_per_s"]
                      for r in runs["learner"] if "rows_per_s" in r}
        one = by_devices.get((1, "in_graph"))
        row["learner_rows_per_s"] = {f"{d}dev_{i}": v for (d, i), v in by_devices.items()}
        row["learner_2dev_over_1dev"] = {i: _ratio(v, one) for (d, i), v in by_devices.items()
                                         if d == 2}
        summary[algo] = row
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", default=["learner", "train", "rllib"],
                        choices=["train", "learner", "rllib"])
    parser.add_argument("--algos", nargs="+", default=["IMPALA", "APPO"],
                        choices=["IMPALA", "APPO"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--max_steps", type=int, default=500_000)
    parser.add_argument("--max_wall_s", type=float, default=600.0,
                        help="training seconds per run (start-up excluded)")
    parser.add_argument("--learner_steps", type=int, default=50)
    parser.add_argument("--learn_inputs", nargs="+", default=["in_graph"],
                        choices=["in_graph", "tf_data"],
                        help="how the 2-device learner is fed")
    parser.add_argument("--rllib_python", default=os.environ.get("TFRL_RLLIB_PYTHON", ""),
                        help="a Python with ray[rllib] 2.x and torch (default: "
                             "$TFRL_RLLIB_PYTHON)")
    parser.add_argument("--rllib_stack", choices=["old", "new"], default="old")
    parser.add_argument("--curves", metavar="DIR", default=None,
                        help="write each train/rllib run's learning curve into DIR (e.g. "
                             "bench/curves; runs then use their whole --max_steps)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = json.loads(args.child)
        fn = {"train": child_train, "learner": child_learner, "rllib": child_rllib}[kind]
        print(json.dumps(fn(*rest)), flush=True)
        return
    if "rllib" in args.parts and not os.path.exists(args.rllib_python):
        parser.error(f"--rllib_python {args.rllib_python} does not exist; give a Python with "
                     "ray[rllib] 2.x and torch, or leave out --parts rllib.")
    if args.curves:  # the children write their curves there
        os.environ[CURVES_ENV_VAR] = os.path.abspath(args.curves)
    run_timeout = args.max_wall_s + 300  # start-up of Ray and the actors on a busy machine
    results = []

    def record(result):
        results.append(result)
        print(json.dumps(result), flush=True)

    for algo in args.algos:
        if "learner" in args.parts:
            variants = [(1, "in_graph")] + [(2, i) for i in args.learn_inputs]
            for devices, learn_input in variants:
                record(run_child(["learner", algo, devices, args.learner_steps, learn_input],
                                 sys.executable, run_timeout))
        for seed in args.seeds:
            if "train" in args.parts:
                record(run_child(["train", algo, seed, args.max_steps, args.max_wall_s],
                                 sys.executable, run_timeout))
            if "rllib" in args.parts:
                record(run_child(["rllib", algo, seed, args.max_steps, args.max_wall_s,
                                  args.rllib_stack], args.rllib_python, run_timeout,
                                 tfrl=False))
    print("SUMMARY " + json.dumps(summarize(results, args.algos)), flush=True)


if __name__ == "__main__":
    main()
