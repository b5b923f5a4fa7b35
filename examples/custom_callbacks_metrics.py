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

import numpy as np

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.algorithms.callbacks import DefaultCallbacks  # noqa: E402
from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402


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


def main() -> None:
    args = script_parser(__doc__, "2 iterations").parse_args()
    iterations = 2 if args.smoke else 10

    config = (PPOConfig()
              .callbacks(PoleAngleCallbacks)  # the class: each worker makes its own instance
              .environment("CartPole-v1")
              .rollouts(num_rollout_workers=0, num_envs_per_worker=2,
                        rollout_fragment_length=64 if args.smoke else 256)
              .training(train_batch_size=128 if args.smoke else 512, sgd_minibatch_size=64,
                        num_sgd_iter=2 if args.smoke else 10, lr=1e-3, kl_coeff=0.0,
                        model={"fcnet_hiddens": [32, 32]})
              .debugging(seed=0))
    algo = config.build()
    try:
        # One line per iteration: iteration, steps, mean return, then these result keys
        # ("a/b" reads result["a"]["b"]).
        result = train_until(algo, {"training_iteration": iterations}, extra={
            "pole_angle_mean": ("custom_metrics/pole_angle_mean", ".4f"),
            "pole_angle_max": ("custom_metrics/pole_angle_max", ".4f"),
            "mean_reward_in_batch": (
                "info/learner/default_policy/custom_metrics/mean_reward_in_batch", ".2f"),
            "sampled_batches": "sampled_batches"})
        angles = result["hist_stats"].get("pole_angles", [])
        print(f"done: custom_metrics keys {sorted(result['custom_metrics'])}, "
              f"{len(angles)} pole angles in hist_stats['pole_angles'], "
              f"sampled_batches {result['sampled_batches']}")
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
