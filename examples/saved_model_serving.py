"""Export a trained policy as a TensorFlow SavedModel and serve actions from it.

Trains PPO on CartPole for a moment, writes the policy with
`algo.export_policy_model(export_dir)`, then -- as a serving process would -- loads it
with plain `tf.saved_model.load` (no tfrl, no Keras needed) and plays an episode with
the `deterministic_action` signature. Other signatures: `stochastic_action` (sampled
actions plus `action_logp`), `action_dist_inputs`, `value`; `serving_default` is the
deterministic one, so TF Serving and `saved_model_cli` work out of the box:

    saved_model_cli show --dir <export_dir> --all

Run:
    python examples/saved_model_serving.py                  # 40 iterations (10k steps), then serve
    python examples/saved_model_serving.py --smoke          # 1 tiny one (or TFRL_EXAMPLE_SMOKE=1)
    python examples/saved_model_serving.py --export_dir cartpole_policy  # any directory
"""

import os
import tempfile

import gymnasium as gym
import numpy as np

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

import tensorflow as tf  # noqa: E402

from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402


def train_and_export(export_dir: str, iterations: int, smoke: bool):
    """Trains briefly, exports; returns probe observations and the algorithm's actions."""
    config = (PPOConfig()
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=0, num_envs_per_worker=8,
                        rollout_fragment_length=16 if smoke else 32)
              .training(train_batch_size=128 if smoke else 256,
                        sgd_minibatch_size=128 if smoke else 256,
                        num_sgd_iter=2 if smoke else 20, lr=1e-3, gamma=0.98, lambda_=0.8,
                        kl_coeff=0.0, grad_clip=0.5, vf_loss_coeff=0.5, vf_clip_param=1e6,
                        model={"fcnet_hiddens": [64, 64]})
              .debugging(seed=0))
    algo = config.build()
    try:
        train_until(algo, {"training_iteration": iterations})
        algo.export_policy_model(export_dir)  # policy_id="default_policy"
        # For the comparison below: the trained algorithm's own greedy actions.
        obs = np.random.default_rng(0).uniform(-1, 1, size=(8, 4)).astype(np.float32)
        expected = [algo.compute_single_action(o, explore=False) for o in obs]
    finally:
        algo.stop()
    return obs, np.array(expected)


def serve(export_dir: str, probe_obs: np.ndarray, expected: np.ndarray) -> None:
    """Loads the SavedModel, checks it against `expected`, plays one episode."""
    # ---- What a serving process does: only TensorFlow. ----
    loaded = tf.saved_model.load(export_dir)
    print(f"signatures: {sorted(loaded.signatures.keys())}")
    act = loaded.signatures["deterministic_action"]
    print(f"deterministic_action inputs: {list(act.structured_input_signature[1])}, "
          f"outputs: {sorted(act.structured_outputs)}")

    served = act(obs=tf.constant(probe_obs))["actions"].numpy()
    print(f"served actions equal the algorithm's greedy actions: "
          f"{bool(np.array_equal(served, expected))} ({served.tolist()})")

    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    episode_return, done = 0.0, False
    while not done:
        out = act(obs=tf.constant(obs[None], tf.float32))  # a batch of one observation
        obs, reward, terminated, truncated, _ = env.step(int(out["actions"][0]))
        episode_return += reward
        done = terminated or truncated
    value = loaded.signatures["value"](obs=tf.constant(probe_obs[:1]))["vf_preds"]
    print(f"done: served episode return {episode_return:.1f}, "
          f"value of a probe observation {float(value[0]):.3f}")


def main() -> None:
    parser = script_parser(__doc__, "1 iteration")
    parser.add_argument("--export_dir", default=None,
                        help="where to write the SavedModel (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = args.export_dir or os.path.join(tmp, "cartpole_policy")
        probe_obs, expected = train_and_export(export_dir, 1 if args.smoke else 40, args.smoke)
        print(f"exported SavedModel to {export_dir}: {sorted(os.listdir(export_dir))}")
        serve(export_dir, probe_obs, expected)


if __name__ == "__main__":
    main()
