"""An external CartPole simulator that learns through a policy server: the client.

RLlib's `examples/serving/cartpole_client.py` flow, with tfrl. This process owns the
env (gymnasium's CartPole-v1) and drives it itself; a `PolicyClient` connected to
examples/cartpole_server.py supplies the actions and reports what happened:

- `--inference-mode remote`: every `get_action` is an HTTP request; the server
  computes the action with the policy it is training.
- `--inference-mode local` (default): the client fetches the policy (class, spaces,
  config, weights) once, computes actions in-process, refreshes the weights every
  `--update-interval` seconds and uploads its experiences in batches.

    python examples/cartpole_server.py --port 9900
    python examples/cartpole_client.py --port 9900 --inference-mode remote

Prints `episode N  return R  mean(last 20) M` every `--print-every` episodes. Exits 0
when `--stop-reward` (mean of the last 20 returns) or `--episodes` is reached, or when
the server goes away.
"""

import argparse
import collections
import socket
import time

import gymnasium as gym
import numpy as np

from tfrl.env.policy_client import PolicyClient
from tfrl.utils.progress import quiet_tensorflow


def wait_for_server(address: str, port: int, timeout: float) -> bool:
    """Whether a TCP connection to address:port succeeds within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)


def play(client: PolicyClient, env: gym.Env, seed: int, training_enabled: bool,
         off_policy: bool) -> float:
    """Plays one episode through the client; returns its return."""
    obs, _ = env.reset(seed=seed)
    episode_id = client.start_episode(training_enabled=training_enabled)
    total = 0.0
    while True:
        if off_policy:  # the simulator acts itself and tells the server what it did
            action = env.action_space.sample()
            client.log_action(episode_id, obs, action)
        else:
            action = client.get_action(episode_id, obs)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        client.log_returns(episode_id, reward)
        if terminated or truncated:
            client.end_episode(episode_id, obs, truncated=not terminated)
            return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9900)
    parser.add_argument("--inference-mode", choices=["local", "remote"], default="local")
    parser.add_argument("--update-interval", type=float, default=1.0,
                        help="local mode: seconds between weight refreshes")
    parser.add_argument("--stop-reward", type=float, default=float("inf"),
                        help="exit when the mean of the last 20 returns reaches this")
    parser.add_argument("--episodes", type=int, default=0, help="exit after this many (0: no limit)")
    parser.add_argument("--no-train", action="store_true",
                        help="training_enabled=False: the server does not learn from us")
    parser.add_argument("--off-policy", action="store_true",
                        help="act randomly and log the actions (log_action) instead")
    parser.add_argument("--connect-timeout", type=float, default=120.0,
                        help="seconds to wait for the server to come up")
    parser.add_argument("--print-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up notices (hidden by default)")
    args = parser.parse_args()
    if args.inference_mode == "local":  # the local policy copy loads TensorFlow
        quiet_tensorflow(args.verbose)

    if not wait_for_server(args.address, args.port, args.connect_timeout):
        print(f"client: no policy server at {args.address}:{args.port} after "
              f"{args.connect_timeout:g} s; exiting.", flush=True)
        return 1
    env = gym.make("CartPole-v1")
    env.action_space.seed(args.seed)
    returns = collections.deque(maxlen=20)
    episode = 0
    try:
        with PolicyClient(f"{args.address}:{args.port}", inference_mode=args.inference_mode,
                          update_interval=args.update_interval) as client:
            print(f"client: connected to {args.address}:{args.port} "
                  f"(inference_mode={args.inference_mode})", flush=True)
            while not args.episodes or episode < args.episodes:
                returns.append(play(client, env, args.seed + episode, not args.no_train,
                                    args.off_policy))
                episode += 1
                mean = float(np.mean(returns))
                if episode % args.print_every == 0:
                    print(f"episode {episode}  return {returns[-1]:.0f}  "
                          f"mean(last 20) {mean:.1f}", flush=True)
                if len(returns) == returns.maxlen and mean >= args.stop_reward:
                    print(f"client: mean return {mean:.1f} >= {args.stop_reward:g}; done.",
                          flush=True)
                    break
    except (OSError, RuntimeError) as e:  # the server stopped: a normal end for a client
        print(f"client: the policy server is gone after {episode} episodes "
              f"({type(e).__name__}: {str(e)[:200]}); exiting.", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
