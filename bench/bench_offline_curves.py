"""RLlib's BC, MARWIL and CQL learning curves from the offline data of tfrl's tuned files.

    python bench/bench_offline_curves.py --algos BC MARWIL --seeds 0 \
        --data data/offline/cartpole --rllib_python=<venv-rllib>/bin/python
    python bench/bench_offline_curves.py --algos CQL --seeds 0 \
        --data data/offline --rllib_python=<venv-rllib>/bin/python

For each algorithm, the tuned file (`tfrl/tuned/bc_cartpole.yaml`,
`tfrl/tuned/marwil_cartpole.yaml`, `tfrl/tuned/cql_pendulum.yaml`) is run by RLlib
(torch, **old API stack**: the `RolloutWorker` + `JsonReader` path that reads the
old-stack SampleBatch JSON lines tfrl writes, one line per episode) with every key
mapped to RLlib's name (`RLLIB_KEYS`; an unmapped key is an error, so the settings cannot
drift apart). Its `input` points at `ROOT/<the file's last folder>` (`--data ROOT`,
default `DATA_ROOT`: data/offline/cartpole for BC and MARWIL, data/offline for CQL); a
missing folder is first written here, in tfrl's venv, by `tfrl.examples.offline_data`
(`make_cartpole_datasets(ROOT)` or `make_pendulum_dataset(ROOT/pendulum)`, seed 0: the
same generators and seed as `bench/bench_curve_tuned.py --data ROOT` used for tfrl's
curves).

CQL: RLlib 2.60's old-stack CQL (`CQLTorchPolicy`: its loss, optimizers, BC phase and
target nets) learns under RLlib's SAC/DQN old-stack training step (`cql_with_replay`):
the rows read go into RLlib's replay buffer and 256-row batches are replayed from it, as
RLlib's CQL did up to 1.x and tfrl's CQL does. RLlib 2.60's own CQL step has no replay buffer: it
trains once on each batch read, and its loss steps the optimizers only on a batch of
exactly `train_batch_size` rows, so with the tuned file's 1,000-row reads it would
silently never step (and `replay_buffer_config`, `training_intensity` and
`num_steps_sampled_before_learning_starts` would mean nothing). tfrl reads one logged
episode (200 rows) per sampling round, as RLlib 1.x's RolloutWorker did, whatever
`rollout_fragment_length`; RLlib 2.60's JsonReader reads lines until it has
`train_batch_size` rows (two episodes) and its RolloutWorker until it has
`rollout_fragment_length`, and it starts learning after (not at)
`num_steps_sampled_before_learning_starts`. So RLlib's `input` is its own JsonReader on
the same folder set to one line per read (`one_line_reader`), and `cql_schedule()`
translates those three keys so that RLlib runs tfrl's schedule (a 200-row round, 50
gradient steps after each from the 10,000th row on: 0 / 50 / 1,300 / 2,550 gradient
steps after iterations 1-4); the child checks the counts. The logged actions are in
[-1, 1] (tfrl's SAC under `normalize_actions`): `actions_in_input_normalized=True`.

After every iteration RLlib evaluates the greedy policy (`explore=False`) for
`--eval-episodes` episodes on the env (`evaluation_config` input `sampler`, as tfrl's),
and the curve gets (logged steps read so far, that mean return, wall seconds), written
as `bench/curves/<algo>_<env>_rllib_seed<k>.csv` (bench/curves.py; the header
names RLlib's version, framework and stack). RLlib runs in its own virtualenv
(`--rllib_python`, default `$TFRL_RLLIB_PYTHON`: `ray[rllib]==2.60`, torch, lz4), because
its gymnasium pin differs from tfrl's, with one torch thread.
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
TUNED = {"BC": "bc_cartpole", "MARWIL": "marwil_cartpole", "CQL": "cql_pendulum"}
#: Each algorithm's default `--data` root (its tuned file's `input` folder lies under it).
DATA_ROOT = {"BC": os.path.join(REPO, "data", "offline", "cartpole"),
             "MARWIL": os.path.join(REPO, "data", "offline", "cartpole"),
             "CQL": os.path.join(REPO, "data", "offline")}

# tfrl's tuned-file keys -> RLlib 2.60's old-stack AlgorithmConfig attributes.
RLLIB_KEYS = {
    "input": "input_", "shuffle_buffer_size": "shuffle_buffer_size",
    "train_batch_size": "train_batch_size", "sgd_minibatch_size": "minibatch_size",
    "num_sgd_iter": "num_epochs", "lr": "lr", "gamma": "gamma", "beta": "beta",
    "vf_coeff": "vf_coeff",
    "moving_average_sqd_adv_norm_update_rate": "moving_average_sqd_adv_norm_update_rate",
    "model": "model", "evaluation_interval": "evaluation_interval",
    "evaluation_duration": "evaluation_duration", "seed": "seed",
    # CQL (SAC's keys and CQL's; dict values are merged into RLlib's default dicts).
    "num_workers": "num_env_runners", "rollout_fragment_length": "rollout_fragment_length",
    "training_intensity": "training_intensity",
    "timesteps_per_iteration": "min_sample_timesteps_per_iteration",
    "min_iter_time_s": "min_time_s_per_iteration",
    "num_steps_sampled_before_learning_starts": "num_steps_sampled_before_learning_starts",
    "replay_buffer_config": "replay_buffer_config", "tau": "tau", "bc_iters": "bc_iters",
    "min_q_weight": "min_q_weight", "num_actions": "num_actions",
    "temperature": "temperature", "lagrangian": "lagrangian",
    "optimization": "optimization", "q_model_config": "q_model_config",
    "policy_model_config": "policy_model_config",
}
#: Rows per sampling round in tfrl for the offline CQL data: one logged Pendulum-v1
#: episode (its TimeLimit, 200 steps) per JSON line and round.
EPISODE_ROWS = 200


def cql_schedule(settings: dict) -> dict:
    """The tuned CQL settings with the three keys whose meaning differs between tfrl and
    RLlib 2.60 translated, so that RLlib runs tfrl's schedule (module docstring):
    `rollout_fragment_length` = one episode (RLlib then reads one line per round, as tfrl
    does); `training_intensity` scaled by the file's fragment / that, so the gradient
    steps per round (intensity x fragment / train_batch_size) stay tfrl's;
    `num_steps_sampled_before_learning_starts` - 1 (RLlib learns after it, tfrl at it)."""
    out = dict(settings)
    fragment = settings["rollout_fragment_length"]
    out["rollout_fragment_length"] = EPISODE_ROWS
    out["training_intensity"] = settings["training_intensity"] * fragment / EPISODE_ROWS
    out["num_steps_sampled_before_learning_starts"] = (
        settings["num_steps_sampled_before_learning_starts"] - 1)
    return out


def tfrl_grad_steps(settings: dict, iterations: int) -> list:
    """tfrl's gradient steps after each iteration for a CQL tuned file's settings: one
    `EPISODE_ROWS` round at a time, `training_intensity x rollout_fragment_length /
    train_batch_size` steps after each round once `num_steps_sampled_before_learning_starts`
    rows were read (what RLlib must reproduce; the child checks it)."""
    per_round = round(settings["training_intensity"] * settings["rollout_fragment_length"]
                      / settings["train_batch_size"])
    rounds = settings["timesteps_per_iteration"] // EPISODE_ROWS
    start = settings["num_steps_sampled_before_learning_starts"]
    steps, out, rows = 0, [], 0
    for _ in range(iterations):
        for _ in range(rounds):
            rows += EPISODE_ROWS
            steps += per_round if rows >= start else 0
        out.append(steps)
    return out


def tuned_spec(algo: str) -> dict:
    import yaml

    with open(os.path.join(REPO, "tfrl", "tuned", TUNED[algo] + ".yaml")) as f:
        return yaml.safe_load(f)


def rllib_settings(algo: str, seed: int, data: str, eval_episodes: int) -> dict:
    """The tuned file's settings under RLlib's names (CQL's schedule translated by
    `cql_schedule`), evaluated greedily after every iteration.

    Raises:
        ValueError: For a key of the tuned file without an RLlib name in `RLLIB_KEYS`.
    """
    spec = tuned_spec(algo)
    settings = {**spec["config"], "seed": seed, "evaluation_interval": 1,
                "evaluation_duration": eval_episodes,
                "input": os.path.join(data, os.path.basename(spec["config"]["input"]))}
    unknown = sorted(set(settings) - set(RLLIB_KEYS))
    if unknown:
        raise ValueError(f"bench_offline_curves: no RLlib name for {unknown} of "
                         f"{TUNED[algo]}.yaml; add them to RLLIB_KEYS so both sides run "
                         "the same settings.")
    if algo == "CQL":
        settings = cql_schedule(settings)
    return {RLLIB_KEYS[k]: v for k, v in settings.items()}


def rllib_config(algo: str, seed: int, data: str, eval_episodes: int):
    """RLlib's BC/MARWIL/CQL config (torch, old stack) with the settings of tfrl's tuned
    file, evaluated greedily after every iteration."""
    from ray.rllib.algorithms.bc import BCConfig
    from ray.rllib.algorithms.cql import CQLConfig
    from ray.rllib.algorithms.marwil import MARWILConfig

    spec = tuned_spec(algo)
    mapped = rllib_settings(algo, seed, data, eval_episodes)
    config = {"BC": BCConfig, "MARWIL": MARWILConfig,
              "CQL": CQLConfig}[algo]().environment(spec["env"])
    config = config.framework("torch").resources(num_gpus=0).api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
    config = config.env_runners(num_env_runners=0).evaluation(
        evaluation_num_env_runners=0, evaluation_duration_unit="episodes",
        evaluation_config={"input": "sampler", "explore": False})
    if algo == "CQL":
        # tfrl's iteration ends on the rows read alone (timesteps_per_iteration);
        # RLlib's CQL would also wait for 100 trained rows (none before learning starts).
        config = config.reporting(min_train_timesteps_per_iteration=0).offline_data(
            actions_in_input_normalized=True)
        mapped["input_"] = one_line_reader(mapped["input_"])
    if "model" in mapped:
        config = config.training(model=mapped.pop("model"))
    for key, value in mapped.items():
        if not hasattr(config, key):
            raise ValueError(f"bench_offline_curves: RLlib's {type(config).__name__} has "
                             f"no {key!r}.")
        default = getattr(config, key)
        if isinstance(default, dict) and isinstance(value, dict):
            value = {**default, **value}  # e.g. q_model_config: RLlib's other keys kept
        setattr(config, key, value)
    return config, spec


def one_line_reader(path: str):
    """An `input` creator: RLlib's JsonReader on `path` returning one JSON line (one
    logged episode) per read, as tfrl's reader does (RLlib's reads `train_batch_size`
    rows' worth of lines)."""
    def make(ioctx):
        from ray.rllib.offline.json_reader import JsonReader

        reader = JsonReader(path, ioctx)
        reader.batch_size = 1
        return reader

    return make


def cql_with_replay(config):
    """RLlib's CQL with RLlib's SAC/DQN old-stack training step (`CQL_REPLAY`, module
    docstring) built from `config`."""
    from ray.rllib.algorithms.cql import CQL
    from ray.rllib.algorithms.dqn.dqn import DQN

    class CQLReplay(CQL):
        def training_step(self):
            return DQN._training_step_old_api_stack(self)

    return CQLReplay(config=config)


def child(algo: str, seed: int, data: str, eval_episodes: int, folder: str) -> dict:
    import ray

    # Reading, learning and evaluation all run in this process (num_env_runners=0,
    # evaluation_num_env_runners=0), but RLlib still puts its config into Ray's object
    # store. Under load the raylet can miss Ray's 10 s start-up wait: give it longer
    # (RAY_raylet_start_wait_time_s) and its own temp dir, apart from other Ray runtimes.
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    # One torch thread: the bench machine's cores are shared with other runs, where
    # torch's intra-op threads contend with them (bench/RESULTS.md, 2026-11-29: CQL).
    import torch

    torch.set_num_threads(1)
    temp_dir = tempfile.mkdtemp(prefix="tfrl_offline_curves_")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir=os.path.join(temp_dir, "ray"))
    config, spec = rllib_config(algo, seed, data, eval_episodes)
    iterations = spec["stop"]["training_iteration"]
    instance = cql_with_replay(config) if algo == "CQL" else config.build_algo()
    expected = (tfrl_grad_steps(spec["config"], iterations) if algo == "CQL"
                else [None] * iterations)
    curve = Curve(algo, spec["env"], "rllib", seed, iterations,
                  note=("offline: x is logged steps read, y the mean greedy return of "
                        f"{eval_episodes} evaluation episodes"),
                  source=f"tfrl/tuned/{TUNED[algo]}.yaml",
                  fields={"version": ray.__version__, "framework": "torch",
                          "stack": "old"})
    start, per_iteration = time.time(), []
    try:
        for i in range(iterations):
            result = instance.train()
            evaluation = result["evaluation"]["env_runners"]
            mean = evaluation.get("episode_return_mean",
                                  evaluation.get("episode_reward_mean"))
            steps = result["num_env_steps_sampled"]
            updates = result.get("num_env_steps_trained", 0) // config.train_batch_size
            if expected[i] is not None and updates != expected[i]:
                raise RuntimeError(
                    f"bench_offline_curves: RLlib's {algo} made {updates} gradient steps "
                    f"by iteration {i + 1}, tfrl's schedule {expected[i]}; the schedule "
                    "translation (cql_schedule) no longer holds.")
            curve.add(steps, mean, time.time() - start)
            per_iteration.append([steps, mean, updates])
    finally:
        instance.stop()
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    return {"algo": algo, "seed": seed, "csv": curve.write(folder),
            "per_iteration": per_iteration, "wall_s": round(time.time() - start, 1)}


def make_data(algo: str, root: str) -> None:
    """Writes the tuned file's `input` folder under `root` (tfrl.examples.offline_data,
    seed 0, in tfrl's venv) unless it is there."""
    spec = tuned_spec(algo)
    target = os.path.join(root, os.path.basename(spec["config"]["input"]))
    if os.path.isdir(target):
        return
    sys.path.insert(0, REPO)
    from tfrl.examples import offline_data

    print(f"writing the {spec['env']} offline data into {root} ...", flush=True)
    if spec["env"].startswith("CartPole"):
        print(offline_data.make_cartpole_datasets(root), flush=True)
    else:
        print(offline_data.make_pendulum_dataset(target), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["BC", "MARWIL"], choices=sorted(TUNED))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--data", default=None,
                        help="offline data root (default: each algorithm's DATA_ROOT; the "
                             "tuned file's input folder under it is made if missing)")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--curves", default=CURVES_DIR, metavar="DIR")
    parser.add_argument("--rllib_python", default=os.environ.get("TFRL_RLLIB_PYTHON", ""),
                        help="a Python with ray[rllib] 2.x and torch (default: "
                             "$TFRL_RLLIB_PYTHON)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        algo, seed = json.loads(args.child)
        out = child(algo, seed, os.path.abspath(args.data or DATA_ROOT[algo]),
                    args.eval_episodes, args.curves)
        print("RESULT " + json.dumps(out), flush=True)
        return 0
    if not os.path.exists(args.rllib_python):
        parser.error(f"--rllib_python {args.rllib_python!r} does not exist; give a Python "
                     "with ray[rllib] 2.x and torch (or set $TFRL_RLLIB_PYTHON).")
    for algo in args.algos:
        make_data(algo, args.data or DATA_ROOT[algo])
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
