"""tfrl PPO + LSTM vs SB3-contrib RecurrentPPO on stateless CartPole, same settings, 3 seeds.

    python bench/bench_recurrent.py                       # 100k steps x 3 seeds x both
    python bench/bench_recurrent.py --steps 2000 --seeds 0

Stateless CartPole: CartPole-v1 observing only the cart position and the pole angle
(observation indices 0 and 2; the velocities are hidden, so the agent must remember).
The env is `tfrl.examples.envs.stateless_cartpole.StatelessCartPole` when that module
exists, else the same definition here (`_StatelessCartPole`); each run reports which.

Settings (issue 18), for both frameworks: 8 envs, 32-step fragments (batch 256), minibatch
128 timesteps, 10 epochs, constant lr 1e-3, gamma 0.98, GAE lambda 0.9, entropy bonus
0.01, value coefficient 0.5, clip 0.2, no KL penalty, grad clip 0.5, Adam epsilon 1e-5,
a 64-cell LSTM on the observations followed by one 64-unit tanh dense layer per head
(SB3-contrib's `MlpLstmPolicy` with `net_arch` [64]; in tfrl `fcnet_hiddens: []`,
`post_fcnet_hiddens: [64]`), orthogonal gain-sqrt(2) dense layers (SB3's `ortho_init`),
separate actor and critic LSTMs (both frameworks' default), sequences of up to a whole
fragment (`max_seq_len` 32; SB3-contrib cuts them only at episode starts and its
minibatch edges), both LSTMs at PyTorch's `nn.LSTM` init (every weight and bias uniform
within +-1/sqrt(64); tfrl's `lstm_weights_initializer` / `lstm_bias_initializer`).
Known differences that stay: the minibatches (tfrl: whole sequences, about 128 real steps
each, shuffled; SB3-contrib: two runs of 128 consecutive steps from a random split point,
sequences cut at the edges), advantages standardized per batch (SB3: per minibatch), and
Adam's epsilon (Keras adds it to sqrt(v) before the bias correction, PyTorch after). One
intra/inter-op thread for TF and one torch thread.

Every run is its own subprocess (so peak RSS is the run's own), runs alternate between the
frameworks, and each trains the whole budget. Reported per run: wall seconds, env steps/s,
env steps and seconds (from process start) until the mean return of the last 100 episodes
first reaches 150, the mean return at the end of the budget (100k by default), and peak
RSS; then the means and the tfrl/SB3 ratios. Targets (issue 18): steps to 150 <= 1.0x
RecurrentPPO's, wall <= 0.5x. The SB3 child does not import TensorFlow
(`bench_ppo_cartpole.hide_tensorflow`), and RecurrentPPO runs are skipped with a message
when sb3-contrib is not installed (`pip install -e '.[bench]'`).
"""

import argparse
import importlib.util
import json
import time

import gymnasium as gym
import numpy as np

from bench_ppo_cartpole import _fmt, _rss_mb, hide_tensorflow, launch, summarize

TARGET = 150.0
NUM_ENVS = 8


class _StatelessCartPole(gym.ObservationWrapper):
    """CartPole-v1 observing `[cart position, pole angle]` (indices 0 and 2)."""

    def __init__(self, env_config=None):
        super().__init__(gym.make("CartPole-v1"))
        high = self.env.observation_space.high[[0, 2]]
        self.observation_space = gym.spaces.Box(-high, high, (2,), np.float32)

    def observation(self, observation):
        return observation[[0, 2]]


def stateless_cartpole():
    """(the env class, where it comes from): tfrl's example env if present, else ours."""
    try:
        from tfrl.examples.envs.stateless_cartpole import StatelessCartPole
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("tfrl.examples.envs"):
            raise  # tfrl itself, or a dependency, is missing: say so
        return _StatelessCartPole, "bench/bench_recurrent.py"
    return StatelessCartPole, "tfrl.examples.envs.stateless_cartpole"


#: tfrl's config for the issue's settings (see the module docstring).
TFRL_CONFIG = {
    "num_workers": 0, "num_envs_per_worker": NUM_ENVS, "rollout_fragment_length": 32,
    "train_batch_size": 256, "sgd_minibatch_size": 128, "num_sgd_iter": 10, "lr": 1e-3,
    "gamma": 0.98, "lambda": 0.9, "entropy_coeff": 0.01, "vf_loss_coeff": 0.5,
    "clip_param": 0.2, "vf_clip_param": 1e6, "kl_coeff": 0.0, "grad_clip": 0.5,
    "optimizer": {"epsilon": 1e-5},
    # XLA-compiled loss and gradients (tfrl/tuned/ppo_lstm_stateless_cartpole.yaml).
    "jit_compile": True,
    "model": {"fcnet_hiddens": [], "post_fcnet_hiddens": [64], "post_fcnet_activation": "tanh",
              "fcnet_weights_initializer": "orthogonal",
              "fcnet_weights_initializer_config": {"gain": 2 ** 0.5},
              "use_lstm": True, "lstm_cell_size": 64, "max_seq_len": 32,
              # PyTorch's nn.LSTM init (RecurrentPPO keeps it): uniform +-1/sqrt(64).
              "lstm_weights_initializer": "random_uniform",
              "lstm_weights_initializer_config": {"minval": -0.125, "maxval": 0.125},
              "lstm_bias_initializer": "random_uniform",
              "lstm_bias_initializer_config": {"minval": -0.125, "maxval": 0.125}},
}


def _result(steps, wall, reached_steps, reached_s, final_reward, env_source):
    return {"steps": steps, "wall_s": wall, "steps_per_s": steps / wall,
            "solved_steps": reached_steps, "solved_s": reached_s,
            "final_reward": final_reward, "peak_rss_mb": _rss_mb(), "env": env_source}


def run_tfrl(seed: int, steps: int, t0: float) -> dict:
    import tfrl  # noqa: F401  (before TensorFlow, as a user's script would)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from tfrl.algorithms.ppo import PPOConfig

    env_class, env_source = stateless_cartpole()
    algo = PPOConfig.from_dict({**TFRL_CONFIG, "env": lambda ctx: env_class(),
                                "seed": seed}).build()
    start = time.time()
    reached_steps = reached_s = None
    result = {"timesteps_total": 0, "episode_reward_mean": float("nan")}
    while result["timesteps_total"] < steps:
        result = algo.train()
        if reached_steps is None and result["episode_reward_mean"] >= TARGET:
            reached_steps, reached_s = result["timesteps_total"], time.time() - t0
    wall = time.time() - start
    algo.stop()
    return _result(result["timesteps_total"], wall, reached_steps, reached_s,
                   result["episode_reward_mean"], env_source)


def run_sb3(seed: int, steps: int, t0: float) -> dict:
    hide_tensorflow()
    import torch
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    env_class, env_source = stateless_cartpole()

    class Watch(BaseCallback):
        reached_steps = reached_s = None

        def _on_rollout_end(self):
            buf = self.model.ep_info_buffer  # the last 100 episodes
            if (self.reached_steps is None and buf
                    and np.mean([e["r"] for e in buf]) >= TARGET):
                self.reached_steps, self.reached_s = self.num_timesteps, time.time() - t0

        def _on_step(self):
            return True

    env = make_vec_env(env_class, n_envs=NUM_ENVS, seed=seed)
    model = RecurrentPPO(
        "MlpLstmPolicy", env, n_steps=32, batch_size=128, n_epochs=10, learning_rate=1e-3,
        gamma=0.98, gae_lambda=0.9, clip_range=0.2, ent_coef=0.01, vf_coef=0.5,
        max_grad_norm=0.5, seed=seed, device="cpu", verbose=0,
        policy_kwargs={"lstm_hidden_size": 64, "n_lstm_layers": 1,
                       "net_arch": {"pi": [64], "vf": [64]}})
    watch = Watch()
    start = time.time()
    model.learn(total_timesteps=steps, callback=watch)
    wall = time.time() - start
    rewards = [e["r"] for e in model.ep_info_buffer]
    return _result(model.num_timesteps, wall, watch.reached_steps, watch.reached_s,
                   float(np.mean(rewards)) if rewards else None, env_source)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--child", choices=["tfrl", "sb3"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, default=None)
    args = parser.parse_args()
    if args.child:
        run = run_tfrl if args.child == "tfrl" else run_sb3
        out = run(args.seed, args.steps, args.t0 or time.time())
        print("RESULT " + json.dumps(out), flush=True)
        return 0

    frameworks = ["tfrl"]
    if importlib.util.find_spec("sb3_contrib") and importlib.util.find_spec("torch"):
        frameworks.append("sb3")
    else:
        print("sb3-contrib is not installed: skipping the RecurrentPPO runs "
              "(pip install -e '.[bench]').")
    rows = {fw: [] for fw in frameworks}
    print(f"{'run':10s} {'wall s':>8s} {'steps/s':>8s} {'steps@150':>10s} {'s@150':>7s} "
          f"{'R at end':>8s} {'RSS MB':>7s}  env")
    # Interleaved (tfrl s0, sb3 s0, tfrl s1, ...): a change in the machine's load hits
    # both frameworks alike.
    for seed in args.seeds:
        for fw in frameworks:
            r = launch(fw, seed, args.steps, script=__file__)
            rows[fw].append(r)
            print(f"{fw + ' s' + str(seed):10s} {r['wall_s']:8.1f} {r['steps_per_s']:8.0f} "
                  f"{_fmt(r['solved_steps'], '10d')} {_fmt(r['solved_s'], '7.1f')} "
                  f"{_fmt(r['final_reward'], '8.1f')} {r['peak_rss_mb']:7.0f}  {r['env']}",
                  flush=True)
    # solved_* = the first time the mean return reached 150.
    summarize(rows, ["wall_s", "steps_per_s", "solved_steps", "solved_s", "final_reward",
                     "peak_rss_mb"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
