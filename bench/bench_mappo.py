"""MAPPO (centralized critic) against independent PPO on MPE simple_spread (2 agents).

The same settings for both (those of examples/pettingzoo_mpe.py: one policy per agent,
8 envs, 2,000-step batches, 10 epochs of 500-row minibatches, lr 1e-3, gamma 0.95); the
only difference is the value function: each agent's own observation (PPO) or the
centralized critic (MAPPO, `critic_input="auto"`: the env's global state, which
PettingZoo's simple_spread provides through `state()`, after the agent's own
observation). The score is the team return (both agents' rewards summed over an
episode), mean of the last 100 episodes, after `--steps` env steps; one JSON line per
run.

    python bench/bench_mappo.py                      # seeds 0 1 2, 150k steps each
    python bench/bench_mappo.py --seeds 0 --steps 20000
"""

import argparse
import json
import time

from tfrl.utils.progress import quiet_tensorflow

quiet_tensorflow()

from mpe2 import simple_spread_v3  # noqa: E402

from tfrl.algorithms.mappo import MAPPOConfig  # noqa: E402
from tfrl.algorithms.ppo import PPOConfig  # noqa: E402
from tfrl.env.registry import register_env  # noqa: E402
from tfrl.env.wrappers.pettingzoo_env import ParallelPettingZooEnv  # noqa: E402
from tfrl.policy.policy import PolicySpec  # noqa: E402

ENV = "bench_mpe_simple_spread"
AGENTS = ("agent_0", "agent_1")


def make_env(ctx=None):
    return ParallelPettingZooEnv(simple_spread_v3.parallel_env(
        N=len(AGENTS), max_cycles=25, continuous_actions=False))


def policy_mapping_fn(agent_id, episode, worker=None, **kwargs):
    return agent_id


def make_config(algo: str, seed: int):
    register_env(ENV, make_env)
    config_class = MAPPOConfig if algo == "mappo" else PPOConfig
    return (config_class()
            .environment(ENV)
            .rollouts(num_rollout_workers=0, num_envs_per_worker=8,
                      rollout_fragment_length=250)
            .training(train_batch_size=2000, sgd_minibatch_size=500, num_sgd_iter=10,
                      lr=1e-3, gamma=0.95, lambda_=0.95, clip_param=0.2, vf_clip_param=1e6,
                      vf_loss_coeff=0.5, entropy_coeff=0.01, kl_coeff=0.0, grad_clip=0.5,
                      model={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
            .multi_agent(policies={agent: PolicySpec() for agent in AGENTS},
                         policy_mapping_fn=policy_mapping_fn)
            .debugging(seed=seed))


def run(algo: str, seed: int, steps: int) -> dict:
    trainer = make_config(algo, seed).build()
    start = time.time()
    try:
        result = trainer.train()
        while result["timesteps_total"] < steps:
            result = trainer.train()
    finally:
        trainer.stop()
    return {"algo": algo, "seed": seed, "env_steps": result["timesteps_total"],
            "team_return": round(float(result["episode_reward_mean"]), 3),
            "seconds": round(time.time() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=150_000)
    parser.add_argument("--algos", nargs="+", default=["mappo", "ppo"])
    args = parser.parse_args()
    for seed in args.seeds:
        for algo in args.algos:
            print(json.dumps(run(algo, seed, args.steps)), flush=True)


if __name__ == "__main__":
    main()
