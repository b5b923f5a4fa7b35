"""tfrl's sweep (`tfrl tune`) vs RL Baselines3 Zoo's optimizer (`rl_zoo3.train -optimize`).

    python bench/bench_sweep.py --zoo_python=<venv-zoo>/bin/python
    python bench/bench_sweep.py --trials=4 --steps=5000 --eval_seeds=0   # a quick look

Both sides run PPO on CartPole-v1: 16 trials x 20k env steps, Optuna's TPE sampler
(`n_startup_trials` 5, multivariate, seeded) and a median pruner (the Zoo: Optuna's
MedianPruner over 4 evaluations of 5 deterministic episodes; tfrl: Tune's median stopping
rule on `timesteps_total`, from 5k steps on), 2 trials at a time (the Zoo: `--n-jobs 2`,
threads with one torch thread each; tfrl: 2 Ray Tune trials of half a CPU each in a Ray
runtime of 2 CPUs). tfrl's sweep is `examples/sweeps/ppo_cartpole_tpe.yaml` (the Zoo's
PPO search space mapped to tfrl's keys; the file says what differs).

Measured:
- the wall time of each whole sweep, from the command's start to its end (Python and
  Ray start-up, every trial, the Zoo's report);
- the work each sweep did: its minibatch SGD steps (`tfrl_work`, `zoo_work`: from each
  trial's parameters and how far it ran), so that a wall time can be read as work per
  second (the two TPE runs pick different configs, of very different cost);
- the best trial's config trained again with each of `--eval_seeds` for `--steps` env
  steps and then evaluated deterministically over `--eval_episodes` episodes (one env,
  seeded); the mean over the seeds. The same procedure on both sides: tfrl trains the
  best config file `tfrl tune` wrote, SB3 the Zoo's best parameters
  (`rl_zoo3.hyperparams_opt.convert_onpolicy_params`) with the Zoo's 8 envs.

Targets (issue 31): tfrl's wall <= 0.5 x the Zoo's, and tfrl's best return >= the Zoo's.

The Zoo runs in its own virtualenv (no TensorFlow there), `--zoo_python` (default
`$TFRL_ZOO_PYTHON`): `python3.11 -m venv <venv-zoo> && <venv-zoo>/bin/pip install
rl_zoo3==2.9.2 torch==2.13.0 pandas`. Without it, only tfrl's side runs. Each sweep and
each evaluation run is a child process that prints one `RESULT {json}` line.
"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from absl import app, flags

from sweep_work import tfrl_work, zoo_work  # bench/'s sibling (no flags: tests import it)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP_FILE = os.path.join(REPO, "examples", "sweeps", "ppo_cartpole_tpe.yaml")

_ZOO_PYTHON = flags.DEFINE_string(
    "zoo_python", os.environ.get("TFRL_ZOO_PYTHON"),
    "Python of a virtualenv with rl_zoo3 2.9.2 (default $TFRL_ZOO_PYTHON).")
_TRIALS = flags.DEFINE_integer("trials", 16, "Trials of each sweep.")
_STEPS = flags.DEFINE_integer("steps", 20000, "Env steps of each trial (and evaluation run).")
_CONCURRENT = flags.DEFINE_integer("concurrent", 2, "Trials at a time on each side.")
_ZOO_JOBS = flags.DEFINE_integer(
    "zoo_jobs", None, "The Zoo's --n-jobs (default: --concurrent). Optuna reseeds its "
    "sampler from the OS in each thread when n_jobs > 1, so only --zoo_jobs=1 draws the "
    "seeded start-up trials that tfrl's sweep draws (at 1 trial at a time).")
_STARTUP = flags.DEFINE_integer("startup_trials", 5,
                                "Random trials before TPE (and before the pruner prunes).")
_EVALUATIONS = flags.DEFINE_integer("zoo_evaluations", 4,
                                    "The Zoo's evaluations per trial (its pruner's steps).")
_SEED = flags.DEFINE_integer("seed", 2, "Seed of both samplers.")
_EVAL_SEEDS = flags.DEFINE_multi_integer("eval_seeds", [0, 1, 2],
                                         "Seeds of the best configs' evaluation runs.")
_EVAL_EPISODES = flags.DEFINE_integer("eval_episodes", 20,
                                      "Deterministic episodes of each evaluation run.")
_SIDES = flags.DEFINE_list("sides", ["zoo", "tfrl"], "Which sweeps to run.")
_EVALUATE = flags.DEFINE_bool("evaluate", True, "Evaluate the best configs after the sweeps "
                              "(--noevaluate: the sweeps' wall times only).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Where the sweeps write (default: a temp dir).")
_CHILD = flags.DEFINE_string("child", None, "Internal: eval_tfrl (one evaluation run).")
_BEST = flags.DEFINE_string("best", None, "Internal: the best config file to evaluate.")
_EVAL_SEED = flags.DEFINE_integer("eval_seed", 0, "Internal: the evaluation run's seed.")

# The Zoo's evaluation run, in the Zoo's venv (argv: params JSON, seed, steps, episodes).
ZOO_EVAL = r"""
import json, sys, time
sys.modules["tensorflow"] = None  # as bench_ppo_cartpole's SB3 child
import torch
from rl_zoo3.hyperparams_opt import convert_onpolicy_params
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
torch.set_num_threads(1)
params, seed, steps, episodes = json.loads(sys.argv[1]), *map(int, sys.argv[2:5])
kwargs = convert_onpolicy_params(params)
start = time.time()
model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=seed), seed=seed,
            device="cpu", verbose=0, **kwargs)
model.learn(total_timesteps=steps)
wall = time.time() - start
rewards, _ = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=10_000 + seed),
                             n_eval_episodes=episodes, deterministic=True,
                             return_episode_rewards=True)
print("RESULT " + json.dumps({"return": sum(rewards) / len(rewards), "steps": model.num_timesteps,
                              "train_s": wall}), flush=True)
"""


def _result(proc: subprocess.CompletedProcess, what: str) -> Dict[str, Any]:
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def _env() -> Dict[str, str]:
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=path)


def zoo_sweep(python: str, workdir: str) -> Dict[str, Any]:
    """Runs the Zoo's optimizer; its wall time, best value and best parameters."""
    cmd = [python, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "CartPole-v1",
           "-optimize", "--n-trials", str(_TRIALS.value), "--n-timesteps", str(_STEPS.value),
           "--sampler", "tpe", "--pruner", "median",
           "--n-jobs", str(_ZOO_JOBS.value or _CONCURRENT.value),
           "--n-startup-trials", str(_STARTUP.value), "--n-evaluations",
           str(_EVALUATIONS.value), "--eval-episodes", "5", "--seed", str(_SEED.value),
           "--num-threads", "1", "--device", "cpu", "--no-optim-plots", "-f",
           os.path.join(workdir, "zoo")]
    print("zoo:  " + " ".join(cmd[1:]), flush=True)
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir,
                          env=dict(os.environ, PYTHONPATH=""))
    wall = time.time() - start
    with open(os.path.join(workdir, "zoo_stdout.txt"), "w") as f:
        f.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    out = proc.stdout
    if "Best trial:" not in out:
        raise RuntimeError(f"the Zoo's sweep failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    best = out[out.index("Best trial:"):]
    value = float(re.search(r"Value:\s+(\S+)", best).group(1))
    params = {}
    block = best[best.index("Params:"):best.index("User Attributes:")]
    for key, raw in re.findall(r"^\s+(\w+): (.+)$", block, flags=re.M):
        params[key] = raw if raw.isalpha() or "_" in raw else json.loads(raw)
    pruned = len(re.findall(r"pruned", proc.stderr + out, flags=re.I))
    reports = sorted(glob.glob(os.path.join(workdir, "zoo", "ppo", "report_*.csv")))
    work = zoo_work(reports[-1], steps=_STEPS.value, evaluations=_EVALUATIONS.value) \
        if reports else None
    return {"wall_s": wall, "best_value": value, "params": params, "pruned_lines": pruned,
            "work": work}


def tfrl_sweep(workdir: str) -> Dict[str, Any]:
    """Runs `tfrl tune` on the sweep file; its wall time, best value and best config file."""
    best = os.path.join(workdir, "tfrl_best.yaml")
    cmd = [sys.executable, "-m", "tfrl.cli.main", "tune", f"--config={SWEEP_FILE}",
           f"--num_samples={_TRIALS.value}", f"--stop=timesteps_total={_STEPS.value}",
           f"--num_cpus={_CONCURRENT.value}", f"--logdir={os.path.join(workdir, 'tfrl')}",
           f"--output={best}", "--quiet",
           f"--sweep={_write_sweep_overrides(workdir)}"]
    print("tfrl: " + " ".join(cmd[1:]), flush=True)
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=_env())
    wall = time.time() - start
    with open(os.path.join(workdir, "tfrl_stdout.txt"), "w") as f:
        f.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    match = re.search(r"Best trial: \S+ = (\S+)", proc.stdout)
    if proc.returncode or not match:
        raise RuntimeError(f"tfrl's sweep failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    table = proc.stdout[proc.stdout.index("TRIAL "):].splitlines()[1:]
    rows = [line.split() for line in table if re.match(r"^\w{8}\s+(OK|ERROR)", line)]
    return {"wall_s": wall, "best_value": float(match.group(1)), "best_file": best,
            "trials": len(rows), "errored": sum(r[1] == "ERROR" for r in rows),
            "iterations": [int(r[3]) for r in rows if r[1] == "OK"],
            "work": tfrl_work(os.path.join(workdir, "tfrl"), _STEPS.value)}


def _write_sweep_overrides(workdir: str) -> str:
    """The flags' settings of the tune: section (merged over the file's)."""
    import yaml

    path = os.path.join(workdir, "overrides.yaml")
    with open(SWEEP_FILE, encoding="utf-8") as f:
        tune = yaml.safe_load(f)["tune"]
    tune["search"]["n_startup_trials"] = _STARTUP.value
    tune["scheduler"]["min_samples_required"] = _STARTUP.value
    tune["scheduler"]["grace_period"] = _STEPS.value // _EVALUATIONS.value
    tune["max_concurrent_trials"] = _CONCURRENT.value
    tune["seed"] = _SEED.value
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"tune": tune}, f, sort_keys=False)
    return path


def eval_tfrl(best_file: str, seed: int, steps: int, episodes: int) -> Dict[str, Any]:
    """Child: trains `best_file`'s config with `seed` for `steps` env steps, then returns
    the mean of `episodes` deterministic evaluation episodes (one env)."""
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.algorithms.registry import get_algorithm_class
    from tfrl.cli.experiment import build_config, resolve_experiment

    overrides = [f"seed={seed}", f"evaluation_duration={episodes}",
                 "evaluation_duration_unit=episodes", "evaluation_num_workers=0",
                 "evaluation_config={explore: false, num_envs_per_worker: 1, "
                 f"seed: {10_000 + seed}}}"]
    config = build_config(resolve_experiment(best_file, overrides=overrides))
    algo = get_algorithm_class("PPO")(config=config)
    start = time.time()
    result = {"timesteps_total": 0}
    while result["timesteps_total"] < steps:
        result = algo.train()
    wall = time.time() - start
    evaluation = algo.evaluate()["evaluation"]
    algo.stop()
    return {"return": evaluation["episode_reward_mean"], "steps": result["timesteps_total"],
            "train_s": wall, "episodes": evaluation["episodes_this_iter"]}


def evaluate(side: str, sweep: Dict[str, Any], seed: int, workdir: str) -> Dict[str, Any]:
    if side == "zoo":
        cmd = [_ZOO_PYTHON.value, "-c", ZOO_EVAL, json.dumps(sweep["params"]), str(seed),
               str(_STEPS.value), str(_EVAL_EPISODES.value)]
        env = dict(os.environ, PYTHONPATH="")
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--child=eval_tfrl",
               f"--best={sweep['best_file']}", f"--eval_seed={seed}",
               f"--steps={_STEPS.value}", f"--eval_episodes={_EVAL_EPISODES.value}"]
        env = _env()
    return _result(subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env),
                   f"{side}'s evaluation run (seed {seed})")


def main(argv: List[str]) -> int:
    del argv
    if _CHILD.value == "eval_tfrl":
        result = eval_tfrl(_BEST.value, _EVAL_SEED.value, _STEPS.value, _EVAL_EPISODES.value)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    sides = [s for s in _SIDES.value if s != "zoo" or _ZOO_PYTHON.value]
    if "zoo" in _SIDES.value and "zoo" not in sides:
        print("No --zoo_python (or $TFRL_ZOO_PYTHON): skipping the Zoo's sweep.")
    workdir = _WORKDIR.value or tempfile.mkdtemp(prefix="bench_sweep_")
    os.makedirs(workdir, exist_ok=True)
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min); workdir {workdir}",
          flush=True)
    sweeps: Dict[str, Dict[str, Any]] = {}
    for side in sides:
        sweeps[side] = zoo_sweep(_ZOO_PYTHON.value, workdir) if side == "zoo" \
            else tfrl_sweep(workdir)
        shown = {k: v for k, v in sweeps[side].items() if k != "params"}
        print(f"{side} sweep: {json.dumps(shown)}; load {os.getloadavg()[0]:.2f}", flush=True)
        if side == "zoo":
            print(f"zoo best params: {json.dumps(sweeps[side]['params'])}", flush=True)
    returns: Dict[str, List[float]] = {side: [] for side in sides}
    for seed in (_EVAL_SEEDS.value if _EVALUATE.value else []):
        for side in sides:
            r = evaluate(side, sweeps[side], seed, workdir)
            returns[side].append(r["return"])
            print(f"{side} eval s{seed}: return {r['return']:.1f} after {r['steps']} steps "
                  f"(train {r['train_s']:.1f} s)", flush=True)
    summary: Dict[str, Optional[float]] = {}
    for side in sides:
        summary[f"{side}_wall_s"] = sweeps[side]["wall_s"]
        summary[f"{side}_return"] = statistics.mean(returns[side]) if returns[side] else None
        evaluated = (f", evaluation return {summary[f'{side}_return']:.1f} (seeds: "
                     f"{', '.join(f'{r:.1f}' for r in returns[side])})" if returns[side] else "")
        print(f"{side}: sweep wall {sweeps[side]['wall_s']:.0f} s, best trial's value "
              f"{sweeps[side]['best_value']:.1f}{evaluated}")
        work = sweeps[side].get("work")
        if work and work["sgd_steps"]:
            upto = (f"-{work['sgd_steps_max']}" if work.get("sgd_steps_max", 0)
                    > work["sgd_steps"] else "")
            print(f"{side} work: {work['sgd_steps']}{upto} SGD steps in {work['trials']} "
                  f"trials ({work['trial_s']:.0f} s of trial time; "
                  f"{work.get('stopped', work.get('pruned'))} stopped early)")
    if len(sides) == 2:
        ratio = sweeps["tfrl"]["wall_s"] / sweeps["zoo"]["wall_s"]
        ok_wall = "met" if ratio <= 0.5 else "missed"
        print(f"tfrl/Zoo wall: {ratio:.2f} (target <= 0.5: {ok_wall})")
        if summary["tfrl_return"] is not None:
            ok_return = "met" if summary["tfrl_return"] >= summary["zoo_return"] else "missed"
            print(f"best return tfrl {summary['tfrl_return']:.1f} vs Zoo "
                  f"{summary['zoo_return']:.1f} (target >=: {ok_return})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    app.run(main)
