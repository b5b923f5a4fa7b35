"""RLlib's BC and MARWIL learning curves from the offline data of tfrl's tuned files.

    python bench/bench_offline_curves.py --algos BC MARWIL --seeds 0 \
        --data data/offline/cartpole --rllib_python=<venv-rllib>/bin/python

For each algorithm, the tuned file (`tfrl/tuned/bc_cartpole.yaml`,
`tfrl/tuned/marwil_cartpole.yaml`) is run by RLlib (torch, **old API stack**: the
`RolloutWorker` + `JsonReader` path that reads the old-stack SampleBatch JSON lines
tfrl writes, one line per episode, obs/new_obs LZ4-compressed) with every key mapped to
RLlib's name (`RLLIB_KEYS`; an unmapped key is an error, so the settings cannot drift
apart). Its `input` points at `ROOT/<the file's last folder>` (`--data ROOT`); a missing
folder is first written here, in tfrl's venv, by `tfrl.examples.offline_data`
(`make_cartpole_datasets(ROOT)`, seed 0: the same generator and seed as
`bench/bench_curve_tuned.py --data ROOT` used for tfrl's curves).

After every iteration RLlib evaluates the greedy policy (`explore=False`) for
`--eval-episodes` episodes on the env (`evaluation_config` input `sampler`, as tfrl's),
and the curve gets (logged steps read so far, that mean return, wall seconds), written
as `bench/curves/<algo>_CartPole-v1_rllib_seed<k>.csv` (bench/curves.py; the header
names RLlib's version, framework and stack). RLlib runs in its own virtualenv
(`--rllib_python`, default `$TFRL_RLLIB_PYTHON`: `ray[rllib]==2.60`, torch, lz4), because
its gymnasium pin differs from tfrl's.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from curves import CURVES_DIR, Curve

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNED = {"BC": "bc_cartpole", "MARWIL": "marwil_cartpole"}

# tfrl's tuned-file keys -> RLlib 2.60's old-stack AlgorithmConfig attributes.
RLLIB_KEYS = {
    "input": "input_", "shuffle_buffer_size": "shuffle_buffer_size",
    "train_batch_size": "train_batch_size", "sgd_minibatch_size": "minibatch_size",
    "num_sgd_iter": "num_epochs", "lr": "lr", "gamma": "gamma", "beta": "beta",
    "vf_coeff": "vf_coeff",
    "moving_average_sqd_adv_norm_update_rate": "moving_average_sqd_adv_norm_update_rate",
    "model": "model", "evaluation_interval": "evaluation_interval",
    "evaluation_duration": "evaluation_duration", "seed": "seed",
}


def tuned_spec(algo: str) -> dict:
    import yaml

    with open(os.path.join(REPO, "tfrl", "tuned", TUNED[algo] + ".yaml")) as f:
        return yaml.safe_load(f)


def rllib_config(algo: str, seed: int, data: str, eval_episodes: int):
    """RLlib's BC/MARWIL config (torch, old stack) with the settings of tfrl's tuned file,
    evaluated greedily after every iteration."""
    from ray.rllib.algorithms.bc import BCConfig
    from ray.rllib.algorithms.marwil import MARWILConfig

    spec = tuned_spec(algo)
    settings = {**spec["config"], "seed": seed, "evaluation_interval": 1,
                "evaluation_duration": eval_episodes,
                "input": os.path.join(data, os.path.basename(spec["config"]["input"]))}
    unknown = sorted(set(settings) - set(RLLIB_KEYS))
    if unknown:
        raise ValueError(f"bench_offline_curves: no RLlib name for {unknown} of "
                         f"{TUNED[algo]}.yaml; add them to RLLIB_KEYS so both sides run "
                         "the same settings.")
    config = {"BC": BCConfig, "MARWIL": MARWILConfig}[algo]().environment(spec["env"])
    config = config.framework("torch").resources(num_gpus=0).api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
    config = config.env_runners(num_env_runners=0).evaluation(
        evaluation_num_env_runners=0, evaluation_duration_unit="episodes",
        evaluation_config={"input": "sampler", "explore": False})
    mapped = {RLLIB_KEYS[k]: v for k, v in settings.items()}
    config = config.training(model=mapped.pop("model"))
    for key, value in mapped.items():
        if not hasattr(config, key):
            raise ValueError(f"bench_offline_curves: RLlib's {type(config).__name__} has "
                             f"no {key!r}.")
        setattr(config, key, value)
    return config, spec


def child(algo: str, seed: int, data: str, eval_episodes: int, folder: str) -> dict:
    import ray

    # Reading, learning and evaluation all run in this process (num_env_runners=0,
    # evaluation_num_env_runners=0), but RLlib still puts its config into Ray's object
    # store. Under load the raylet can miss Ray's 10 s start-up wait: give it longer
    # (RAY_raylet_start_wait_time_s) and its own temp dir, apart from other Ray runtimes.
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    temp_dir = tempfile.mkdtemp(prefix="tfrl_offline_curves_")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir=os.path.join(temp_dir, "ray"))
    config, spec = rllib_config(algo, seed, data, eval_episodes)
    iterations = spec["stop"]["training_iteration"]
    instance = config.build_algo()
    curve = Curve(algo, spec["env"], "rllib", seed, iterations,
                  note=("offline: x is logged steps read, y the mean greedy return of "
                        f"{eval_episodes} evaluation episodes"),
                  source=f"tfrl/tuned/{TUNED[algo]}.yaml",
                  fields={"version": ray.__version__, "framework": "torch",
                          "stack": "old"})
    start, per_iteration = time.time(), []
    try:
        for _ in range(iterations):
            result = instance.train()
            evaluation = result["evaluation"]["env_runners"]
            mean = evaluation.get("episode_return_mean",
                                  evaluation.get("episode_reward_mean"))
            steps = result["num_env_steps_sampled"]
            curve.add(steps, mean, time.time() - start)
            per_iteration.append([steps, mean])
    finally:
        instance.stop()
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    return {"algo": algo, "seed": seed, "csv": curve.write(folder),
            "per_iteration": per_iteration, "wall_s": round(time.time() - start, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["BC", "MARWIL"], choices=sorted(TUNED))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--data", default=os.path.join(REPO, "data", "offline", "cartpole"),
                        help="offline data root (its expert/ and mixed/ made if missing)")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--curves", default=CURVES_DIR, metavar="DIR")
    parser.add_argument("--rllib_python", default=os.environ.get("TFRL_RLLIB_PYTHON", ""),
                        help="a Python with ray[rllib] 2.x and torch (default: "
                             "$TFRL_RLLIB_PYTHON)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        algo, seed = json.loads(args.child)
        out = child(algo, seed, os.path.abspath(args.data), args.eval_episodes,
                    args.curves)
        print("RESULT " + json.dumps(out), flush=True)
        return 0
    if not os.path.exists(args.rllib_python):
        parser.error(f"--rllib_python {args.rllib_python!r} does not exist; give a Python "
                     "with ray[rllib] 2.x and torch (or set $TFRL_RLLIB_PYTHON).")
    if not all(os.path.isdir(os.path.join(args.data, d)) for d in ("expert", "mixed")):
        sys.path.insert(0, REPO)
        from tfrl.examples import offline_data

        print(f"writing the CartPole offline data into {args.data} ...", flush=True)
        print(offline_data.make_cartpole_datasets(args.data), flush=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["RLLIB_TEST_NO_TF_IMPORT"] = "1"  # RLlib's venv has no TensorFlow
    failed = 0
    for algo in args.algos:
        for seed in args.seeds:
            cmd = [args.rllib_python, os.path.abspath(__file__), *sys.argv[1:],
                   "--child", json.dumps([algo, seed])]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                      cwd=REPO, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                print(f"{algo} seed {seed}: timed out after {args.timeout:.0f} s")
                failed += 1
                continue
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if not lines:
                print(f"{algo} seed {seed} failed (exit {proc.returncode}):\n"
                      f"{proc.stderr[-3000:]}")
                failed += 1
                continue
            print(f"{algo} seed {seed}: {lines[-1][len('RESULT '):]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
