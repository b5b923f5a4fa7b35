"""tfrl vs Stable-Baselines3 off-policy: DQN, SAC, TD3 and DDPG with RL Zoo's settings, 3 seeds.

    python bench/bench_offpolicy.py                          # every section, 3 seeds
    python bench/bench_offpolicy.py --algos DQN --seeds 0    # one section, one seed
    python bench/bench_offpolicy.py --steps 1500 --seeds 0   # smoke check (tiny budget)

Sections (issue 15), each with RL Baselines3 Zoo's tuned settings on both sides:

- DQN, CartPole-v1, 50,000 steps: tfrl runs `tfrl/tuned/dqn_cartpole_zoo.yaml` (the
  zoo's settings in tfrl's keys; the file says how each one is translated and what still
  differs from SB3; `tests/test_dqn_sb3_parity.py` checks that one learning phase ends at
  SB3's weights). Target 400. DQN with these settings is unstable late in training: the
  final greedy evaluation swings between ~20 and 500 from seed to seed on both sides, so
  compare several seeds.
- SAC, Pendulum-v1, 20,000 steps: the zoo's `learning_rate 1e-3` on SB3's SAC defaults
  (batch 256, buffer 1M uniform, 100 steps before learning, one gradient step per env
  step, tau 0.005, gamma 0.99, automatic entropy tuning from alpha 1 with target entropy
  -dim(A), twin critics, [256, 256] ReLU networks). Target -250. SB3 runs the zoo's
  `train_freq=1, gradient_steps=1`; tfrl samples `SAC_ROUND_STEPS` (16, `--sac-round`)
  env steps per round and then runs as many gradient steps in one compiled call: the
  same replay ratio (one 256-row gradient step per env step), SB3's `train_freq=16,
  gradient_steps=16`. The bench prints the setting. (Short runs, 6000 steps, 3 seeds:
  the mean return of the last 10 episodes was no worse than with one step per round;
  see bench/RESULTS.md. `--sac-round 1` runs the zoo's schedule exactly.) tfrl's SAC
  and TD3 run without XLA (`JIT_COMPILE`; `--jit-compile 1` to compare): their nets are
  matmul-bound, where XLA's CPU kernels are slower.
- TD3, Pendulum-v1, 20,000 steps: the zoo's gamma 0.98, buffer 200,000, 10,000 random
  steps before learning, N(0, 0.1) action noise, lr 1e-3, [400, 300] networks, one
  learning phase per 200-step episode with as many gradient steps as steps sampled, on
  SB3's TD3 defaults (batch 256, tau 0.005, policy delay 2, target noise 0.2 clipped at
  0.5). Target -250.
- DDPG, Pendulum-v1, 20,000 steps: the zoo's Pendulum DDPG entry, which has TD3's
  settings above (gamma 0.98, buffer 200,000, 10,000 random steps, N(0, 0.1) action
  noise, lr 1e-3, [400, 300] networks, one learning phase per episode) on SB3's DDPG
  defaults (batch 256, tau 0.005): one critic, the actor and the targets updated with
  every critic update, no target policy smoothing. tfrl runs its DDPG (`twin_q=False`,
  `policy_delay=1`, `smooth_target_policy=False`) with the zoo's Gaussian noise instead
  of its default Ornstein-Uhlenbeck noise and no L2 penalty (SB3 has none). Target -250.

A section whose algorithm is missing from tfrl's registry (`tfrl.algorithms.registry`)
is skipped with a message (all four are registered). With `--steps` below a
section's budget (smoke checks), both sides start learning after at most a quarter of the
budget, so that the learning path runs too; SB3's exploration fraction and tfrl's epsilon
schedule are both fractions of the budget.

Every run is its own subprocess (so peak RSS is the run's own); runs alternate between the
frameworks (tfrl s0, SB3 s0, tfrl s1, ...). Reported per run: wall seconds for the
budget (after the algorithm is built), CPU seconds of the process over the same span
(every thread; fairer than wall seconds on a loaded machine), env steps/s, gradient
steps/s, the env steps at which the mean return of the last 100 episodes first reached
the section's target (tfrl checks after every iteration of 1000 steps, SB3 after every
episode), that mean at the end of the budget (`final R`: training episodes, exploration
on), the mean return of 10 greedy (deterministic) evaluation episodes after training
(`eval R`, `bench_ppo_cartpole.greedy_return`: both frameworks play the same env seeds), and peak RSS; then
the means and the tfrl/SB3 ratios (for Pendulum's negative returns a ratio below 1 is the
better one). More seeds: `--seeds 0 1 2 3 4 5` (a seed pair of the DQN section takes
~80 s on a quiet core).
One intra/inter-op thread for TF and one torch thread (`--threads N`: N of each). The
SB3 child does not import TensorFlow (`bench_ppo_cartpole.hide_tensorflow`: SB3's
logger would import it).
"""

import os
import time
from typing import Optional

from bench_ppo_cartpole import (_fmt, bench_parser, curves_to, frameworks_to_compare,
                                grad_updates, greedy_return, hide_tensorflow, launch,
                                offpolicy_result, print_result, run_interleaved, summarize)
from curves import Curve, train_until

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DQN_ZOO = os.path.join(REPO, "tfrl", "tuned", "dqn_cartpole_zoo.yaml")
SMOOTHING = 100  # episodes in the mean return (SB3's episode buffer)
# tfrl's SAC: env steps per sampling round, each followed by as many gradient steps in
# one compiled call (the zoo's 1:1 replay ratio; see the module docstring).
SAC_ROUND_STEPS = 16
# tfrl's `jit_compile` (XLA learner) per section. Off for SAC's and TD3's [256, 256] /
# [400, 300] nets: XLA removes the executor's per-op overhead (~0.3 ms per gradient
# step) but its CPU dot kernels are slower on the backward pass's transposed and
# matrix-vector shapes, and those nets are matmul-bound (bench/bench_sac_learner.py:
# SAC 6.9 vs 7.4 ms CPU per gradient step on Pendulum, 7.6 vs 8.2 on HalfCheetah's
# shapes; bench/RESULTS.md). `--jit-compile 0|1` overrides it. DQN: its tuned file's.
JIT_COMPILE = {"SAC": False, "TD3": False, "DDPG": False}

#: name -> env, budget (env steps), target mean return.
SECTIONS = {
    "DQN": {"env": "CartPole-v1", "steps": 50_000, "target": 400.0, "learning_starts": 1000},
    "SAC": {"env": "Pendulum-v1", "steps": 20_000, "target": -250.0, "learning_starts": 100},
    "TD3": {"env": "Pendulum-v1", "steps": 20_000, "target": -250.0,
            "learning_starts": 10_000},
    "DDPG": {"env": "Pendulum-v1", "steps": 20_000, "target": -250.0,
             "learning_starts": 10_000},
}


def learning_starts(algo: str, steps: int) -> int:
    """The zoo's steps before learning, at most a quarter of a smaller budget."""
    section = SECTIONS[algo]
    if steps >= section["steps"]:
        return section["learning_starts"]
    return min(section["learning_starts"], max(1, steps // 4))


def tfrl_config(algo: str, seed: int, steps: int, sac_round: int = SAC_ROUND_STEPS,
                jit_compile: Optional[bool] = None) -> dict:
    """tfrl's config dict of a section (the zoo's settings in tfrl's keys); `sac_round`:
    SAC's env steps per sampling round (and gradient steps per learning call);
    `jit_compile`: None for the section's setting (`JIT_COMPILE`, DQN's tuned file)."""
    config = _section_config(algo, seed, steps, sac_round)
    if jit_compile is not None:
        config["jit_compile"] = bool(jit_compile)
    return config


def _section_config(algo: str, seed: int, steps: int, sac_round: int) -> dict:
    starts = learning_starts(algo, steps)
    common = {"env": SECTIONS[algo]["env"], "seed": seed, "num_workers": 0,
              "num_envs_per_worker": 1, "metrics_smoothing_episodes": SMOOTHING,
              "timesteps_per_iteration": min(1000, steps),
              "num_steps_sampled_before_learning_starts": starts}
    if algo == "DQN":
        from tfrl.cli.experiment import build_config, resolve_experiment

        # The zoo explores over 16 % of the budget (8000 of 50,000 steps).
        overrides = [f"seed={seed}", f"learning_starts={starts}",
                     f"timesteps_per_iteration={min(1000, steps)}",
                     f"exploration_config.epsilon_timesteps={max(1, int(0.16 * steps))}"]
        return build_config(resolve_experiment(DQN_ZOO, overrides=overrides)).to_dict()
    if algo == "SAC":
        # training_intensity 256 = train_batch_size: one gradient step per sampled step,
        # `sac_round` of them after each round of `sac_round` env steps.
        return {**common, "gamma": 0.99, "tau": 0.005, "train_batch_size": 256,
                "rollout_fragment_length": sac_round, "training_intensity": 256,
                "twin_q": True, "initial_alpha": 1.0, "target_entropy": "auto",
                "jit_compile": JIT_COMPILE["SAC"],
                "optimization": {"actor_learning_rate": 1e-3, "critic_learning_rate": 1e-3,
                                 "entropy_learning_rate": 1e-3},
                "replay_buffer_config": {"type": "MultiAgentReplayBuffer",
                                         "capacity": 1_000_000},
                "q_model_config": {"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"},
                "policy_model_config": {"fcnet_hiddens": [256, 256],
                                        "fcnet_activation": "relu"}}
    if algo == "DDPG":
        # The zoo's TD3 settings on DDPG: one critic, no delay, no target smoothing.
        return {**_section_config("TD3", seed, steps, sac_round), "twin_q": False,
                "policy_delay": 1, "smooth_target_policy": False,
                "jit_compile": JIT_COMPILE["DDPG"]}
    if algo == "TD3":
        return {**common, "gamma": 0.98, "tau": 0.005, "train_batch_size": 256,
                # One learning phase per 200-step episode, one gradient step (256 rows)
                # per sampled step.
                "rollout_fragment_length": 200, "training_intensity": 256,
                "twin_q": True, "policy_delay": 2, "smooth_target_policy": True,
                "target_noise": 0.2, "target_noise_clip": 0.5, "l2_reg": 0.0,
                "use_huber": False, "actor_lr": 1e-3, "critic_lr": 1e-3,
                "jit_compile": JIT_COMPILE["TD3"],
                "actor_hiddens": [400, 300], "critic_hiddens": [400, 300],
                "replay_buffer_config": {"type": "MultiAgentReplayBuffer",
                                         "capacity": 200_000},
                # SB3 learns once more than `learning_starts` steps were taken (its first
                # phase ends the episode after step 10,000); tfrl once that many are stored.
                "num_steps_sampled_before_learning_starts": starts + 1,
                "exploration_config": {"type": "GaussianNoise", "random_timesteps": starts,
                                       "stddev": 0.1, "initial_scale": 1.0,
                                       "final_scale": 1.0, "scale_timesteps": 1}}
    raise ValueError(f"unknown section {algo!r}; choose from {sorted(SECTIONS)}")


def run_tfrl(algo_name: str, seed: int, steps: int, sac_round: int = SAC_ROUND_STEPS,
             threads: int = 1, jit_compile: Optional[bool] = None) -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tfrl.algorithms.registry import get_algorithm_class

    _, config_class = get_algorithm_class(algo_name, return_config=True)
    algo = config_class.from_dict(
        tfrl_config(algo_name, seed, steps, sac_round, jit_compile)).build()
    target = SECTIONS[algo_name]["target"]
    curve = Curve(algo_name, SECTIONS[algo_name]["env"], "tfrl", seed, steps,
                  smoothing=SMOOTHING)
    result, solved, wall, cpu = train_until(algo, curve, steps, target)
    grad_steps = grad_updates(algo)
    final = result["episode_reward_mean"]
    out = offpolicy_result(result["timesteps_total"], grad_steps, wall, cpu, solved,
                  None if final != final else final)  # NaN: no episode ended
    out["eval_reward"] = greedy_return(
        lambda obs: algo.compute_single_action(obs, explore=False),
        SECTIONS[algo_name]["env"], seed)
    algo.stop()
    return out


def sb3_model(algo: str, seed: int, steps: int):
    """SB3's model of a section (the zoo's hyperparameters) on a Monitor-wrapped env."""
    from stable_baselines3 import DDPG, DQN, SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise
    import numpy as np

    env = make_vec_env(SECTIONS[algo]["env"], n_envs=1, seed=seed)
    starts = learning_starts(algo, steps)
    common = {"seed": seed, "device": "cpu", "verbose": 0, "stats_window_size": SMOOTHING}
    if algo == "DQN":
        return DQN("MlpPolicy", env, learning_rate=2.3e-3, batch_size=64,
                   buffer_size=100_000, learning_starts=starts, gamma=0.99,
                   target_update_interval=10, train_freq=256, gradient_steps=128,
                   exploration_fraction=0.16, exploration_final_eps=0.04,
                   policy_kwargs={"net_arch": [256, 256]}, **common)
    if algo == "SAC":
        return SAC("MlpPolicy", env, learning_rate=1e-3, learning_starts=starts, **common)
    dim = env.action_space.shape[-1]
    if algo == "DDPG":  # SB3's DDPG takes no stats_window_size (its default is 100)
        del common["stats_window_size"]
    # TD3 and DDPG: the zoo's Pendulum entries are the same settings.
    model = (TD3 if algo == "TD3" else DDPG)(
        "MlpPolicy", env, gamma=0.98, buffer_size=200_000, learning_starts=starts,
        action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)),
        gradient_steps=-1, train_freq=(1, "episode"), learning_rate=1e-3,
        policy_kwargs={"net_arch": [400, 300]}, **common)
    if model._stats_window_size != SMOOTHING:
        raise RuntimeError(f"SB3 {algo}'s episode window is {model._stats_window_size}; "
                           f"the bench compares means over {SMOOTHING} episodes")
    return model


def run_sb3(algo: str, seed: int, steps: int, threads: int = 1) -> dict:
    hide_tensorflow()
    import numpy as np
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(threads)
    target = SECTIONS[algo]["target"]

    class Watch(BaseCallback):
        solved = None
        episodes = 0

        def _on_step(self):
            done = self.model._episode_num  # episodes finished so far
            if done != self.episodes:
                self.episodes = done
                buf = self.model.ep_info_buffer  # the last 100 episodes
                curve.add(self.num_timesteps, float(np.mean([e["r"] for e in buf])),
                          time.time() - start)
                if self.solved is None and np.mean([e["r"] for e in buf]) >= target:
                    self.solved = self.num_timesteps
            return True

    model = sb3_model(algo, seed, steps)
    watch = Watch()
    curve = Curve(algo, SECTIONS[algo]["env"], "sb3", seed, steps, smoothing=SMOOTHING)
    start, cpu = time.time(), time.process_time()
    model.learn(total_timesteps=steps, callback=watch)
    wall, cpu = time.time() - start, time.process_time() - cpu
    curve.write()
    rewards = [e["r"] for e in model.ep_info_buffer]
    out = offpolicy_result(model.num_timesteps, model._n_updates, wall, cpu, watch.solved,
                  float(np.mean(rewards)) if rewards else None)
    out["eval_reward"] = greedy_return(
        lambda obs: model.predict(obs, deterministic=True)[0], SECTIONS[algo]["env"], seed)
    return out


def registered(algo: str) -> bool:
    """Whether tfrl's registry has `algo`."""
    from tfrl.algorithms.registry import ALGORITHMS  # no TensorFlow import

    return algo in ALGORITHMS


def main() -> int:
    # --steps: env steps per run for every section (default: each section's budget);
    # small values are for smoke checks.
    parser = bench_parser(__doc__.splitlines()[0], steps=None)
    parser.add_argument("--algos", nargs="+", choices=sorted(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--algo", choices=sorted(SECTIONS))
    parser.add_argument("--sac-round", type=int, default=SAC_ROUND_STEPS,
                        help="tfrl SAC: env steps per sampling round, each followed by as many "
                             "gradient steps in one compiled call (1: the zoo's schedule)")
    parser.add_argument("--threads", type=int, default=1,
                        help="TF intra/inter-op threads = torch threads (default 1)")
    parser.add_argument("--jit-compile", choices=["auto", "0", "1"], default="auto",
                        help="tfrl's jit_compile (XLA learner); auto: each section's "
                             "(JIT_COMPILE; DQN: its tuned file's)")
    args = parser.parse_args()
    jit = None if args.jit_compile == "auto" else args.jit_compile == "1"
    if args.child:
        return print_result(
            run_tfrl(args.algo, args.seed, args.steps, args.sac_round, args.threads, jit)
            if args.child == "tfrl" else run_sb3(args.algo, args.seed, args.steps, args.threads))

    curves_to(args.curves)
    frameworks = frameworks_to_compare()
    for algo in args.algos:
        section = SECTIONS[algo]
        steps = args.steps or section["steps"]
        if not registered(algo):
            print(f"\n== {algo}: not in tfrl's registry (tfrl.algorithms.registry) yet: "
                  "skipped.")
            continue
        print(f"\n== {algo} on {section['env']}, {steps} steps, target "
              f"{section['target']:g} (mean of the last {SMOOTHING} episodes)")
        extra = ("--algo", algo, "--threads", str(args.threads),
                 "--jit-compile", args.jit_compile)
        tfrl_jit = JIT_COMPILE.get(algo, "as the tuned file") if jit is None else jit
        print(f"{args.threads} thread(s) per framework (TF intra/inter-op, torch); tfrl "
              f"jit_compile={tfrl_jit}")
        if algo == "SAC":
            extra += ("--sac-round", str(args.sac_round))
            print(f"SB3: train_freq=1, gradient_steps=1 (the zoo's); tfrl: "
                  f"{args.sac_round} env steps per sampling round, then {args.sac_round} "
                  "gradient steps of 256 rows in one compiled call (the same 1:1 replay "
                  "ratio; --sac-round 1 for the zoo's schedule)")
        if algo in ("TD3", "DDPG"):
            print("both: one learning phase per 200-step episode, one gradient step of 256 "
                  "rows per sampled step (tfrl: one compiled call per phase)")
        print(f"{'run':10s} {'wall s':>8s} {'cpu s':>8s} {'env st/s':>9s} {'grad st/s':>9s} "
              f"{'steps@tgt':>9s} {'final R':>8s} {'eval R':>8s} {'RSS MB':>7s}")
        rows = run_interleaved(
            frameworks, args.seeds,
            lambda fw, seed: launch(fw, seed, steps, script=__file__, extra_args=extra),
            lambda r: (f"{r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['env_steps_per_s']:9.0f} "
                       f"{r['grad_steps_per_s']:9.0f} {_fmt(r['solved_steps'], '9d')} "
                       f"{_fmt(r['final_reward'], '8.1f')} {_fmt(r['eval_reward'], '8.1f')} "
                       f"{r['peak_rss_mb']:7.0f}"))
        summarize(rows, ["wall_s", "cpu_s", "env_steps_per_s", "grad_steps_per_s",
                         "solved_steps", "final_reward", "eval_reward", "peak_rss_mb"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
