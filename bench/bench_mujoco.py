"""tfrl vs Stable-Baselines3 SAC (and TD3) on HalfCheetah-v5 (MuJoCo), same settings, one run.

    python bench/bench_mujoco.py                              # SAC, 30k steps, seed 0
    python bench/bench_mujoco.py --algos SAC TD3 --seeds 0 1 2
    python bench/bench_mujoco.py --steps 50000 --env Hopper-v5
    python bench/bench_mujoco.py --steps 1000 --eval-episodes 1   # smoke check (tiny budget)

Settings: RL Baselines3 Zoo's tuned MuJoCo settings on both sides. tfrl runs
`tfrl/tuned/sac_halfcheetah.yaml` / `td3_halfcheetah.yaml` (the zoo's values in tfrl's
keys; the files say how each is translated), SB3 the zoo's hyperparameters:

- SAC: SB3's SAC defaults (lr 3e-4, batch 256, buffer 1M, gamma 0.99, tau 0.005, twin
  critics, automatic entropy tuning from alpha 1 toward -dim(A), [256, 256] ReLU) with
  `learning_starts` 10,000;
- TD3: lr 1e-3, batch 256, [400, 300], N(0, 0.1) action noise, `learning_starts` 10,000,
  on SB3's TD3 defaults (buffer 1M, gamma 0.99, tau 0.005, policy delay 2, target noise
  0.2 clipped at 0.5).

Gradient steps: one per env step on both sides. SB3 runs the zoo's `train_freq=1,
gradient_steps=1` (one gradient step after every env step) unless `--sb3-train-freq N`
(then `train_freq=N, gradient_steps=N`: N gradient steps after every N env steps). tfrl
samples rounds of `rollout_fragment_length` env steps (the tuned file's 64, or
`--round N`) and runs as many gradient steps of `train_batch_size` rows after each round
(`training_intensity = train_batch_size`), all in one compiled call; other tfrl keys can
be set with `--tfrl-override KEY=VALUE` (as `tfrl train --config_override`). So
`--round 64 --sb3-train-freq 64` runs the same schedule on both sides; the default
(64 vs 1) is the zoo's SB3 as it is against tfrl's file as it is.

With `--steps` under 20,000 (smoke checks) both sides start learning after a quarter of
the budget instead of 10,000 steps, so that the learning path runs too. Before learning
starts, SB3 (and tfrl's TD3) act uniformly at random; tfrl's SAC samples its initial
policy (RLlib's behaviour).

Every run is its own subprocess (so peak RSS is the run's own); runs alternate between the
frameworks (tfrl s0, SB3 s0, tfrl s1, ...), with `--threads` intra/inter-op threads for
TF and as many torch threads (default 2, the machine's cores, as `bench_atari.py` runs and
as both libraries do by default here; `--threads 1` for one core each). The SB3 child does
not import TensorFlow (`bench_ppo_cartpole.hide_tensorflow`). Reported per run: env steps run (tfrl's
iterations end at whole rounds: up to an iteration more than the budget), wall seconds
for them (after the algorithm is built), CPU seconds of the process over that span, env
steps/s, gradient steps/s, the mean return of the last 10 training episodes at the end
(`train R`), the mean return of `--eval-episodes` deterministic episodes after training
(`eval R`, on a fresh env seeded 10,000 + seed, the same starts for both frameworks; not
timed) and peak RSS; then the means, the tfrl/SB3 ratios and the issue's target (issue
19): wall <= 0.5x SB3's at an equal or better return.
"""

import importlib.util
import os
import platform
import time

from bench_ppo_cartpole import (_fmt, bench_parser, frameworks_to_compare, grad_updates,
                                hide_tensorflow, launch, offpolicy_result, print_result,
                                run_interleaved, summarize)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNED = {"SAC": os.path.join(REPO, "tfrl", "tuned", "sac_halfcheetah.yaml"),
         "TD3": os.path.join(REPO, "tfrl", "tuned", "td3_halfcheetah.yaml")}
ZOO_LEARNING_STARTS = 10_000
SMOOTHING = 10  # training episodes in `train R` (HalfCheetah's are 1000 steps each)
TARGET_WALL_RATIO = 0.5
KEYS = ["wall_s", "cpu_s", "env_steps_per_s", "grad_steps_per_s", "final_reward",
        "eval_return", "peak_rss_mb"]


def learning_starts(steps: int) -> int:
    """The zoo's 10,000 steps before learning; a quarter of budgets under 20,000."""
    return ZOO_LEARNING_STARTS if steps >= 2 * ZOO_LEARNING_STARTS else max(1, steps // 4)


def evaluate(act, env_id: str, episodes: int, seed: int) -> float:
    """Mean return of `episodes` episodes of `act(obs) -> action` (deterministic) on a
    fresh `env_id` seeded `seed` (gymnasium only: no TensorFlow, no torch)."""
    import gymnasium as gym
    import numpy as np

    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run_tfrl(args) -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from tfrl.cli.experiment import build_config, resolve_experiment

    starts = learning_starts(args.steps)
    overrides = [f"seed={args.seed}", f"num_steps_sampled_before_learning_starts={starts}",
                 f"timesteps_per_iteration={min(1000, args.steps)}",
                 f"metrics_smoothing_episodes={SMOOTHING}"]
    if args.algo == "TD3":
        overrides.append(f"exploration_config.random_timesteps={starts}")
    if args.round:
        overrides.append(f"rollout_fragment_length={args.round}")
    overrides += args.tfrl_override
    exp = resolve_experiment(TUNED[args.algo], env=args.env, overrides=overrides)
    algo = build_config(exp).build()
    start, cpu = time.time(), time.process_time()
    result = {"timesteps_total": 0, "episode_reward_mean": float("nan")}
    while result["timesteps_total"] < args.steps:
        result = algo.train()
    wall, cpu = time.time() - start, time.process_time() - cpu
    grad_steps = grad_updates(algo)
    final = result["episode_reward_mean"]
    eval_return = evaluate(lambda obs: algo.compute_single_action(obs, explore=False),
                           args.env, args.eval_episodes, 10_000 + args.seed)
    algo.stop()
    return {**offpolicy_result(result["timesteps_total"], grad_steps, wall, cpu, None,
                      None if final != final else final),  # NaN: no episode ended
            "eval_return": eval_return}


def sb3_model(args):
    """SB3's model (the zoo's hyperparameters) on a Monitor-wrapped env."""
    import numpy as np
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    env = make_vec_env(args.env, n_envs=1, seed=args.seed)
    common = {"seed": args.seed, "device": "cpu", "verbose": 0,
              "stats_window_size": SMOOTHING, "learning_starts": learning_starts(args.steps),
              "train_freq": args.sb3_train_freq, "gradient_steps": args.sb3_train_freq}
    if args.algo == "SAC":
        return SAC("MlpPolicy", env, **common)
    dim = env.action_space.shape[-1]
    return TD3("MlpPolicy", env, learning_rate=1e-3, batch_size=256,
               action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)),
               policy_kwargs={"net_arch": [400, 300]}, **common)


def run_sb3(args) -> dict:
    hide_tensorflow()
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    model = sb3_model(args)
    start, cpu = time.time(), time.process_time()
    model.learn(total_timesteps=args.steps)
    wall, cpu = time.time() - start, time.process_time() - cpu
    rewards = [e["r"] for e in model.ep_info_buffer]  # the last SMOOTHING episodes
    eval_return = evaluate(lambda obs: model.predict(obs, deterministic=True)[0],
                           args.env, args.eval_episodes, 10_000 + args.seed)
    return {**offpolicy_result(model.num_timesteps, model._n_updates, wall, cpu, None,
                      float(np.mean(rewards)) if rewards else None),
            "eval_return": eval_return}


def _machine() -> str:
    import numpy as np

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def _verdict(rows: dict) -> None:
    """The issue's target: tfrl's wall <= 0.5x SB3's at an equal or better return."""
    def mean(fw, key):
        values = [r[key] for r in rows[fw] if r[key] is not None]
        return sum(values) / len(values) if values else None

    wall = mean("tfrl", "wall_s") / mean("sb3", "wall_s")
    for key, label in (("final_reward", "training"), ("eval_return", "evaluation")):
        ours, theirs = mean("tfrl", key), mean("sb3", key)
        if ours is None or theirs is None:
            print(f"target ({label} return): no finished episode on one side")
            continue
        met = wall <= TARGET_WALL_RATIO and ours >= theirs
        print(f"target ({label} return): wall {wall:.2f}x SB3 (<= {TARGET_WALL_RATIO}), "
              f"return {ours:.1f} vs {theirs:.1f} (>=): {'met' if met else 'NOT met'}")


def main() -> int:
    parser = bench_parser(__doc__.splitlines()[0], steps=30_000, seeds=[0])
    parser.add_argument("--algos", nargs="+", choices=sorted(TUNED), default=["SAC"])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--threads", type=int, default=2,
                        help="TF intra/inter-op threads = torch threads (default 2: this "
                             "machine's cores, as bench_atari.py)")
    parser.add_argument("--eval-episodes", type=int, default=5,
                        help="deterministic episodes after training (not timed)")
    parser.add_argument("--round", type=int, default=None,
                        help="tfrl: env steps per sampling round, with as many gradient steps "
                             "after each (default: the tuned file's 64)")
    parser.add_argument("--sb3-train-freq", type=int, default=1,
                        help="SB3: train_freq = gradient_steps (default 1: the zoo's)")
    parser.add_argument("--tfrl-override", action="append", default=[], metavar="KEY=VALUE",
                        help="a tfrl config key over the tuned file's (repeatable)")
    parser.add_argument("--algo", choices=sorted(TUNED), default="SAC")
    args = parser.parse_args()
    if args.child:
        return print_result((run_tfrl if args.child == "tfrl" else run_sb3)(args))

    frameworks = frameworks_to_compare()
    sb3 = "sb3" in frameworks
    if not importlib.util.find_spec("mujoco"):
        print("MuJoCo is not installed: pip install -e '.[mujoco]'.")
        return 1
    print(f"machine: {_machine()}; {args.threads} thread(s) per framework")
    shared = ["--env", args.env, "--threads", str(args.threads),
              "--eval-episodes", str(args.eval_episodes),
              "--sb3-train-freq", str(args.sb3_train_freq)]
    shared += ["--round", str(args.round)] if args.round else []
    for override in args.tfrl_override:
        shared += ["--tfrl-override", override]
    for algo in args.algos:
        rounds = args.round or "the tuned file's 64"
        print(f"\n== {algo} on {args.env}, {args.steps} env steps, learning from "
              f"{learning_starts(args.steps)} on; tfrl rounds of {rounds} steps, "
              f"SB3 train_freq = gradient_steps = "
              f"{args.sb3_train_freq}; {args.eval_episodes} eval episodes")
        print(f"{'run':10s} {'steps':>7s} {'wall s':>8s} {'cpu s':>8s} {'env st/s':>9s} "
              f"{'grad st/s':>9s} {'train R':>8s} {'eval R':>8s} {'RSS MB':>7s}")
        rows = run_interleaved(
            frameworks, args.seeds,
            lambda fw, seed: launch(fw, seed, args.steps, script=__file__,
                                    extra_args=("--algo", algo, *shared)),
            lambda r: (f"{r['steps']:7d} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} "
                       f"{r['env_steps_per_s']:9.0f} {r['grad_steps_per_s']:9.0f} "
                       f"{_fmt(r['final_reward'], '8.1f')} {_fmt(r['eval_return'], '8.1f')} "
                       f"{r['peak_rss_mb']:7.0f}"))
        summarize(rows, KEYS)
        if sb3:
            _verdict(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
