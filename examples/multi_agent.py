"""Multi-agent PPO: two policies, a policy mapping function, and a frozen policy.

Two independent CartPoles run as the agents `0` and `1` of one `MultiAgentEnv`
(`make_multi_agent("CartPole-v1")`). Agent 0 is controlled by policy "learner", agent 1
by policy "frozen"; only "learner" is in `policies_to_train`, so "frozen" keeps its
initial weights while still acting (e.g. a fixed opponent in self-play). Rewards are
reported per policy in `result["policy_reward_mean"]`.

    python examples/multi_agent.py            # ~30 iterations
    python examples/multi_agent.py --smoke    # 2 tiny iterations (also TFRL_EXAMPLE_SMOKE=1)
"""

import numpy as np

from tfrl.utils.progress import quiet_tensorflow, script_parser

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.env.multi_agent_env import make_multi_agent  # noqa: E402
from tfrl.env.registry import register_env  # noqa: E402
from tfrl.policy.policy import PolicySpec  # noqa: E402
from tfrl.utils.progress_callbacks import train_until  # noqa: E402


def policy_mapping_fn(agent_id, episode, worker=None, **kwargs):
    """Which policy controls `agent_id` (called once per agent and episode)."""
    return "learner" if agent_id == 0 else "frozen"


def main() -> None:
    args = script_parser(__doc__, "2 iterations").parse_args()
    iterations = 2 if args.smoke else 30

    # A multi-agent env class made from a gymnasium id; env_config["num_agents"] copies.
    register_env("two_cartpoles", lambda ctx: make_multi_agent("CartPole-v1")(ctx))

    config = (PPOConfig()
              .environment("two_cartpoles", env_config={"num_agents": 2})
              .rollouts(num_rollout_workers=0, rollout_fragment_length=64 if args.smoke else 200)
              .training(train_batch_size=128 if args.smoke else 1000, sgd_minibatch_size=64,
                        num_sgd_iter=2 if args.smoke else 10, lr=1e-3, kl_coeff=0.0,
                        model={"fcnet_hiddens": [32, 32]})
              .multi_agent(
                  # PolicySpec(policy_class, observation_space, action_space, config):
                  # None = the algorithm's policy class / the env's spaces / no overrides.
                  policies={"learner": PolicySpec(),
                            "frozen": PolicySpec(config={"explore": False})},
                  policy_mapping_fn=policy_mapping_fn,
                  policies_to_train=["learner"])
              .debugging(seed=0))
    algo = config.build()
    frozen_before = algo.get_policy("frozen").get_weights()
    learner_before = algo.get_policy("learner").get_weights()

    def changed(before, policy_id):
        after = algo.get_policy(policy_id).get_weights()  # a list of numpy arrays
        return any(not np.array_equal(b, a) for b, a in zip(before, after))

    try:
        # "reward" is the mean episode return summed over the agents; then per policy.
        result = train_until(algo, {"training_iteration": iterations}, extra={
            "learner reward": ("policy_reward_mean/learner", "7.2f"),
            "frozen reward": ("policy_reward_mean/frozen", "7.2f")})
        trained = sorted(result["info"]["learner"])
        print(f"done: trained policies {trained}, "
              f"learner weights changed: {changed(learner_before, 'learner')}, "
              f"frozen weights changed: {changed(frozen_before, 'frozen')}")
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
