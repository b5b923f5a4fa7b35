"""RolloutWorker basics: a hand-written training loop without an Algorithm.

The classic RLlib programming model, piece by piece:

1. `RolloutWorker(env_creator=..., policy_spec=PPOTFPolicy, ...)` builds an env and a
   policy; `worker.sample()` returns a postprocessed `SampleBatch` (with GAE
   `advantages` and `value_targets` already computed by the policy);
2. several workers sample with the same weights (`get_weights` / `set_weights`), and
   `concat_samples` merges their batches;
3. `worker.learn_on_batch(batch)` runs the policy's update (here PPO: `num_sgd_iter`
   epochs of `sgd_minibatch_size` minibatches in one compiled call);
4. `worker.get_metrics()` returns the episodes a worker finished (`RolloutMetrics`),
   and `summarize_episodes` turns them into `episode_reward_mean` & co.

This is what `PPO.train()` does for you (plus bookkeeping); see
`examples/ppo_cartpole.py` for the one-liner version.

    python examples/rollout_worker_basics.py          # 10k steps: mean return ~20 -> ~100
    python examples/rollout_worker_basics.py --smoke  # 2 tiny iterations (or TFRL_EXAMPLE_SMOKE=1)
"""

import gymnasium as gym

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: E402
from tfrl.evaluation.metrics import summarize_episodes  # noqa: E402
from tfrl.evaluation.rollout_worker import RolloutWorker  # noqa: E402
from tfrl.policy.sample_batch import concat_samples  # noqa: E402


def main() -> None:
    args = script_parser(__doc__, "2 iterations").parse_args()
    iterations = 2 if args.smoke else 25

    policy_config = {  # PPOTFPolicy's config keys (unset ones keep their defaults)
        "lr": 1e-3, "gamma": 0.98, "lambda": 0.8, "kl_coeff": 0.0,
        "num_sgd_iter": 2 if args.smoke else 10, "sgd_minibatch_size": 64,
        "model": {"fcnet_hiddens": [32, 32]},
    }

    def make_worker(index: int) -> RolloutWorker:
        return RolloutWorker(
            env_creator=lambda env_context: gym.make("CartPole-v1"),  # gets an EnvContext
            policy_spec=PPOTFPolicy,
            policy_config=policy_config,
            rollout_fragment_length=64 if args.smoke else 200,
            batch_mode="truncate_episodes",
            worker_index=index,
            seed=index)

    learner = make_worker(0)                     # learns; also samples
    samplers = [learner, make_worker(1)]         # a second, in-process sampling worker
    policy = learner.get_policy()                # the "default_policy"
    print(f"policy {type(policy).__name__}: obs {policy.observation_space.shape}, "
          f"actions {policy.action_space}")

    window = []  # the last 100 finished episodes
    for i in range(1, iterations + 1):
        # Broadcast the learner's weights, then sample with every worker.
        weights = learner.get_weights()          # {policy_id: weights}
        for worker in samplers[1:]:
            worker.set_weights(weights)
        batch = concat_samples([worker.sample() for worker in samplers])
        if i == 1:
            print(f"sampled {batch.count} steps; columns: {sorted(batch.keys())}")
        # Standardize the advantages (as PPO's execution plan does), then learn.
        adv = batch["advantages"]
        batch["advantages"] = (adv - adv.mean()) / max(1e-4, adv.std())
        info = learner.learn_on_batch(batch)     # {policy_id: {"learner_stats": {...}}}
        stats = info["default_policy"]["learner_stats"]
        # One RolloutMetrics per episode finished since the last call, from every worker;
        # like an Algorithm, report the mean over a window of the last 100 episodes.
        episodes = [m for w in samplers for m in w.get_metrics()]
        window = (window + episodes)[-100:]
        metrics = summarize_episodes(window)
        print(f"iter {i:3d}  steps {batch.count:5d}  "
              f"episodes {len(episodes):3d}  "
              f"reward {metrics['episode_reward_mean']:7.2f}  "
              f"total_loss {stats['total_loss']:8.3f}  entropy {stats['entropy']:.3f}",
              flush=True)

    obs, _ = gym.make("CartPole-v1").reset(seed=0)
    actions, _, extra = policy.compute_actions([obs], explore=False)
    print(f"done: {iterations} iterations; greedy action {int(actions[0])}, "
          f"value estimate {float(extra['vf_preds'][0]):.3f} for a reset observation")
    for worker in samplers:
        worker.stop()


if __name__ == "__main__":
    main()
