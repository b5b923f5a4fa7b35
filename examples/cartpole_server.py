"""PPO learns CartPole from an external simulator over HTTP: the policy server.

RLlib's `examples/serving/cartpole_server.py` flow, with tfrl. The training process has
no env: its algorithm reads experiences from a `PolicyServerInput` (config
`offline_data(input_=lambda ioctx: PolicyServerInput(ioctx, address, port))`, with the
env's spaces given in `.environment(observation_space=..., action_space=...)`).
Simulators connect with `PolicyClient` (see examples/cartpole_client.py) and play
CartPole; the server answers their `get_action` requests with the policy being trained
(remote inference) or sends them the weights (local inference), and `train()` learns
from the episodes they report.

    python examples/cartpole_server.py --port 9900          # in one shell
    python examples/cartpole_client.py --port 9900           # in another (or several)
    python examples/cartpole_client.py --port 9900 --inference-mode remote

    python examples/cartpole_server.py --port 9900 --num-workers 2   # serves 9900 and 9901
    python examples/cartpole_client.py --port 9901                   # (and one on 9900)

One line per iteration: `iter N  steps T  reward R  episodes E  loss L` (R is the mean
return of the last 100 client episodes). Stops at `--stop-reward` (mean return),
`--stop-timesteps` or `--stop-iters`, whichever comes first, then exits 0. With
`--checkpoint-dir`, it resumes from the newest checkpoint there and saves one at the end.
"""

import argparse
import glob
import os
import threading
import time

import gymnasium as gym

from tfrl.utils.progress import quiet_tensorflow

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.env.policy_server_input import PolicyServerInput  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402

_PRINT_LOCK = threading.Lock()  # rollout worker threads start their servers concurrently


def make_config(address: str, port: int, seed: int = 0, num_workers: int = 0) -> PPOConfig:
    """PPO for CartPole whose experiences come from a policy server at address:port.

    With `num_workers` > 0, each rollout worker `i` (a thread here) serves at
    `port + i - 1` and the local worker, which only learns, has no input.
    """

    def policy_server(ioctx):
        if ioctx.worker_index == 0 and num_workers > 0:
            return None  # the learner: its remote workers receive the experiences
        worker_port = port + max(ioctx.worker_index - 1, 0) if port else 0
        server = PolicyServerInput(ioctx, address, worker_port, idle_timeout=1.0)
        with _PRINT_LOCK:  # port 0: the OS picked a free port; clients need to know it.
            print(f"policy server listening on {address}:{server.server_port}", flush=True)
        return server

    env = gym.make("CartPole-v1")  # only for its spaces: the clients run the simulation
    return (PPOConfig()
            .environment(None, observation_space=env.observation_space,
                         action_space=env.action_space)
            .offline_data(input_=policy_server)
            .rollouts(num_rollout_workers=num_workers, remote_backend="thread",
                      rollout_fragment_length=64 // max(num_workers, 1))
            .training(train_batch_size=256, sgd_minibatch_size=128, num_sgd_iter=10,
                      gamma=0.98, lambda_=0.8, clip_param=0.2, vf_clip_param=1e6,
                      vf_loss_coeff=0.5, entropy_coeff=0.0, kl_coeff=0.0, grad_clip=0.5,
                      lr=1e-3, optimizer={"epsilon": 1e-5},
                      model={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                             "fcnet_weights_initializer": "orthogonal",
                             "fcnet_weights_initializer_config": {"gain": 1.41421356}})
            .debugging(seed=seed))


def latest_checkpoint(checkpoint_dir: str) -> str:
    """The newest `checkpoint_<iteration>` directory under `checkpoint_dir`, or ""."""
    found = glob.glob(os.path.join(checkpoint_dir, "checkpoint_*"))
    return max(found, key=os.path.getmtime) if found else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to bind (0.0.0.0 accepts clients on other hosts)")
    parser.add_argument("--port", type=int, default=9900, help="0: any free port (printed)")
    parser.add_argument("--stop-reward", type=float, default=150.0,
                        help="stop when the mean client episode return reaches this")
    parser.add_argument("--stop-timesteps", type=int, default=100_000)
    parser.add_argument("--stop-iters", type=int, default=10_000)
    parser.add_argument("--checkpoint-dir", default="",
                        help="resume from the newest checkpoint here; save one at the end")
    parser.add_argument("--num-workers", type=int, default=0,
                        help="rollout workers (threads), worker i serving at port + i - 1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up notices (hidden by default)")
    args = parser.parse_args()

    algo = make_config(args.address, args.port, args.seed, args.num_workers).build()
    start = time.time()
    try:
        if args.checkpoint_dir and latest_checkpoint(args.checkpoint_dir):
            algo.restore(latest_checkpoint(args.checkpoint_dir))
            print(f"restored {latest_checkpoint(args.checkpoint_dir)}", flush=True)
        result = train_until(
            algo, {"episode_reward_mean": args.stop_reward,
                   "timesteps_total": args.stop_timesteps,
                   "training_iteration": args.stop_iters},
            extra={"episodes": "episodes_total",
                   "loss": ("info/learner/default_policy/learner_stats/total_loss", ".3f")})
        reward, steps = result["episode_reward_mean"], result["timesteps_total"]
        if reward >= args.stop_reward:
            print(f"done: mean return {reward:.2f} >= {args.stop_reward:g} after {steps} "
                  f"timesteps ({time.time() - start:.1f} s)", flush=True)
        else:
            print(f"done: budget spent after {steps} timesteps; mean return {reward:.2f} "
                  f"({time.time() - start:.1f} s)", flush=True)
        if args.checkpoint_dir:
            print(f"saved {algo.save(args.checkpoint_dir)}", flush=True)
    finally:
        algo.stop()  # also stops the policy server and releases its port
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
