"""tfrl PPO with action masks vs sb3-contrib's MaskablePPO, same env and settings, 3 seeds.

    python bench/bench_masking.py                       # 50k steps x 3 seeds x both
    python bench/bench_masking.py --steps 5000 --seeds 0

The env is `tfrl.examples.envs.masked_actions.MaskedActions` with 100 actions of which
80 are invalid at each step (drawn anew every step), 20-step episodes: an allowed action
pays its value in [0, 1] (part of the observation), an invalid one pays -1 and ends the
episode. Optimum about 19.0 an episode (the largest allowed value each step), chance among
allowed actions 10.0.

Both sides see the same thing: the 100 values as the network's input and the mask
applied to the logits. tfrl reads the Dict observation's `action_mask` entry itself
(`tfrl.models.action_mask`: masked logits, the rest of the Dict to the model); the
MaskablePPO side gets the values as a Box observation and the mask through sb3-contrib's
`ActionMasker`.

Settings on both sides: 4 envs x 64 steps (batch 256), minibatch 64, 10 epochs, lr 1e-3,
gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, value coefficient 0.5, grad
clip 0.5, separate 64x64 tanh policy and value networks (orthogonal, gain sqrt(2)),
advantages normalized per minibatch, Adam epsilon 1e-5 (SB3's defaults, set on tfrl's
side); one TF intra/inter-op thread and one torch thread. Reported per run: wall seconds for the budget (after the algorithm is
built), env steps/s, the mean return of the last 100 training episodes at the end, the
mean greedy return of 20 evaluation episodes on fixed env seeds (the same seeds on both
sides) with the number of invalid actions taken in them, and peak RSS. Every run is its
own subprocess; runs alternate between the frameworks. Skips the MaskablePPO runs when
sb3-contrib (and torch) are not installed: `pip install -e '.[bench]'`.
"""

import time

import numpy as np

from bench_ppo_cartpole import (_fmt, _rss_mb, bench_parser, curves_to, frameworks_to_compare,
                                hide_tensorflow, launch, print_result, run_interleaved,
                                summarize)
from curves import Curve

NUM_ACTIONS, NUM_VALID, EPISODE_LEN = 100, 20, 20
ENV_ID = "tfrl.examples.envs:MaskedActions-v0"
EVAL_EPISODES = 20
EVAL_SEED = 10_000  # evaluation episode k resets with seed EVAL_SEED + k on both sides
NUM_ENVS, N_STEPS, MINIBATCH, EPOCHS = 4, 64, 64, 10
LR, GAMMA, LAMBDA, CLIP, VF_COEF, GRAD_CLIP = 1e-3, 0.99, 0.95, 0.2, 0.5, 0.5
HIDDEN = [64, 64]


def _make_env():
    from tfrl.examples.envs.masked_actions import MaskedActions

    return MaskedActions(NUM_ACTIONS, NUM_VALID, EPISODE_LEN)


def _evaluate(act) -> dict:
    """`EVAL_EPISODES` greedy episodes; `act(obs_dict) -> action`."""
    env = _make_env()
    returns, invalid = [], 0
    for k in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + k)
        total, done = 0.0, False
        while not done:
            action = int(act(obs))
            invalid += int(not obs["action_mask"][action])
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        returns.append(total)
    return {"eval_return": float(np.mean(returns)), "eval_invalid": invalid}


def run_tfrl(seed: int, steps: int, t0: float) -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import tfrl.examples.envs  # noqa: F401  (registers MaskedActions-v0)
    from tfrl.algorithms.ppo import PPO

    algo = PPO(config={
        "env": ENV_ID, "env_config": {"num_actions": NUM_ACTIONS, "num_valid": NUM_VALID,
                                      "episode_len": EPISODE_LEN},
        "num_workers": 0, "num_envs_per_worker": NUM_ENVS, "rollout_fragment_length": N_STEPS,
        "train_batch_size": NUM_ENVS * N_STEPS, "sgd_minibatch_size": MINIBATCH,
        "num_sgd_iter": EPOCHS, "lr": LR, "gamma": GAMMA, "lambda": LAMBDA,
        "clip_param": CLIP, "entropy_coeff": 0.0, "vf_loss_coeff": VF_COEF,
        "grad_clip": GRAD_CLIP, "kl_coeff": 0.0,
        "vf_clip_param": 1e6,  # SB3 clips no value loss (clip_range_vf=None)
        # SB3's per-minibatch advantage normalization, Adam epsilon and orthogonal
        # hidden layers (gain sqrt(2)); its logits' gain 0.01 is tfrl's default scale.
        "normalize_advantages": "minibatch", "optimizer": {"epsilon": 1e-5},
        "model": {"fcnet_hiddens": HIDDEN, "fcnet_activation": "tanh",
                  "vf_share_layers": False, "fcnet_weights_initializer": "orthogonal",
                  "fcnet_weights_initializer_config": {"gain": 2 ** 0.5}},
        "metrics_smoothing_episodes": 100, "seed": seed})
    curve = Curve("PPO_masked", "MaskedActions-v0", "tfrl", seed, steps, smoothing=100)
    start = time.time()
    result = {"timesteps_total": 0}
    while result["timesteps_total"] < steps:
        result = algo.train()
        curve.add(result["timesteps_total"], result["episode_reward_mean"], time.time() - start)
    wall = time.time() - start
    curve.write()
    out = {"steps": result["timesteps_total"], "wall_s": wall,
           "steps_per_s": result["timesteps_total"] / wall,
           "final_reward": result["episode_reward_mean"]}
    out.update(_evaluate(lambda obs: algo.compute_single_action(obs, explore=False)))
    algo.stop()
    out["peak_rss_mb"] = _rss_mb()
    return out


def run_sb3(seed: int, steps: int, t0: float) -> dict:
    hide_tensorflow()
    import gymnasium as gym
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)

    class Values(gym.ObservationWrapper):
        """The Dict's values as a Box observation; the mask goes through ActionMasker."""

        def __init__(self, env):
            super().__init__(env)
            self.observation_space = env.observation_space["observation"]

        def observation(self, observation):
            return observation["observation"]

    def make():
        return ActionMasker(Values(_make_env()),
                            lambda env: env.unwrapped._obs["action_mask"].astype(bool))

    class Watch(BaseCallback):
        def _on_rollout_end(self):
            buf = self.model.ep_info_buffer
            if buf:
                curve.add(self.num_timesteps, float(np.mean([e["r"] for e in buf])),
                          time.time() - start)

        def _on_step(self):
            return True

    env = make_vec_env(make, n_envs=NUM_ENVS, seed=seed)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=N_STEPS, batch_size=MINIBATCH, n_epochs=EPOCHS,
        learning_rate=LR, gamma=GAMMA, gae_lambda=LAMBDA, clip_range=CLIP, ent_coef=0.0,
        vf_coef=VF_COEF, max_grad_norm=GRAD_CLIP,
        policy_kwargs={"net_arch": {"pi": HIDDEN, "vf": HIDDEN},
                       "activation_fn": torch.nn.Tanh},
        seed=seed, device="cpu", verbose=0)
    curve = Curve("PPO_masked", "MaskedActions-v0", "sb3", seed, steps, smoothing=100)
    start = time.time()
    model.learn(total_timesteps=steps, callback=Watch())
    wall = time.time() - start
    curve.write()
    rewards = [e["r"] for e in model.ep_info_buffer]
    out = {"steps": model.num_timesteps, "wall_s": wall,
           "steps_per_s": model.num_timesteps / wall,
           "final_reward": float(np.mean(rewards)) if rewards else None}
    out.update(_evaluate(lambda obs: model.predict(
        obs["observation"], action_masks=obs["action_mask"].astype(bool),
        deterministic=True)[0]))
    out["peak_rss_mb"] = _rss_mb()
    return out


def main() -> int:
    parser = bench_parser(__doc__.splitlines()[0], steps=50_000)
    args = parser.parse_args()
    if args.child:
        run = run_tfrl if args.child == "tfrl" else run_sb3
        return print_result(run(args.seed, args.steps, args.t0 or time.time()))
    curves_to(args.curves)
    frameworks = frameworks_to_compare("sb3_contrib", "sb3-contrib (MaskablePPO)")
    print(f"{'run':10s} {'wall s':>8s} {'steps/s':>8s} {'final R':>8s} {'eval R':>7s} "
          f"{'invalid':>7s} {'RSS MB':>7s}")
    rows = run_interleaved(
        frameworks, args.seeds, lambda fw, seed: launch(fw, seed, args.steps, __file__),
        lambda r: (f"{r['wall_s']:8.1f} {r['steps_per_s']:8.0f} "
                   f"{_fmt(r['final_reward'], '8.2f')} {r['eval_return']:7.2f} "
                   f"{r['eval_invalid']:7d} {r['peak_rss_mb']:7.0f}"))
    summarize(rows, ["wall_s", "steps_per_s", "final_reward", "eval_return", "peak_rss_mb"])
    invalid = sum(r["eval_invalid"] for runs in rows.values() for r in runs)
    print(f"invalid actions in every greedy evaluation: {invalid}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
