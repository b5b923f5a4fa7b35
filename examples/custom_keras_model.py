"""Train PPO with your own Keras model (RLlib's `custom_model`).

Shows how to write a `keras.Model` for tfrl, register it with
`ModelCatalog.register_custom_model`, pass constructor options through
`model={"custom_model": ..., "custom_model_config": {...}}`, and get the model back
from the trained policy (`algo.get_policy().model`).

A custom model is built as `Model(obs_space, action_space, num_outputs, model_config,
name, **custom_model_config)` -- RLlib's ModelV2 signature -- and called on a batch of
(preprocessed, float32) observations `[B, obs_dim]`. It returns
`(dist_inputs [B, num_outputs], value [B])`: the action distribution's inputs (logits
for a Discrete action space) and the critic's value estimates.

    python examples/custom_keras_model.py            # until mean return >= 300 (~45k steps)
    python examples/custom_keras_model.py --smoke    # a few seconds (also TFRL_EXAMPLE_SMOKE=1)
"""

import time

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.models.catalog import ModelCatalog  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402


class TwoTowerModel(keras.Model):
    """Separate policy and value towers, each `layers` x Dense(`hidden`, tanh)."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name,
                 hidden=64, layers=2):
        super().__init__(name=name)
        # Policy tower -> logits over the actions.
        self.policy_tower = keras.Sequential(
            [keras.layers.Dense(hidden, activation="tanh") for _ in range(layers)]
            + [keras.layers.Dense(num_outputs, name="logits")])
        # Value tower -> one number per observation.
        self.value_tower = keras.Sequential(
            [keras.layers.Dense(hidden, activation="tanh") for _ in range(layers)]
            + [keras.layers.Dense(1, name="value")])

    def call(self, obs, training=False):
        logits = self.policy_tower(obs, training=training)
        value = tf.squeeze(self.value_tower(obs, training=training), axis=-1)  # [B]
        return logits, value


def main() -> None:
    parser = script_parser(__doc__, "2 iterations")
    parser.add_argument("--target", type=float, default=300.0,
                        help="stop at this mean return (CartPole-v1 is solved at 475)")
    args = parser.parse_args()
    iterations = 2 if args.smoke else 300

    # 1. Register the model class under a name (a class or a built instance both work).
    ModelCatalog.register_custom_model("two_tower", TwoTowerModel)

    # 2. Refer to it from the model config; custom_model_config goes to its constructor.
    config = (PPOConfig()
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=0, num_envs_per_worker=8,
                        rollout_fragment_length=16 if args.smoke else 32)
              .training(train_batch_size=128 if args.smoke else 256,
                        sgd_minibatch_size=128 if args.smoke else 256,
                        num_sgd_iter=2 if args.smoke else 20,
                        lr=1e-3, gamma=0.98, lambda_=0.8, kl_coeff=0.0, grad_clip=0.5,
                        vf_loss_coeff=0.5, vf_clip_param=1e6,
                        model={"custom_model": "two_tower",
                               "custom_model_config": {"hidden": 32}})
              .debugging(seed=0))
    algo = config.build()

    # 3. The policy's model is your Keras model, in a thin wrapper (`base_model`) when it
    #    lacks tfrl's optional attributes (num_outputs, get_initial_state).
    model = algo.get_policy().model
    mine = getattr(model, "base_model", model)
    print(f"policy model: {type(mine).__name__} (in a {type(model).__name__}), "
          f"{sum(int(tf.size(v)) for v in model.trainable_variables)} trainable parameters")

    start = time.time()
    try:
        # Train (one progress line per iteration) until either criterion is met.
        result = train_until(algo, {"training_iteration": iterations,
                                    "episode_reward_mean": args.target})
        action = algo.compute_single_action([0.0, 0.1, 0.02, -0.1], explore=False)
        print(f"done: {result['training_iteration']} iterations, "
              f"{result['timesteps_total']} steps, "
              f"reward {result['episode_reward_mean']:.2f}, "
              f"greedy action for a sample obs: {action}, {time.time() - start:.1f} s")
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
