"""Sampling on a Ray cluster: PPO with two remote rollout workers (Ray actors).

`num_rollout_workers=2` starts two `RolloutWorker`s as Ray actors; each samples in
its own process, the local worker learns, and the new weights are broadcast after
every update. `num_cpus_per_worker=0.5` lets both actors (plus the driver) fit on a
2-CPU laptop: an actor asking for a whole CPU that is not free waits forever.

Ray is optional (`pip install 'tfrl[ray]'`); without it this example says so and
exits. To use an existing cluster, call `ray.init(address="auto")` before building
the algorithm: tfrl uses a Ray runtime that is already initialized as is.

    python examples/ray_workers.py            # 10 iterations
    python examples/ray_workers.py --smoke    # 1 tiny one (or TFRL_EXAMPLE_SMOKE=1)
"""

import os
import time

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.utils.progress_callbacks import train_until  # noqa: E402


def main() -> None:
    parser = script_parser(__doc__, "1 iteration")
    parser.add_argument("--num_cpus", type=int, default=2, help="CPUs of the local Ray runtime")
    args = parser.parse_args()
    iterations = 1 if args.smoke else 10

    try:
        import ray
    except ImportError:
        print("SKIPPED: Ray is not installed; install it with pip install 'tfrl[ray]' "
              "to run rollout workers as Ray actors.")
        return

    from tfrl.algorithms.ppo import PPOConfig

    # A local runtime (or your cluster: ray.init(address="auto")). tfrl would start one
    # itself on first use; starting it here makes the resources explicit.
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    config = (PPOConfig()
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=2, num_envs_per_worker=2,
                        rollout_fragment_length=32 if args.smoke else 128)
              .resources(num_cpus_per_worker=0.5)  # fractional CPUs: both actors fit
              .training(train_batch_size=128 if args.smoke else 512, sgd_minibatch_size=64,
                        num_sgd_iter=2 if args.smoke else 10, lr=1e-3, kl_coeff=0.0,
                        model={"fcnet_hiddens": [32, 32]})
              .debugging(seed=0))
    start = time.time()
    algo = config.build()
    try:
        # foreach_worker runs a function on every worker: the local one first.
        pids = algo.workers.foreach_worker(lambda worker: os.getpid())
        print(f"workers up in {time.time() - start:.1f} s: driver pid {pids[0]}, "
              f"remote worker pids {pids[1:]}", flush=True)
        result = train_until(algo, {"training_iteration": iterations},
                             extra={"healthy workers": "num_healthy_workers"})
        # The remote workers act with the weights the local worker just learned.
        weights = algo.workers.foreach_worker(
            lambda worker: worker.get_policy().get_weights()[0].sum())
        in_sync = all(abs(w - weights[0]) < 1e-6 for w in weights)
        print(f"done: {result['training_iteration']} iterations with "
              f"{len(pids) - 1} Ray workers, weights in sync: {in_sync}")
    finally:
        algo.stop()
        ray.shutdown()


if __name__ == "__main__":
    main()
