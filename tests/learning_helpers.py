"""Shared by the learning tests: train an algorithm until it solves a task or runs out."""

from typing import Any, Dict

from tfrl.utils.progress_callbacks import train_until

#: A config for an on-policy algorithm on CartPole-v1 (8 envs, 64x64 MLP, seed 0).
CARTPOLE = {"env": "CartPole-v1", "num_envs_per_worker": 8, "gamma": 0.99,
            "model": {"fcnet_hiddens": [64, 64]}, "seed": 0}


def train_to_reward(algo: Any, reward: float, max_steps: int = 100_000) -> Dict[str, Any]:
    """Trains `algo` until its mean return reaches `reward` or `max_steps` env steps
    are spent; stops it and returns the last result."""
    try:
        return train_until(algo, {"episode_reward_mean": reward, "timesteps_total": max_steps},
                           verbose=False)
    finally:
        algo.stop()
