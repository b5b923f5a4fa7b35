"""tfrl A2C vs Stable-Baselines3 A2C on CartPole-v1, RL Zoo's settings, 3 seeds each.

    python bench/bench_a2c_cartpole.py                            # 100k steps x 3 seeds x both
    python bench/bench_a2c_cartpole.py --seeds 0 --curves bench/curves
    python bench/bench_a2c_cartpole.py --steps 2000 --seeds 0     # smoke check

Settings: RL Baselines3 Zoo's CartPole-v1 A2C entry (8 envs, no entropy bonus) on SB3's
A2C defaults: 5 steps per env per update (40-step batches), lr 7e-4 (constant), gamma
0.99, GAE lambda 1 (n-step returns bootstrapped from the value), value coefficient 0.5
on the mean squared error, grad clip 0.5 (global norm), advantages not normalized, 64x64
tanh policy and value networks (separate) with orthogonal hidden layers (gain sqrt(2)).
The zoo trains 500k steps; the default budget here is 100k, where both sides have
learned most of the way. In tfrl's keys (`tfrl_config`): `num_envs_per_worker 8`,
`rollout_fragment_length 5`, `train_batch_size 40`, `lambda 1.0`, `vf_loss_coeff 1.0`
(tfrl's value loss is half the squared error, SB3's the whole), `grad_clip 0.5`,
`entropy_coeff 0.0`. What still differs: SB3's A2C optimizer is RMSprop (alpha 0.99,
eps 1e-5), tfrl's A2C has Adam only (eps 1e-5 in torch's form, `optimizer`);
`--sb3-adam` runs SB3 with Adam too (`use_rms_prop=False`, the same eps) to take the
optimizer out of the comparison (its curves are not written: they would replace the
zoo-settings ones).

The harness is bench_ppo_cartpole.py's (each run its own subprocess, runs alternating
between the frameworks; the SB3 child does not import TensorFlow) and the columns are
bench_offpolicy.py's: wall seconds for the budget (after the algorithm is built), CPU
seconds of the process over the same span, env steps/s, the env steps at which the mean
return of the last 100 episodes first reached 475 (tfrl checks after every iteration of
1000 steps, SB3 after every 40-step rollout), that mean at the end (`final R`), the mean
return of 10 greedy episodes after training on the same env seeds for both (`eval R`),
and peak RSS; then the means and the tfrl/SB3 ratios. One TF intra/inter-op thread and
one torch thread (`--threads N`: N of each).
"""

import time

from bench_ppo_cartpole import (SOLVED, _fmt, _rss_mb, bench_parser, curves_to,
                                frameworks_to_compare, greedy_return, hide_tensorflow,
                                launch, print_result, run_interleaved, summarize)
from curves import Curve, train_until

ENV = "CartPole-v1"
STEPS = 100_000
SMOOTHING = 100  # episodes in the mean return (SB3's episode buffer)
N_ENVS, N_STEPS = 8, 5  # the zoo's n_envs, SB3's n_steps
LR = 7e-4


def tfrl_config(seed: int) -> dict:
    """tfrl's A2C config dict: the zoo's CartPole settings in tfrl's keys."""
    return {
        "env": ENV, "seed": seed, "num_workers": 0, "num_envs_per_worker": N_ENVS,
        "rollout_fragment_length": N_STEPS, "train_batch_size": N_ENVS * N_STEPS,
        "lr": LR, "gamma": 0.99, "lambda": 1.0, "use_gae": True,
        # SB3: vf_coef 0.5 * mean((R - V)^2); tfrl: vf_loss_coeff * 0.5 * mean((V - R)^2).
        "vf_loss_coeff": 1.0, "entropy_coeff": 0.0, "grad_clip": 0.5,
        # Iterations of 1000 steps (25 updates) for the result dicts; no time minimum.
        "min_iter_time_s": 0, "timesteps_per_iteration": 1000,
        "metrics_smoothing_episodes": SMOOTHING,
        "optimizer": {"epsilon": 1e-5, "epsilon_form": "torch"},
        "model": {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                  "vf_share_layers": False,
                  "fcnet_weights_initializer": "orthogonal",
                  "fcnet_weights_initializer_config": {"gain": 2 ** 0.5}},
    }


def _result(steps, wall, cpu, solved_steps, final_reward, eval_reward) -> dict:
    return {"steps": steps, "wall_s": wall, "cpu_s": cpu, "env_steps_per_s": steps / wall,
            "solved_steps": solved_steps, "final_reward": final_reward,
            "eval_reward": eval_reward, "peak_rss_mb": _rss_mb()}


def run_tfrl(seed: int, steps: int, threads: int = 1) -> dict:
    from tfrl.utils.progress import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tfrl.algorithms.registry import get_algorithm_class

    _, config_class = get_algorithm_class("A2C", return_config=True)
    algo = config_class.from_dict(tfrl_config(seed)).build()
    curve = Curve("A2C", ENV, "tfrl", seed, steps, smoothing=SMOOTHING)
    result, solved, wall, cpu = train_until(algo, curve, steps, SOLVED)
    final = result["episode_reward_mean"]
    out = _result(result["timesteps_total"], wall, cpu, solved,
                  None if final != final else final,  # NaN: no episode ended
                  greedy_return(lambda obs: algo.compute_single_action(obs, explore=False),
                                ENV, seed))
    algo.stop()
    return out


def run_sb3(seed: int, steps: int, threads: int = 1, adam: bool = False) -> dict:
    hide_tensorflow()
    import numpy as np
    import torch
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(threads)

    class Watch(BaseCallback):
        solved = None

        def _on_rollout_end(self):
            buf = self.model.ep_info_buffer  # the last 100 episodes
            if buf:
                mean = float(np.mean([e["r"] for e in buf]))
                curve.add(self.num_timesteps, mean, time.time() - start)
                if self.solved is None and mean >= SOLVED:
                    self.solved = self.num_timesteps

        def _on_step(self):
            return True

    env = make_vec_env(ENV, n_envs=N_ENVS, seed=seed)
    # The zoo's entry: n_envs 8, ent_coef 0.0; everything else SB3's A2C defaults.
    model = A2C("MlpPolicy", env, ent_coef=0.0, seed=seed, device="cpu", verbose=0,
                stats_window_size=SMOOTHING, **({"use_rms_prop": False} if adam else {}))
    if (model.n_steps, model.learning_rate) != (N_STEPS, LR):
        raise RuntimeError(f"SB3's A2C defaults moved: n_steps {model.n_steps}, learning_rate "
                           f"{model.learning_rate}; expected {N_STEPS}, {LR} (update this bench)")
    watch = Watch()
    curve = Curve("A2C", ENV, "sb3", seed, steps, smoothing=SMOOTHING)
    start, cpu = time.time(), time.process_time()
    model.learn(total_timesteps=steps, callback=watch)
    wall, cpu = time.time() - start, time.process_time() - cpu
    if not adam:  # the Adam variant's curves would replace the zoo-settings ones
        curve.write()
    rewards = [e["r"] for e in model.ep_info_buffer]
    return _result(model.num_timesteps, wall, cpu, watch.solved,
                   float(np.mean(rewards)) if rewards else None,
                   greedy_return(lambda obs: model.predict(obs, deterministic=True)[0],
                                 ENV, seed))


def main() -> int:
    parser = bench_parser(__doc__.splitlines()[0], steps=STEPS)
    parser.add_argument("--threads", type=int, default=1,
                        help="TF intra/inter-op threads = torch threads (default 1)")
    parser.add_argument("--sb3-adam", action="store_true",
                        help="SB3's A2C with Adam (eps 1e-5) instead of the zoo's RMSprop, "
                             "as tfrl's A2C; no curves are written for it")
    args = parser.parse_args()
    if args.child:
        return print_result(run_tfrl(args.seed, args.steps, args.threads)
                            if args.child == "tfrl"
                            else run_sb3(args.seed, args.steps, args.threads, args.sb3_adam))

    curves_to(args.curves)
    frameworks = frameworks_to_compare()
    extra = ("--threads", str(args.threads)) + (("--sb3-adam",) if args.sb3_adam else ())
    print(f"== A2C on {ENV}, {args.steps} steps, target {SOLVED:g} (mean of the last "
          f"{SMOOTHING} episodes)")
    print(f"{args.threads} thread(s) per framework (TF intra/inter-op, torch); "
          f"{N_ENVS} envs x {N_STEPS} steps per update; optimizer: tfrl Adam, SB3 "
          f"{'Adam' if args.sb3_adam else 'RMSprop (the zoo)'}")
    print(f"{'run':10s} {'wall s':>8s} {'cpu s':>8s} {'env st/s':>9s} {'steps@tgt':>9s} "
          f"{'final R':>8s} {'eval R':>8s} {'RSS MB':>7s}")
    rows = run_interleaved(
        frameworks, args.seeds,
        lambda fw, seed: launch(fw, seed, args.steps, script=__file__, extra_args=extra),
        lambda r: (f"{r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['env_steps_per_s']:9.0f} "
                   f"{_fmt(r['solved_steps'], '9d')} {_fmt(r['final_reward'], '8.1f')} "
                   f"{_fmt(r['eval_reward'], '8.1f')} {r['peak_rss_mb']:7.0f}"))
    summarize(rows, ["wall_s", "cpu_s", "env_steps_per_s", "solved_steps", "final_reward",
                     "eval_reward", "peak_rss_mb"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
