"""Custom callbacks and metrics: per-episode data that shows up in the result dict.

A `DefaultCallbacks` subclass (RLlib's `ray.rllib.algorithms.callbacks`) hooks into
sampling and training:

- `on_episode_start` / `on_episode_step` / `on_episode_end` collect the pole angle of
  every step in `episode.user_data`, then record `episode.custom_metrics["pole_angle"]`
  (the mean absolute angle) and `episode.hist_data["pole_angles"]`;
- `on_sample_end` counts the sampled batches;
- `on_learn_on_batch` adds a statistic of the train batch to the learner info;
- `on_train_result` adds a top-level key to each result.

Custom metrics arrive summarized as `result["custom_metrics"]["pole_angle_mean"]`
(also `_min` and `_max`), histograms as `result["hist_stats"]["pole_angles"]`.

    python examples/custom_callbacks_metrics.py            # 10 iterations
    python examples/custom_callbacks_metrics.py --smoke    # 2 tiny ones (or TFRL_EXAMPLE_SMOKE=1)
"""

import argparse
import os

import numpy as np

from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.ppo import PPOConfig


class PoleAngleCallbacks(DefaultCallbacks):
    """Every hook is keyword-only and takes **kwargs (new arguments never break it)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.num_samples = 0  # one callbacks object per rollout worker

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index=None,
                         **kwargs):
        episode.user_data["pole_angles"] = []

    def on_episode_step(self, *, worker, base_env, policies=None, episode, env_index=None,
                        **kwargs):
        # CartPole observation: [cart position, cart velocity, pole angle, angular velocity].
        angle = float(episode.last_raw_obs_for()[2])
        episode.user_data["pole_angles"].append(abs(angle))

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index=None,
                       **kwargs):
        angles = episode.user_data["pole_angles"]
        episode.custom_metrics["pole_angle"] = float(np.mean(angles)) if angles else 0.0
        episode.hist_data["pole_angles"] = angles

    def on_sample_end(self, *, worker, samples, **kwargs):
        self.num_samples += 1

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs):
        # Reported (as in RLlib) under result["info"]["learner"][pid]["custom_metrics"].
        result["mean_reward_in_batch"] = float(np.mean(train_batch["rewards"]))

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["sampled_batches"] = algorithm.workers.local_worker().callbacks.num_samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        default=bool(os.environ.get("TFRL_EXAMPLE_SMOKE")),
                        help="tiny budget (2 iterations) for CI")
    args = parser.parse_args()
    iterations = 2 if args.smoke else 10

    config = (PPOConfig()
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=0, num_envs_per_worker=2,
                        rollout_fragment_length=64 if args.smoke else 256)
              .training(train_batch_size=128 if args.smoke else 512, sgd_minibatch_size=64,
                        num_sgd_iter=2 if args.smoke else 10, lr=1e-3, kl_coeff=0.0,
                        model={"fcnet_hiddens": [32, 32]})
              .callbacks(PoleAngleCallbacks)  # the class: each worker makes its own instance
              .debugging(seed=0))
    algo = config.build()
    try:
        for _ in range(iterations):
            result = algo.train()
            custom = result["custom_metrics"]
            learner = result["info"]["learner"]["default_policy"]["custom_metrics"]
            print(f"iter {result['training_iteration']:3d}  "
                  f"reward {result['episode_reward_mean']:7.2f}  "
                  f"pole_angle_mean {custom.get('pole_angle_mean', float('nan')):.4f}  "
                  f"pole_angle_max {custom.get('pole_angle_max', float('nan')):.4f}  "
                  f"mean_reward_in_batch {learner.get('mean_reward_in_batch', float('nan')):.2f}  "
                  f"sampled_batches {result['sampled_batches']}", flush=True)
        angles = result["hist_stats"].get("pole_angles", [])
        print(f"done: custom_metrics keys {sorted(result['custom_metrics'])}, "
              f"{len(angles)} pole angles in hist_stats['pole_angles'], "
              f"sampled_batches {result['sampled_batches']}")
    finally:
        algo.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
