"""tfrl's own learning curve from a tuned file, for the algorithms without a peer run.

    python bench/bench_curve_tuned.py pg_cartpole --steps 50000 --seeds 0 1 2
    python bench/bench_curve_tuned.py bc_cartpole --iterations 15 --data data/offline/cartpole
    python bench/bench_curve_tuned.py td3_pendulum --algo DDPG --steps 20000 \
        --set twin_q=false policy_delay=1 smooth_target_policy=false

Runs `tfrl/tuned/<name>.yaml` (its stop criteria replaced by the budget: `--steps` env
steps, or `--iterations` for offline algorithms) once per seed, each in its own
subprocess, and writes `bench/curves/<algo>_<env>_tfrl_seed<k>.csv` (bench/curves.py)
after every iteration: env steps, the mean return of the last 100 training episodes,
wall seconds. Offline algorithms (the file's `input` is a folder) have no training
episodes: their curve is the mean greedy return of `--eval-episodes` evaluation episodes
after every `--eval-every` iterations against the logged steps read; `--data ROOT`
points `input` at `ROOT/<the file's last folder>` and, if that is missing, first writes
the data there (tfrl.examples.offline_data: CartPole expert and mixed, or Pendulum).
`--algo` and `--set KEY=VALUE ...` run a file with another algorithm or settings (DDPG,
which has no tuned file, runs td3_pendulum without TD3's three tricks). The header names
the file and what changed it (`source=tfrl/tuned/<name>.yaml[+algo=A][+KEY=VALUE]...`).
`--library tfrl-tuned` writes
`<algo>_<env>_tfrl-tuned_seed<k>.csv` instead: for an algorithm whose bench runs tfrl
beside Stable-Baselines3 with the peer's settings (A2C, DDPG, TD3), so that the tuned
file's curve is drawn beside those, labelled as the tuned file's (tools/plot_curves.py).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from curves import CURVES_DIR, Curve

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _experiment(name: str, algo: str, overrides: list):
    from tfrl.cli.experiment import resolve_experiment

    path = os.path.join(REPO, "tfrl", "tuned", name + ".yaml")
    return resolve_experiment(path, algo=algo or None, overrides=overrides)


def source(name: str, algo_name: str, extra: tuple) -> str:
    """The curve header's `source`: the tuned file, then `+algo=<name>` when it runs with
    another algorithm and `+KEY=VALUE` for each `--set`, e.g.
    `tfrl/tuned/td3_pendulum.yaml+algo=DDPG+twin_q=false` (tools/plot_curves.py reads it
    out as "... run as DDPG with twin_q=false")."""
    parts = [f"tfrl/tuned/{name}.yaml"] + ([f"algo={algo_name}"] if algo_name else [])
    return "+".join(parts + [item.replace(" ", "") for item in extra])


def _offline(exp) -> bool:
    return isinstance(exp.config.get("input"), str) and exp.config["input"] != "sampler"


def run(name: str, seed: int, steps: int, iterations: int, data: str, eval_every: int,
        eval_episodes: int, folder: str, algo_name: str = "", extra: tuple = (),
        library: str = "tfrl") -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    from tfrl.cli.experiment import build_config

    exp = _experiment(name, algo_name, [f"seed={seed}", *extra])
    offline = _offline(exp)
    overrides = [f"seed={seed}", *extra]
    if offline:
        if data:
            overrides.append(f"input={os.path.join(data, os.path.basename(exp.config['input']))}")
        overrides += [f"evaluation_interval={eval_every}",
                      f"evaluation_duration={eval_episodes}"]
    exp = _experiment(name, algo_name, overrides)
    from tfrl.algorithms.registry import get_algorithm_class

    algo = get_algorithm_class(exp.algo)(config=build_config(exp))
    budget = iterations if offline else steps
    curve = Curve(exp.algo, exp.env, library, seed, budget,
                  note=(f"offline: x is logged steps read, y the mean greedy return of "
                        f"{eval_episodes} evaluation episodes" if offline else ""),
                  smoothing=None if offline else algo.config.metrics_smoothing_episodes,
                  source=source(name, algo_name, extra))
    start = time.time()
    result: dict = {"timesteps_total": 0, "training_iteration": 0}
    while (result["training_iteration"] < iterations if offline
           else result["timesteps_total"] < steps):
        result = algo.train()
        if offline:
            evaluation = result.get("evaluation")
            if evaluation:
                curve.add(result["timesteps_total"], evaluation["episode_reward_mean"], time.time() - start)
        else:
            curve.add(result["timesteps_total"], result["episode_reward_mean"],
                      time.time() - start)
    algo.stop()
    return {"csv": curve.write(folder), "rows": len(curve.rows),
            "last": curve.rows[-1] if curve.rows else None, "wall_s": time.time() - start}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a tuned file's name, e.g. pg_cartpole")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--iterations", type=int, default=15, help="offline algorithms")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--data", default=None, help="offline data root (made if missing)")
    parser.add_argument("--eval-every", type=int, default=1)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--curves", default=CURVES_DIR, metavar="DIR")
    parser.add_argument("--algo", default="", help="run the file with another algorithm "
                        "(e.g. DDPG on td3_pendulum with --set twin_q=false ...)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="config overrides, as tfrl train's --config_override")
    parser.add_argument("--library", default="tfrl", choices=["tfrl", "tfrl-tuned"],
                        help="the CSVs' library: tfrl-tuned beside a tfrl-vs-SB3 bench's "
                             "curves (another setting than the peer's)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        out = run(args.name, args.child, args.steps, args.iterations, args.data,
                  args.eval_every, args.eval_episodes, args.curves, args.algo, tuple(args.set),
                  args.library)
        print("RESULT " + json.dumps(out), flush=True)
        return 0
    exp = _experiment(args.name, args.algo, list(args.set))
    if args.data and _offline(exp):
        target = os.path.join(args.data, os.path.basename(exp.config["input"]))
        if not os.path.isdir(target):
            from tfrl.examples import offline_data

            print(f"writing the {exp.env} offline data into {args.data} ...", flush=True)
            if exp.env.startswith("CartPole"):
                offline_data.make_cartpole_datasets(args.data)
            else:
                offline_data.make_pendulum_dataset(target)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH"))
                                          if p))
    for seed in args.seeds:
        cmd = [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--child", str(seed)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            print(f"seed {seed} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
            return 1
        print(f"seed {seed}: {lines[-1][len('RESULT '):]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
