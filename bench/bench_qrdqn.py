"""tfrl QR-DQN vs sb3-contrib QRDQN on CartPole-v1 and MinAtar Breakout, RL Zoo's settings.

    python bench/bench_qrdqn.py                                   # both sections, 3 seeds
    python bench/bench_qrdqn.py --sections CartPole --seeds 0     # one section, one seed
    python bench/bench_qrdqn.py --sections MinAtarBreakout --steps 100000 --seeds 0
    python bench/bench_qrdqn.py --steps 1500 --seeds 0            # smoke check (tiny budget)

Sections (issue 33), the same settings on both sides, written once in sb3-contrib's keys
(`SECTIONS[...]["zoo"]`) and translated to tfrl's by `tfrl_config()`; a key it does not
know is an error, so the two sides cannot drift apart:

- CartPole: CartPole-v1, 50,000 steps, RL Baselines3 Zoo's tuned QRDQN entry
  (rl_zoo3 2.9.2, hyperparams/qrdqn.yml) as it is: lr 2.3e-3, batch 64, buffer 100,000,
  1000 steps before learning, gamma 0.99, target copied every 10 steps, 128 gradient
  steps after every 256 env steps, epsilon 1 -> 0.04 over 16 % of the budget, [256, 256]
  ReLU network, 10 quantiles. Target 400.
- MinAtarBreakout: MinAtar/Breakout-v1 (10x10x4 boolean frames, 3 actions, sticky
  actions 0.1: MinAtar's defaults), 100,000 steps by default. The Zoo has no MinAtar
  entry (neither qrdqn.yml nor dqn.yml), so this section takes the Zoo's Atari QRDQN
  entry (sb3-contrib's defaults plus 50,000 steps before learning and epsilon decay over
  2.5 % of a 10M-step budget) and replaces what belongs to Atari or to a 10M-step run:
  * the network: MinAtar's (Young & Tian 2019; tfrl's default encoder for 10x10
    images): conv 16 3x3 stride 1, dense 128, both ReLU, then the quantile head,
    instead of Nature DQN's CNN for 84x84 frames (no AtariWrapper, no frame stack:
    MinAtar's channels are its state);
  * the horizon-bound numbers, from MinAtar's DQN (Young & Tian 2019, 5M steps): lr
    2.5e-4 (the Zoo's 5e-5 is for 10M steps), buffer 100,000, 5000 steps before
    learning, target copied every 1000 steps; epsilon decays over 10 % of the budget (the
    Zoo's 2.5 % of 10M is 250,000 steps, more than this budget; MinAtar's DQN decays
    over its first 100,000 steps) to the Zoo's 0.01.
  Kept from the Zoo's Atari entry (sb3-contrib's QRDQN defaults): batch 32, gamma 0.99,
  one gradient step per 4 env steps, 200 quantiles, Adam epsilon 0.01 / batch, no
  gradient clipping. Target 1.5 (about 3x a random policy's mean return, 0.47;
  tests/test_minatar_learning.py).

tfrl's side of the CartPole section is a tuned file with these settings
(`tfrl/tuned/dqn_qrdqn_cartpole_zoo.yaml`; MinAtar's settings get a tuned file once a
run has measured them, since `tfrl train --algo=dqn --env=MinAtar/Breakout-v1` would pick it;
tests/test_bench_qrdqn.py checks that they say what `tfrl_config()` says). Both sides
are QR-DQN as sb3-contrib has it (`QRDQN_STRUCTURE`): the quantile Huber loss (kappa 1)
summed over the predicted quantiles and averaged over the target ones and the batch, the
next action greedy by the target network's quantile means (no double Q), 1-step returns,
uniform replay, no dueling, a linear quantile head on the trunk, the target network copied
(tau 1). sb3-contrib's QRDQN defaults that the Zoo leaves alone (`SB3_CONTRIB_DEFAULTS`)
are passed to SB3 explicitly and mapped for tfrl like the Zoo's keys; the SB3 child checks
Adam's epsilon (sb3-contrib sets it to 0.01 / batch_size itself).

With `--steps` below a section's budget (smoke checks), both sides start learning after
at most a quarter of the budget; the exploration fraction is a fraction of `--steps`.
What remains different: TF's Adam adds epsilon to sqrt(v), torch's to sqrt(v / (1 -
beta2^t)); initial weights (torch's U(+-1/sqrt(fan_in)) vs tfrl's catalog initializers);
SB3 acts uniformly at random before learning starts, tfrl epsilon-greedily; tfrl samples
each learning phase's minibatches at once (bench_offpolicy.py's DQN section says more).

Every run is its own subprocess, runs alternate between the frameworks (tfrl s0, SB3 s0,
tfrl s1, ...), one intra/inter-op TF thread and one torch thread (`--threads N`), and the
SB3 child does not import TensorFlow (`bench_ppo_cartpole.hide_tensorflow`). The columns
are bench_offpolicy.py's: wall and process CPU seconds for the budget, env and gradient
steps/s, env steps at which the mean return of the last 100 training episodes first
reached the target, that mean at the end (`final R`), the mean return of 10 greedy
episodes on the same env seeds for both (`eval R`; MinAtar's capped at
`EVAL_MAX_STEPS` steps, it has no time limit) and peak RSS; then means and tfrl/SB3
ratios, and the issue's targets: wall <= 0.5x SB3's and mean final return >= SB3's.
`--curves DIR` writes each run's learning curve (`qrdqn_<env>_<library>_seed<k>.csv`).
"""

import os
import time
from typing import Any, Dict, Optional, Tuple

from bench_ppo_cartpole import (_fmt, _mean, bench_parser, curves_to, frameworks_to_compare,
                                grad_updates, greedy_return, gym_make, hide_tensorflow,
                                launch, offpolicy_result, print_result, run_interleaved,
                                summarize)
from curves import Curve, train_until

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOOTHING = 100  # episodes in the mean return (SB3's episode buffer)
EVAL_MAX_STEPS = 5000  # greedy MinAtar episodes are cut here (it has no time limit)
# The issue's targets: tfrl's wall time at most this fraction of SB3's, and tfrl's
# mean final return (last 100 training episodes, mean over seeds) at least SB3's.
WALL_TARGET = 0.5

#: name -> env, target mean return, tfrl's tuned file, and the settings in sb3-contrib's
#: keys (RL Zoo's entry; the MinAtar one is derived, see the module docstring).
SECTIONS: Dict[str, Dict[str, Any]] = {
    "CartPole": {
        "env": "CartPole-v1", "target": 400.0, "tuned": "dqn_qrdqn_cartpole_zoo",
        # rl_zoo3 2.9.2 hyperparams/qrdqn.yml, CartPole-v1, verbatim.
        "zoo": {"n_timesteps": 50_000, "policy": "MlpPolicy", "learning_rate": 2.3e-3,
                "batch_size": 64, "buffer_size": 100_000, "learning_starts": 1000,
                "gamma": 0.99, "target_update_interval": 10, "train_freq": 256,
                "gradient_steps": 128, "exploration_fraction": 0.16,
                "exploration_final_eps": 0.04,
                "policy_kwargs": {"net_arch": [256, 256], "n_quantiles": 10}},
    },
    "MinAtarBreakout": {
        "env": "MinAtar/Breakout-v1", "target": 1.5, "tuned": None,
        "eval_max_steps": EVAL_MAX_STEPS,
        "zoo": {"n_timesteps": 100_000, "policy": "MinAtarCnnPolicy",
                "learning_rate": 2.5e-4, "batch_size": 32, "buffer_size": 100_000,
                "learning_starts": 5000, "gamma": 0.99, "target_update_interval": 1000,
                "train_freq": 4, "gradient_steps": 1, "exploration_fraction": 0.1,
                "exploration_final_eps": 0.01,
                "policy_kwargs": {"net_arch": [], "n_quantiles": 200}},
    },
}

#: sb3-contrib QRDQN's defaults that the settings above leave alone (passed to SB3
#: explicitly, translated for tfrl like the Zoo's keys).
SB3_CONTRIB_DEFAULTS: Dict[str, Any] = {
    "tau": 1.0, "exploration_initial_eps": 1.0, "max_grad_norm": None, "n_steps": 1}

#: What makes tfrl's DQN the QR-DQN of sb3-contrib (see the module docstring).
QRDQN_STRUCTURE: Dict[str, Any] = {
    "distributional": "quantile", "double_q": False, "dueling": False, "hiddens": [],
    "noisy": False}

_POLICY_KWARGS = ("net_arch", "n_quantiles")
_POLICIES = ("MlpPolicy", "MinAtarCnnPolicy")


def zoo_settings(section: str) -> Dict[str, Any]:
    """The section's settings in sb3-contrib's keys, sb3-contrib's untouched defaults
    included."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}; choose from {sorted(SECTIONS)}")
    return {**SB3_CONTRIB_DEFAULTS, **SECTIONS[section]["zoo"]}


def learning_starts(zoo: Dict[str, Any], steps: int) -> int:
    """The settings' steps before learning, at most a quarter of a smaller budget."""
    if steps >= zoo["n_timesteps"]:
        return zoo["learning_starts"]
    return min(zoo["learning_starts"], max(1, steps // 4))


def _check_keys(zoo: Dict[str, Any]) -> None:
    known = {"n_timesteps", "policy", "learning_rate", "batch_size", "buffer_size",
             "learning_starts", "gamma", "target_update_interval", "train_freq",
             "gradient_steps", "exploration_fraction", "exploration_final_eps",
             "policy_kwargs", *SB3_CONTRIB_DEFAULTS}
    unknown = sorted(set(zoo) - known)
    if unknown:
        raise ValueError(f"bench_qrdqn: no tfrl translation for the settings' keys {unknown}; "
                         f"known: {sorted(known)}. Map them in tfrl_config() and sb3_kwargs().")
    missing = sorted(known - set(zoo))
    if missing:
        raise ValueError(f"bench_qrdqn: the settings lack {missing} (both sides need them).")
    extra = sorted(set(zoo["policy_kwargs"]) - set(_POLICY_KWARGS))
    if extra:
        raise ValueError(f"bench_qrdqn: no tfrl translation for policy_kwargs {extra}; "
                         f"known: {list(_POLICY_KWARGS)}.")
    if zoo["policy"] not in _POLICIES:
        raise ValueError(f"bench_qrdqn: policy must be one of {_POLICIES}; received "
                         f"{zoo['policy']!r}.")
    if zoo["gradient_steps"] < 1 or not isinstance(zoo["train_freq"], int):
        raise ValueError("bench_qrdqn: gradient_steps must be >= 1 and train_freq an int of "
                         f"env steps; received {zoo['gradient_steps']!r}, "
                         f"{zoo['train_freq']!r}.")


def tfrl_config(section: str, seed: int, steps: Optional[int] = None) -> Dict[str, Any]:
    """tfrl's DQN config dict for a section: its settings translated key by key."""
    zoo = zoo_settings(section)
    _check_keys(zoo)
    steps = steps or zoo["n_timesteps"]
    batch, freq = zoo["batch_size"], zoo["train_freq"]
    net_arch = list(zoo["policy_kwargs"].get("net_arch", [64, 64]))
    if zoo["policy"] == "MlpPolicy":  # SB3: flatten, net_arch ReLU layers, quantile head
        model = {"fcnet_hiddens": net_arch, "fcnet_activation": "relu"}
    else:  # MinAtar's encoder (tfrl's default for 10x10 images), net_arch after it
        model = {"conv_filters": None, "conv_activation": "relu",
                 "post_fcnet_hiddens": net_arch, "post_fcnet_activation": "relu"}
    return {
        "env": SECTIONS[section]["env"], "seed": seed, "num_workers": 0,
        "num_envs_per_worker": 1, "timesteps_per_iteration": min(1000, steps),
        "metrics_smoothing_episodes": SMOOTHING,
        **QRDQN_STRUCTURE,
        "num_atoms": int(zoo["policy_kwargs"].get("n_quantiles", 200)),
        "model": model,
        "lr": float(zoo["learning_rate"]),
        "train_batch_size": batch,
        # sb3-contrib's Adam epsilon (the QR-DQN paper's 0.01 / 32, scaled by the batch).
        "adam_epsilon": 0.01 / batch,
        "replay_buffer_config": {"type": "MultiAgentReplayBuffer",
                                 "capacity": int(zoo["buffer_size"])},
        "num_steps_sampled_before_learning_starts": learning_starts(zoo, steps),
        "gamma": float(zoo["gamma"]),
        # SB3 copies every `target_update_interval` env steps while sampling; tfrl after a
        # learning phase once that many steps were sampled since the last copy.
        "target_network_update_freq": int(zoo["target_update_interval"]),
        "tau": float(zoo["tau"]),
        # `gradient_steps` minibatches of `batch_size` after every `train_freq` steps.
        "rollout_fragment_length": freq,
        "training_intensity": zoo["gradient_steps"] * batch / freq,
        "exploration_config": {
            "type": "EpsilonGreedy", "initial_epsilon": float(zoo["exploration_initial_eps"]),
            "final_epsilon": float(zoo["exploration_final_eps"]),
            "epsilon_timesteps": max(1, int(zoo["exploration_fraction"] * steps))},
        "grad_clip": zoo["max_grad_norm"],
        "n_step": int(zoo["n_steps"]),
    }


def sb3_kwargs(section: str, seed: int, steps: Optional[int] = None) -> Tuple[str, dict]:
    """`(policy, QRDQN keyword arguments)` of a section (no env; the MinAtar policy's
    features extractor is named by `features_extractor: "minatar"` in policy_kwargs)."""
    zoo = zoo_settings(section)
    _check_keys(zoo)
    steps = steps or zoo["n_timesteps"]
    kwargs = {k: v for k, v in zoo.items() if k not in ("n_timesteps", "policy")}
    kwargs["learning_starts"] = learning_starts(zoo, steps)
    kwargs["policy_kwargs"] = dict(zoo["policy_kwargs"])
    if zoo["policy"] == "MinAtarCnnPolicy":
        kwargs["policy_kwargs"]["features_extractor"] = "minatar"
    kwargs.update(seed=seed, device="cpu", verbose=0, stats_window_size=SMOOTHING)
    return "MlpPolicy", kwargs


def minatar_extractor():
    """SB3's features extractor with MinAtar's network (tfrl's default 10x10 encoder):
    channels-last frames -> conv 16 3x3 stride 1 (valid), ReLU -> dense 128, ReLU."""
    import torch as th
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class MinAtarCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space, features_dim: int = 128):
            super().__init__(observation_space, features_dim)
            height, width, channels = observation_space.shape
            self.conv = th.nn.Sequential(th.nn.Conv2d(channels, 16, 3, 1), th.nn.ReLU(),
                                         th.nn.Flatten())
            flat = 16 * (height - 2) * (width - 2)
            self.dense = th.nn.Sequential(th.nn.Linear(flat, features_dim), th.nn.ReLU())

        def forward(self, obs):
            return self.dense(self.conv(obs.permute(0, 3, 1, 2)))

    return MinAtarCNN


def run_tfrl(section: str, seed: int, steps: int, threads: int = 1) -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tfrl.algorithms.dqn import DQNConfig

    algo = DQNConfig.from_dict(tfrl_config(section, seed, steps)).build()
    env_id, target = SECTIONS[section]["env"], SECTIONS[section]["target"]
    curve = Curve("QRDQN", env_id, "tfrl", seed, steps, smoothing=SMOOTHING)
    result, solved, wall, cpu = train_until(algo, curve, steps, target)
    final = result["episode_reward_mean"]
    out = offpolicy_result(result["timesteps_total"], grad_updates(algo), wall, cpu, solved,
                           None if final != final else final)  # NaN: no episode ended
    out["eval_reward"] = greedy_return(
        lambda obs: algo.compute_single_action(obs, explore=False), env_id, seed,
        max_episode_steps=SECTIONS[section].get("eval_max_steps"))
    algo.stop()
    return out


def sb3_model(section: str, seed: int, steps: int):
    """sb3-contrib's QRDQN of a section on a Monitor-wrapped env."""
    from sb3_contrib import QRDQN
    from stable_baselines3.common.env_util import make_vec_env

    env_id = SECTIONS[section]["env"]
    gym_make(env_id).close()  # registers MinAtar's ids in this process
    policy, kwargs = sb3_kwargs(section, seed, steps)
    if kwargs["policy_kwargs"].pop("features_extractor", None) == "minatar":
        kwargs["policy_kwargs"]["features_extractor_class"] = minatar_extractor()
    model = QRDQN(policy, make_vec_env(env_id, n_envs=1, seed=seed), **kwargs)
    eps = model.policy.optimizer.defaults["eps"]
    if abs(eps - 0.01 / kwargs["batch_size"]) > 1e-12:
        raise RuntimeError(f"sb3-contrib's QRDQN Adam epsilon is {eps}; tfrl_config() maps "
                           f"it to 0.01 / batch_size = {0.01 / kwargs['batch_size']}")
    return model


def run_sb3(section: str, seed: int, steps: int, threads: int = 1) -> dict:
    hide_tensorflow()
    import numpy as np
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(threads)
    env_id, target = SECTIONS[section]["env"], SECTIONS[section]["target"]

    class Watch(BaseCallback):
        solved = None
        episodes = 0

        def _on_step(self):
            if self.model._episode_num != self.episodes:  # an episode ended
                self.episodes = self.model._episode_num
                mean = float(np.mean([e["r"] for e in self.model.ep_info_buffer]))
                curve.add(self.num_timesteps, mean, time.time() - start)
                if self.solved is None and mean >= target:
                    self.solved = self.num_timesteps
            return True

    model = sb3_model(section, seed, steps)
    watch = Watch()
    curve = Curve("QRDQN", env_id, "sb3", seed, steps, smoothing=SMOOTHING)
    start, cpu = time.time(), time.process_time()
    model.learn(total_timesteps=steps, callback=watch)
    wall, cpu = time.time() - start, time.process_time() - cpu
    curve.write()
    rewards = [e["r"] for e in model.ep_info_buffer]
    out = offpolicy_result(model.num_timesteps, model._n_updates, wall, cpu, watch.solved,
                           float(np.mean(rewards)) if rewards else None)
    out["eval_reward"] = greedy_return(
        lambda obs: model.predict(obs, deterministic=True)[0], env_id, seed,
        max_episode_steps=SECTIONS[section].get("eval_max_steps"))
    return out


def targets(rows: Dict[str, list]) -> Optional[str]:
    """The issue's verdict on a section's runs: tfrl's mean wall time against
    `WALL_TARGET` x SB3's, tfrl's mean final return against SB3's (None without SB3)."""
    if "sb3" not in rows or "tfrl" not in rows:
        return None
    wall = _mean(rows["tfrl"], "wall_s") / _mean(rows["sb3"], "wall_s")
    mine, theirs = _mean(rows["tfrl"], "final_reward"), _mean(rows["sb3"], "final_reward")
    ret = ("-" if mine is None or theirs is None else
           f"{mine:.1f} vs {theirs:.1f}: {'met' if mine >= theirs else 'missed'}")
    return (f"targets: wall tfrl/SB3 {wall:.2f} (<= {WALL_TARGET}: "
            f"{'met' if wall <= WALL_TARGET else 'missed'}); final return tfrl >= SB3: {ret}")


def main() -> int:
    # --steps: env steps per run for every section (default: each section's budget).
    parser = bench_parser(__doc__.splitlines()[0], steps=None)
    parser.add_argument("--sections", nargs="+", choices=sorted(SECTIONS),
                        default=list(SECTIONS))
    parser.add_argument("--section", choices=sorted(SECTIONS))
    parser.add_argument("--threads", type=int, default=1,
                        help="TF intra/inter-op threads = torch threads (default 1)")
    args = parser.parse_args()
    if args.child:
        run = run_tfrl if args.child == "tfrl" else run_sb3
        return print_result(run(args.section, args.seed, args.steps, args.threads))

    curves_to(args.curves)
    frameworks = frameworks_to_compare("sb3_contrib", "sb3-contrib")
    for section in args.sections:
        info = SECTIONS[section]
        steps = args.steps or info["zoo"]["n_timesteps"]
        print(f"\n== QR-DQN, {section}: {info['env']}, {steps} steps, target "
              f"{info['target']:g} (mean of the last {SMOOTHING} episodes); "
              f"{args.threads} thread(s) per framework; "
              + (f"tfrl/tuned/{info['tuned']}.yaml's settings" if info["tuned"]
                 else "the settings above (no tuned file until they are measured)"))
        print(f"{'run':10s} {'wall s':>8s} {'cpu s':>8s} {'env st/s':>9s} {'grad st/s':>9s} "
              f"{'steps@tgt':>9s} {'final R':>8s} {'eval R':>8s} {'RSS MB':>7s}")
        extra = ("--section", section, "--threads", str(args.threads))
        rows = run_interleaved(
            frameworks, args.seeds,
            lambda fw, seed: launch(fw, seed, steps, script=__file__, extra_args=extra,
                                    timeout=4 * 3600.0),
            lambda r: (f"{r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['env_steps_per_s']:9.0f} "
                       f"{r['grad_steps_per_s']:9.0f} {_fmt(r['solved_steps'], '9d')} "
                       f"{_fmt(r['final_reward'], '8.2f')} {_fmt(r['eval_reward'], '8.2f')} "
                       f"{r['peak_rss_mb']:7.0f}"))
        summarize(rows, ["wall_s", "cpu_s", "env_steps_per_s", "grad_steps_per_s",
                         "solved_steps", "final_reward", "eval_reward", "peak_rss_mb"])
        verdict = targets(rows)
        if verdict:
            print(verdict)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
