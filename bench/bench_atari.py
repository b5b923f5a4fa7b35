"""tfrl PPO vs Stable-Baselines3 PPO on ALE/Breakout-v5 from pixels, same settings, one run.

    python bench/bench_atari.py                           # 200k agent steps, seed 0, both
    python bench/bench_atari.py --steps 2048              # smoke check (a minute or two)
    python bench/bench_atari.py --threads 1 --seeds 0 1
    python bench/bench_atari.py --conv-dtype bfloat16     # tfrl's opt-in bf16 conv encoder
    python bench/bench_atari.py --frameworks sb3 --seeds 1 2   # one side only

Settings (RL Baselines3 Zoo's Atari PPO), for both frameworks: 8 envs x 128 steps (batch
1024), 4 epochs of minibatches of 256, lr 2.5e-4 decayed linearly to 0 over the budget
(the zoo's `lin_2.5e-4` over its run), gamma 0.99, GAE lambda 0.95, entropy 0.01, value
coefficient 0.5, grad-norm 0.5, Adam epsilon 1e-5, clip 0.1 kept constant (the zoo decays
it too; tfrl's clip is constant), shared conv features: the Nature DQN network (3 convs +
dense 512) with frames scaled to [0, 1] inside the model. tfrl runs
`tfrl/tuned/ppo_breakout.yaml` with the budget's lr schedule and the seed.

Both see the same env: ALE/Breakout-v5 (its sticky actions, 0.25, unless
`--repeat-action-probability`) in the DeepMind pipeline of `tfrl.env.wrappers.atari`
(gymnasium's AtariPreprocessing: 30 noops, frame skip 4 with max-pooling, 84x84
grayscale, a lost life ends the episode; FIRE after resets; rewards clipped to [-1, 1]
for learning; 4 frames stacked channels-last). tfrl steps the 8 games in ale-py's C++
vector env (the worker's fast path for ALE ids: same observations, games stepped in
threads); SB3 steps 8 `make_atari` envs in its DummyVecEnv (as the zoo does), with a
Monitor under the reward clipping. Returns are game scores (unclipped) of one life, the
mean of the last 100 episodes, in both.

Every run is its own subprocess (so peak RSS is the run's own: ale-py's threads live in
tfrl's process, DummyVecEnv's envs in SB3's), with `--threads` intra/inter-op threads for
TF and as many torch threads. The SB3 child does not import TensorFlow
(`bench_ppo_cartpole.hide_tensorflow`). Reported per run: wall seconds for the budget,
env steps/s (agent steps: 4 frames each), CPU time per agent step (user + system, all
threads: less sensitive than steps/s to a loaded machine for TF; torch's OpenMP threads
spin when the cores are busy, which inflates SB3's), mean return at the end, peak RSS;
then the tfrl/SB3 ratios against the targets (issue 19): >= 1.5x SB3's env steps/s, an
equal or better return, peak RSS <= SB3's + 400 MB. SB3 runs are skipped with a message when
stable-baselines3 (and torch) are not installed: `pip install -e '.[bench]'`.
"""

import argparse
import importlib.util
import json
import os
import platform
import resource
import time

from bench_ppo_cartpole import _fmt, _rss_mb, hide_tensorflow, launch, summarize

ENV_ID = "ALE/Breakout-v5"
NUM_ENVS = 8
TUNED_BREAKOUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "tfrl", "tuned", "ppo_breakout.yaml")
TARGET_SPEEDUP, RSS_ALLOWANCE_MB = 1.5, 400.0


def _env_kwargs(sticky: float) -> dict:
    return {"repeat_action_probability": sticky}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all of the process's threads
    return usage.ru_utime + usage.ru_stime


def _result(steps, wall, cpu, final_reward, episodes):
    return {"steps": steps, "wall_s": wall, "steps_per_s": steps / wall,
            "cpu_ms_per_step": 1000.0 * cpu / steps,
            "final_reward": final_reward, "episodes": episodes, "peak_rss_mb": _rss_mb()}


def run_tfrl(seed: int, steps: int, threads: int, sticky: float,
             conv_dtype: str = "float32") -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tfrl.cli.experiment import build_config, resolve_experiment

    overrides = [f"seed={seed}", f"lr_schedule=[[0, 2.5e-4], [{steps}, 0.0]]",
                 f"env_config.repeat_action_probability={sticky}",
                 f"model.conv_compute_dtype={conv_dtype}"]
    config = build_config(resolve_experiment(TUNED_BREAKOUT, overrides=overrides))
    algo = config.build()
    start, cpu = time.time(), _cpu_s()
    result = {"timesteps_total": 0, "episode_reward_mean": float("nan"), "episodes_total": 0}
    while result["timesteps_total"] < steps:
        result = algo.train()
    wall, cpu = time.time() - start, _cpu_s() - cpu
    algo.stop()
    reward = result["episode_reward_mean"]
    return _result(result["timesteps_total"], wall, cpu, None if reward != reward else reward,
                   result["episodes_total"])


def run_sb3(seed: int, steps: int, threads: int, sticky: float,
            conv_dtype: str = "float32") -> dict:
    hide_tensorflow()
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from tfrl.env.wrappers.atari import make_atari  # gymnasium + ale-py only, no TF

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    # Monitor (make_vec_env's) records unclipped scores; the agent learns on clipped ones.
    env = make_vec_env(lambda: make_atari(ENV_ID, clip_rewards=False, **_env_kwargs(sticky)),
                       n_envs=NUM_ENVS, seed=seed,
                       wrapper_class=lambda e: gym.wrappers.ClipReward(e, -1.0, 1.0))
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=256, n_epochs=4, gamma=0.99,
                gae_lambda=0.95, clip_range=0.1, ent_coef=0.01, vf_coef=0.5,
                max_grad_norm=0.5, learning_rate=lambda progress: 2.5e-4 * progress,
                seed=seed, device="cpu", verbose=0)
    start, cpu = time.time(), _cpu_s()
    model.learn(total_timesteps=steps)
    wall, cpu = time.time() - start, _cpu_s() - cpu
    rewards = [e["r"] for e in model.ep_info_buffer]  # the last 100 episodes
    episodes = sum(len(returns) for returns in env.get_attr("episode_returns"))  # Monitors'
    return _result(model.num_timesteps, wall, cpu, float(np.mean(rewards)) if rewards else None,
                   episodes)


def _machine() -> str:
    import numpy as np

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="agent steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="TF intra/inter-op threads = torch threads")
    parser.add_argument("--repeat-action-probability", type=float, default=0.25,
                        help="ALE sticky actions (v5's default 0.25; the zoo's v4 ids: 0)")
    parser.add_argument("--conv-dtype", choices=["float32", "bfloat16"], default="float32",
                        help="tfrl's model.conv_compute_dtype (opt-in bf16 encoder; SB3 "
                             "stays float32)")
    parser.add_argument("--frameworks", choices=["tfrl", "sb3"], nargs="+",
                        default=["tfrl", "sb3"],
                        help="which frameworks to run (default both; e.g. --frameworks sb3)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a run is killed (a loaded machine: raise it)")
    parser.add_argument("--child", choices=["tfrl", "sb3"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, default=None)
    args = parser.parse_args()
    if args.child:
        run = run_tfrl if args.child == "tfrl" else run_sb3
        out = run(args.seed, args.steps, args.threads, args.repeat_action_probability,
                  args.conv_dtype)
        print("RESULT " + json.dumps(out), flush=True)
        return 0

    frameworks = [fw for fw in args.frameworks if fw == "tfrl"]
    if "sb3" not in args.frameworks:
        pass  # not asked for
    elif importlib.util.find_spec("stable_baselines3") and importlib.util.find_spec("torch"):
        frameworks.append("sb3")
    else:
        print("Stable-Baselines3 is not installed: skipping the SB3 runs (install "
              "stable-baselines3 and CPU torch to compare).")
    print(f"machine: {_machine()}; {ENV_ID}, {args.steps} agent steps, {NUM_ENVS} envs, "
          f"{args.threads} TF/torch threads, sticky actions {args.repeat_action_probability}, "
          f"tfrl conv dtype {args.conv_dtype}",
          flush=True)
    rows = {fw: [] for fw in frameworks}
    print(f"{'run':10s} {'wall s':>8s} {'steps/s':>8s} {'CPU ms/step':>11s} {'R at end':>8s} "
          f"{'episodes':>8s} {'RSS MB':>7s}")
    extra = ["--threads", str(args.threads), "--conv-dtype", args.conv_dtype,
             "--repeat-action-probability", str(args.repeat_action_probability)]
    # Interleaved (tfrl s0, sb3 s0, tfrl s1, ...): a change in the machine's load hits
    # both frameworks alike.
    for seed in args.seeds:
        for fw in frameworks:
            r = launch(fw, seed, args.steps, script=__file__, extra_args=extra,
                       timeout=args.timeout)
            rows[fw].append(r)
            print(f"{fw + ' s' + str(seed):10s} {r['wall_s']:8.1f} {r['steps_per_s']:8.0f} "
                  f"{r['cpu_ms_per_step']:11.2f} {_fmt(r['final_reward'], '8.2f')} {_fmt(r['episodes'], '8d')} "
                  f"{r['peak_rss_mb']:7.0f}", flush=True)
    summarize(rows, ["wall_s", "steps_per_s", "cpu_ms_per_step", "final_reward", "peak_rss_mb"])
    if "sb3" in rows and "tfrl" in rows:
        check_targets(rows)
    return 0


def check_targets(rows: dict) -> None:
    """Prints issue 19's three targets, each met or not, from the means over the runs."""
    def mean(fw, key):
        values = [r[key] for r in rows[fw] if r[key] is not None]
        return sum(values) / len(values) if values else None

    speed = mean("tfrl", "steps_per_s") / mean("sb3", "steps_per_s")
    tfrl_r, sb3_r = mean("tfrl", "final_reward"), mean("sb3", "final_reward")
    rss_over = mean("tfrl", "peak_rss_mb") - mean("sb3", "peak_rss_mb")
    ok = {True: "met", False: "NOT met"}
    print(f"target env steps/s >= {TARGET_SPEEDUP}x SB3: {speed:.2f}x, {ok[speed >= TARGET_SPEEDUP]}")
    if tfrl_r is None or sb3_r is None:
        print("target return >= SB3's: no finished episodes to compare")
    else:
        print(f"target return >= SB3's: {tfrl_r:.2f} vs {sb3_r:.2f}, {ok[tfrl_r >= sb3_r]}")
    print(f"target peak RSS <= SB3's + {RSS_ALLOWANCE_MB:.0f} MB: {rss_over:+.0f} MB, "
          f"{ok[rss_over <= RSS_ALLOWANCE_MB]}")


if __name__ == "__main__":
    raise SystemExit(main())
