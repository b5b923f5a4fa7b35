"""tfrl PPO vs Stable-Baselines3 PPO on CartPole-v1, same settings, 3 seeds each.

    python bench/bench_ppo_cartpole.py                    # 100k steps x 3 seeds x both
    python bench/bench_ppo_cartpole.py --steps 20000 --seeds 0

Settings (RL Baselines3 Zoo's tuned CartPole PPO): 8 envs, n_steps 32 (batch 256),
minibatch 256, 20 epochs, gamma 0.98, GAE lambda 0.8, lr 1e-3 decayed linearly to 0,
clip 0.2, value coefficient 0.5, no entropy bonus, grad clip 0.5, Adam epsilon 1e-5, 64x64
tanh policy and value networks with orthogonal hidden layers; one intra/inter-op thread for
TF and one torch thread. tfrl runs `tfrl/tuned/ppo_cartpole.yaml` with these settings
put back where the tuned file departs from them (`ISSUE_SETTINGS`: its lambda 0.9,
minibatch 128, entropy bonus and slower lr decay solve more seeds, see the file).

Every run is its own subprocess (so peak RSS is the run's own), runs alternate between
the frameworks, and each trains the whole budget. Reported per run: wall seconds for the
budget, env steps/s, env steps and seconds (from process start) until the mean return of
the last 100 episodes first reaches 475, peak RSS, and the time from process start to the
end of the first learning step. The SB3 child does not import TensorFlow (see `run_sb3`).
SB3 runs are skipped with a message when stable-baselines3 (and torch) are not installed:
`pip install -e '.[bench]'` (torch 2.13.0, CPU build).
"""

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from curves import ENV_VAR as CURVES_ENV_VAR, Curve

SOLVED = 475.0
EVAL_EPISODES = 10  # greedy episodes after training (greedy_return)
# tfrl's side of the comparison: the tuned example (also the learning test's config).
TUNED_CARTPOLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "tfrl", "tuned", "ppo_cartpole.yaml")


#: The settings above, where tfrl/tuned/ppo_cartpole.yaml differs from them (both
#: frameworks run these; the lr decays to 0 over the run's budget, as SB3's schedule does).
ISSUE_SETTINGS = ["lambda=0.8", "sgd_minibatch_size=256", "entropy_coeff=0.0"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux


def run_tfrl(seed: int, steps: int, t0: float) -> dict:
    # TensorFlow through tfrl first, as examples/ppo_cartpole.py does (older trees: a
    # plain import after tfrl's, which loaded TFP lazily that way).
    try:
        from tfrl.utils.progress import quiet_tensorflow
        quiet_tensorflow()
    except ImportError:
        import tfrl  # noqa: F401
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.cli.experiment import build_config, resolve_experiment

    overrides = ISSUE_SETTINGS + [f"seed={seed}", f"lr_schedule=[[0, 1.0e-3], [{steps}, 0.0]]"]
    from tfrl.algorithms.registry import get_algorithm_class

    config = build_config(resolve_experiment(TUNED_CARTPOLE, overrides=overrides))
    algo = get_algorithm_class("PPO")(config=config)
    start = time.time()
    first_learn = solved_steps = solved_s = None
    result = {"timesteps_total": 0}
    curve = Curve("PPO", "CartPole-v1", "tfrl", seed, steps,
                  smoothing=config.metrics_smoothing_episodes)
    while result["timesteps_total"] < steps:
        result = algo.train()
        curve.add(result["timesteps_total"], result["episode_reward_mean"], time.time() - start)
        if first_learn is None:
            first_learn = time.time() - t0
        if solved_steps is None and result["episode_reward_mean"] >= SOLVED:
            solved_steps, solved_s = result["timesteps_total"], time.time() - t0
    wall = time.time() - start
    algo.stop()
    curve.write()
    return {"steps": result["timesteps_total"], "wall_s": wall,
            "steps_per_s": result["timesteps_total"] / wall, "solved_steps": solved_steps,
            "solved_s": solved_s, "first_learn_s": first_learn, "peak_rss_mb": _rss_mb(),
            "final_reward": result["episode_reward_mean"]}


def hide_tensorflow() -> None:
    """Makes `import tensorflow` fail in this (SB3 child) process.

    SB3's logger imports torch.utils.tensorboard, which imports TensorFlow when it is
    installed (as it is next to tfrl): +~420 MB of RSS and ~1.4 s of start-up that an
    SB3-only environment does not pay. Hidden, SB3 is measured as it runs alone.
    """
    sys.modules["tensorflow"] = None


def run_sb3(seed: int, steps: int, t0: float) -> dict:
    hide_tensorflow()
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)

    class Watch(BaseCallback):
        first_learn = solved_steps = solved_s = None
        rollouts = 0

        def _on_rollout_start(self):
            self.rollouts += 1
            if self.rollouts == 2 and self.first_learn is None:
                self.first_learn = time.time() - t0  # after the first train()

        def _on_rollout_end(self):
            buf = self.model.ep_info_buffer
            if buf:
                curve.add(self.num_timesteps, float(np.mean([e["r"] for e in buf])),
                          time.time() - start)
            if (self.solved_steps is None and buf
                    and np.mean([e["r"] for e in buf]) >= SOLVED):
                self.solved_steps, self.solved_s = self.num_timesteps, time.time() - t0

        def _on_step(self):
            return True

    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98,
                gae_lambda=0.8, clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
                learning_rate=lambda progress: 1e-3 * progress, seed=seed, device="cpu",
                verbose=0)
    watch = Watch()
    curve = Curve("PPO", "CartPole-v1", "sb3", seed, steps, smoothing=100)
    start = time.time()
    model.learn(total_timesteps=steps, callback=watch)
    wall = time.time() - start
    curve.write()
    rewards = [e["r"] for e in model.ep_info_buffer]
    return {"steps": model.num_timesteps, "wall_s": wall,
            "steps_per_s": model.num_timesteps / wall, "solved_steps": watch.solved_steps,
            "solved_s": watch.solved_s, "first_learn_s": watch.first_learn,
            "peak_rss_mb": _rss_mb(), "final_reward": float(np.mean(rewards)) if rewards else None}


def child(framework: str, seed: int, steps: int, t0: float) -> None:
    print_result((run_tfrl if framework == "tfrl" else run_sb3)(seed, steps, t0))


def launch(framework: str, seed: int, steps: int, script: str = __file__,
           extra_args: tuple = (), timeout: float = 3600.0) -> dict:
    """Runs `script --child framework --seed ... --steps ... --t0 ... *extra_args` in a
    subprocess (killed after `timeout` seconds) and returns the dict its `RESULT {json}`
    line holds."""
    # The child imports the tfrl of this bench's tree (not whatever is installed).
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=path)
    cmd = [sys.executable, os.path.abspath(script), "--child", framework, "--seed", str(seed),
           "--steps", str(steps), "--t0", repr(time.time()), *extra_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{framework} seed {seed} failed (exit {proc.returncode}):\n"
                       f"{proc.stderr[-3000:]}")


def _fmt(value, spec):
    width = int("".join(c for c in spec.split(".")[0] if c.isdigit()) or 0)
    return "-".rjust(width) if value is None else format(value, spec)


def _mean(rows, key):
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.mean(values) if values else None


def bench_parser(description: str, steps: Optional[int] = 100_000,
                 seeds: Sequence[int] = (0, 1, 2)) -> argparse.ArgumentParser:
    """The arguments every tfrl-vs-SB3 bench takes: `--steps` and `--seeds` of the
    comparison, and `--child`, `--seed`, `--t0`, which `launch()` passes to a child run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--child", choices=["tfrl", "sb3"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, default=None)
    parser.add_argument("--curves", metavar="DIR", default=None,
                        help="write each run's learning curve (env steps, mean return of "
                             "the last 100 episodes, wall s) as a CSV into DIR, e.g. "
                             "bench/curves (tools/plot_curves.py plots them)")
    return parser


def curves_to(folder: Optional[str]) -> None:
    """With `--curves DIR`: the child runs write their curves into DIR."""
    if folder:
        os.environ[CURVES_ENV_VAR] = os.path.abspath(folder)


def print_result(result: dict) -> int:
    """A child run's last word: the `RESULT {json}` line `launch()` reads; returns 0."""
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def gym_make(env_id: str, **kwargs):
    """`gymnasium.make(env_id, **kwargs)`, registering MinAtar's ids first for a
    `"MinAtar/..."` id (its package registers them only when asked). No TensorFlow (the
    SB3 child uses it too)."""
    import gymnasium as gym

    if env_id.startswith("MinAtar/"):
        import minatar.gym

        if env_id not in gym.registry:
            minatar.gym.register_envs()
    return gym.make(env_id, **kwargs)


def greedy_return(act, env_id: str, seed: int, episodes: int = EVAL_EPISODES,
                  max_episode_steps: Optional[int] = None) -> float:
    """Mean return of `episodes` episodes of `act(obs) -> action` (a trained agent's
    deterministic action) on a fresh `env_id`, episode `i` reset with seed
    `10_000 + 100 * seed + i`: the same starts for both frameworks, none a training seed.
    `max_episode_steps`: truncate longer episodes (for envs without a time limit)."""
    import numpy as np

    env = gym_make(env_id, **({"max_episode_steps": max_episode_steps}
                              if max_episode_steps else {}))
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 + 100 * seed + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def grad_updates(algo) -> int:
    """The gradient steps a tfrl off-policy `algo`'s policy has taken (0 if it does not
    count them)."""
    policy = algo.get_policy()
    updates = getattr(policy, "num_grad_updates", None)
    if updates is not None:
        return int(updates.numpy() if hasattr(updates, "numpy") else updates)
    return 0


def offpolicy_result(steps, grad_steps, wall, cpu, solved_steps, final_reward) -> dict:
    """An off-policy child run's result dict (bench_offpolicy.py's columns)."""
    return {"steps": steps, "wall_s": wall, "cpu_s": cpu, "env_steps_per_s": steps / wall,
            "grad_steps_per_s": grad_steps / wall, "solved_steps": solved_steps,
            "final_reward": final_reward, "peak_rss_mb": _rss_mb()}


def frameworks_to_compare(baseline: str = "stable_baselines3",
                          name: str = "Stable-Baselines3") -> List[str]:
    """`["tfrl", "sb3"]`, or `["tfrl"]` (saying so) if the `baseline` package or torch
    is not installed."""
    if importlib.util.find_spec(baseline) and importlib.util.find_spec("torch"):
        return ["tfrl", "sb3"]
    print(f"{name} is not installed: skipping the SB3 runs (pip install -e '.[bench]').")
    return ["tfrl"]


def run_interleaved(frameworks: List[str], seeds: Sequence[int],
                    run: Callable[[str, int], dict],
                    row: Callable[[dict], str]) -> Dict[str, List[dict]]:
    """Runs `run(framework, seed)` for every seed and framework, interleaved (tfrl s0,
    sb3 s0, tfrl s1, ...) so that a change in the machine's load hits both frameworks
    alike; prints each result as `<framework> s<seed>` and `row(result)`; returns the
    results by framework."""
    rows: Dict[str, List[dict]] = {fw: [] for fw in frameworks}
    for seed in seeds:
        for fw in frameworks:
            r = run(fw, seed)
            rows[fw].append(r)
            print(f"{fw + ' s' + str(seed):10s} {row(r)}", flush=True)
    return rows


def main() -> int:
    parser = bench_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed, args.steps, args.t0 or time.time())
        return 0

    curves_to(args.curves)
    frameworks = frameworks_to_compare()
    print(f"{'run':10s} {'wall s':>8s} {'steps/s':>8s} {'steps@475':>10s} {'s@475':>7s} "
          f"{'RSS MB':>7s} {'1st learn s':>11s} {'final R':>8s}")
    rows = run_interleaved(
        frameworks, args.seeds, lambda fw, seed: launch(fw, seed, args.steps),
        lambda r: (f"{r['wall_s']:8.1f} {r['steps_per_s']:8.0f} "
                   f"{_fmt(r['solved_steps'], '10d')} {_fmt(r['solved_s'], '7.1f')} "
                   f"{r['peak_rss_mb']:7.0f} {_fmt(r['first_learn_s'], '11.1f')} "
                   f"{_fmt(r['final_reward'], '8.1f')}"))
    summarize(rows, ["wall_s", "steps_per_s", "solved_steps", "solved_s", "peak_rss_mb",
                     "first_learn_s"])
    return 0


def summarize(rows: dict, keys: list) -> None:
    """Prints each framework's means of `keys` over its runs (and how many runs reached
    the target: `solved_steps` set), then the tfrl/SB3 ratios of the means."""
    means = {fw: {k: _mean(runs, k) for k in keys} for fw, runs in rows.items()}
    for fw, runs in rows.items():
        solved = (f"; solved {sum(r['solved_steps'] is not None for r in runs)}/{len(runs)}"
                  if "solved_steps" in keys else "")
        print(f"{fw} mean: " + ", ".join(f"{k} {_fmt(v, '.1f')}" for k, v in means[fw].items())
              + solved)
    if "sb3" in means and "tfrl" in means:
        ratios = {k: (means["tfrl"][k] / means["sb3"][k]
                      if means["tfrl"][k] and means["sb3"][k] else None) for k in keys}
        print("tfrl/SB3: " + ", ".join(f"{k} {_fmt(v, '.2f')}" for k, v in ratios.items()))


if __name__ == "__main__":
    raise SystemExit(main())
