"""An external simulator trains a policy over HTTP: PolicyServerInput + PolicyClient.

When the environment cannot live inside the training process (a game engine, a
robot, a web service), it drives itself and asks a *policy server* for actions:

- server: a `RolloutWorker` whose input is `PolicyServerInput(ioctx, address, port)`
  (RLlib's `"input": lambda ioctx: PolicyServerInput(ioctx, ...)`). It answers the
  clients' requests with its policy, records their episodes, and hands the
  experiences to `worker.sample()`; the training loop is `sample()` ->
  `learn_on_batch()`, and the client sees the improved policy at once.
- client: `PolicyClient("host:port", inference_mode="remote" | "local")` with the
  episode protocol `start_episode`, `get_action`, `log_returns`, `end_episode`.
  In "local" mode the client computes actions with a copy of the policy (weights
  refreshed every `update_interval` s) and uploads its experiences.

This example shows the worker-level pieces; examples/cartpole_server.py and
examples/cartpole_client.py do the same with an Algorithm (PPO) configured with
`offline_data(input_=...)`, as RLlib's serving examples do.

By default both run here: the server in the main thread, the client (playing CartPole)
in a background thread. Run them as two processes instead:

    python examples/external_env_http.py --role server --port 9900
    python examples/external_env_http.py --role client --port 9900 [--inference_mode local]
    (start the server first; the client exits when the server stops)

    python examples/external_env_http.py             # both, 15 training iterations
    python examples/external_env_http.py --smoke     # both, 2 tiny ones (or TFRL_EXAMPLE_SMOKE=1)
"""

import argparse
import itertools
import os
import threading

import gymnasium as gym

from tfrl.utils.progress import quiet_tensorflow

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: E402
from tfrl.env.policy_client import PolicyClient  # noqa: E402
from tfrl.env.policy_server_input import PolicyServerInput  # noqa: E402
from tfrl.evaluation.rollout_worker import RolloutWorker  # noqa: E402
from tfrl.policy.sample_batch import concat_samples  # noqa: E402

ADDRESS = "127.0.0.1"  # the server binds this; "0.0.0.0" accepts clients on other hosts


def run_client(port: int, inference_mode: str, stop: threading.Event) -> None:
    """The external simulator: plays CartPole episodes, asking the server for actions."""
    env = gym.make("CartPole-v1")
    with PolicyClient(f"{ADDRESS}:{port}", inference_mode=inference_mode,
                      update_interval=1.0) as client:
        for episode in itertools.count():
            if stop.is_set():
                return
            obs, _ = env.reset(seed=episode)
            episode_id = client.start_episode(training_enabled=True)
            while True:
                action = client.get_action(episode_id, obs)
                obs, reward, terminated, truncated, _ = env.step(action)
                client.log_returns(episode_id, reward)
                if terminated or truncated or stop.is_set():
                    client.end_episode(episode_id, obs, truncated=not terminated)
                    break


def run_server(port: int, iterations: int, smoke: bool, on_started=None,
               on_stopping=None) -> None:
    """The training process: a worker whose experiences come from HTTP clients."""
    worker = RolloutWorker(
        env_creator=lambda ctx: None,  # no env here: the clients have it
        # Without an env, the policy's spaces must be given.
        spaces={"default_policy": (gym.spaces.Box(-float("inf"), float("inf"), (4,)),
                                   gym.spaces.Discrete(2))},
        policy_spec=PPOTFPolicy,
        policy_config={"lr": 1e-3, "gamma": 0.98, "lambda": 0.8, "kl_coeff": 0.0,
                       "num_sgd_iter": 2 if smoke else 10, "sgd_minibatch_size": 64,
                       "model": {"fcnet_hiddens": [32, 32]}},
        input_creator=lambda ioctx: PolicyServerInput(ioctx, ADDRESS, port, idle_timeout=1.0),
        seed=0)
    server = worker.input_reader
    print(f"policy server listening on {ADDRESS}:{server.server_port}", flush=True)
    if on_started is not None:
        on_started(server.server_port)
    train_batch_size = 128 if smoke else 1000
    steps = 0
    try:
        for i in range(1, iterations + 1):
            # Each sample() returns what the clients finished since the last call (an
            # empty heartbeat batch when idle): gather a train batch's worth.
            batches, count = [], 0
            while count < train_batch_size:
                batches.append(worker.sample())
                count += batches[-1].count
            batch = concat_samples(batches)
            steps += batch.count
            adv = batch["advantages"]  # postprocessed by the server's policy
            batch["advantages"] = (adv - adv.mean()) / max(1e-4, adv.std())
            stats = worker.learn_on_batch(batch)["default_policy"]["learner_stats"]
            # The clients' finished episodes (RolloutMetrics), as the worker reports them.
            episodes = worker.get_metrics()
            reward = (sum(m.episode_reward for m in episodes) / len(episodes)
                      if episodes else float("nan"))
            print(f"iter {i:3d}  steps {steps:6d}  "
                  f"client episodes {len(episodes):3d}  "
                  f"reward {reward:7.2f}  "
                  f"total_loss {stats['total_loss']:8.3f}", flush=True)
        print(f"done: trained on {steps} steps sent by HTTP clients in {iterations} iterations")
    finally:
        if on_stopping is not None:
            on_stopping()  # let the in-process client finish its episode first
        worker.stop()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["both", "server", "client"], default="both")
    parser.add_argument("--port", type=int, default=0,
                        help="server port (0 with --role both: any free port)")
    parser.add_argument("--inference_mode", choices=["remote", "local"], default="remote")
    parser.add_argument("--smoke", action="store_true",
                        default=bool(os.environ.get("TFRL_EXAMPLE_SMOKE")),
                        help="tiny budget (2 iterations) for CI")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up notices (hidden by default)")
    args = parser.parse_args()
    iterations = 2 if args.smoke else 15

    if args.role == "client":
        try:
            run_client(args.port, args.inference_mode, threading.Event())
        except (ConnectionError, RuntimeError) as e:  # the server stopped (or never ran)
            print(f"client: the policy server at {ADDRESS}:{args.port} is gone ({e}); exiting.")
        return 0
    if args.role == "server":
        run_server(args.port or 9900, iterations, args.smoke)
        return 0

    stop, threads = threading.Event(), []

    def start_client(port):
        thread = threading.Thread(target=run_client, args=(port, args.inference_mode, stop),
                                  name="PolicyClient", daemon=True)
        thread.start()
        threads.append(thread)

    def stop_client():
        stop.set()
        for thread in threads:
            thread.join(10)

    run_server(args.port, iterations, args.smoke, on_started=start_client,
               on_stopping=stop_client)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
