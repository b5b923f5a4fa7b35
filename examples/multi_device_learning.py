"""Multi-device learning: PPO with `num_gpus=2` on a MirroredStrategy.

With `num_gpus > 1` a policy builds its model and optimizer under a
`tf.distribute.MirroredStrategy` over that many GPUs, and every minibatch is split
across the replicas inside one compiled update. RLlib's debugging switch
`_fake_gpus=True` runs the same code on *logical CPU devices*, so this example works
on any machine: it splits the one physical CPU into two logical devices (this must
happen before TensorFlow runs its first op), trains PPO with `num_gpus=2`, and checks
that one update on two replicas equals the same update on a single device.

On a machine with two GPUs, drop `_fake_gpus` and the logical-device setup.

    python examples/multi_device_learning.py            # 10 iterations
    python examples/multi_device_learning.py --smoke    # 1 tiny one (or TFRL_EXAMPLE_SMOKE=1)
"""

import numpy as np

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

import tensorflow as tf  # noqa: E402

NUM_DEVICES = 2
# Two logical CPU devices: first thing, before any TensorFlow op runs.
_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration()] * NUM_DEVICES)

from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402


def max_weight_difference(a, b) -> float:
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main() -> None:
    args = script_parser(__doc__, "1 iteration").parse_args()
    iterations = 1 if args.smoke else 10

    config = (PPOConfig()
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=0, num_envs_per_worker=4,
                        rollout_fragment_length=32 if args.smoke else 64)
              .training(train_batch_size=128 if args.smoke else 256,
                        sgd_minibatch_size=64,  # 32 rows per replica
                        num_sgd_iter=2 if args.smoke else 10, lr=1e-3, kl_coeff=0.0,
                        model={"fcnet_hiddens": [32, 32]})
              .resources(num_gpus=NUM_DEVICES, _fake_gpus=True)
              .debugging(seed=0))
    algo = config.build()
    policy = algo.get_policy()
    strategy = policy.strategy
    print(f"logical CPU devices: {[d.name for d in tf.config.list_logical_devices('CPU')]}")
    print(f"policy strategy: {type(strategy).__name__} with "
          f"{strategy.num_replicas_in_sync} replicas on {policy.devices}")

    # One update on two replicas vs. the same update on one device (same weights, same
    # batch, one epoch of one full-batch minibatch): the results agree up to rounding.
    batch = algo.workers.local_worker().sample()
    single = PPOTFPolicy(policy.observation_space, policy.action_space,
                         {**algo.config, "num_gpus": 0, "num_sgd_iter": 1,
                          "sgd_minibatch_size": batch.count})
    mirrored = PPOTFPolicy(policy.observation_space, policy.action_space,
                           {**algo.config, "num_sgd_iter": 1,
                            "sgd_minibatch_size": batch.count})
    single.set_weights(policy.get_weights())
    mirrored.set_weights(policy.get_weights())
    single.learn_on_batch(batch.copy())
    mirrored.learn_on_batch(batch.copy())
    diff = max_weight_difference(single.get_weights(), mirrored.get_weights())
    print(f"one update, 1 device vs {NUM_DEVICES} replicas: max weight difference {diff:.2e}")

    try:
        result = train_until(algo, {"training_iteration": iterations}, extra={
            "total_loss": ("info/learner/default_policy/learner_stats/total_loss", "8.3f")})
        print(f"done: {result['training_iteration']} iterations on "
              f"{strategy.num_replicas_in_sync} replicas, "
              f"single-vs-mirrored max weight difference {diff:.2e}")
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
