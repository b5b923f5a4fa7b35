"""Offline datasets made by tfrl itself: a trained PPO policy writes CartPole episodes, a
partly trained SAC policy Pendulum episodes.

- `train_expert(seed)`: PPO with the tuned `tfrl/tuned/ppo_cartpole.yaml` settings,
  trained until its mean return reaches `target` (or `max_steps` env steps);
- `write_episodes(policy, out_dir, ...)`: episodes acted by a policy (sampled, with
  `action_prob`/`action_logp` logged for off-policy estimation), one line per episode
  through `JsonWriter`; every `good_every`-th episode is acted by the policy, the others
  (if `good_every > 1`) by its opposite (CartPole's two actions swapped, `action_prob`
  the probability of the action taken): a bad policy with the expert's coverage of the
  start states. The episodes are interleaved in one file, so any stretch of it mixes both.

`make_cartpole_datasets(root)` writes `expert/` (20k steps of expert episodes) and
`mixed/` (40k steps: one expert episode in 40, the others of the opposite policy, which
fail after about 9 steps: 60 % of the steps are the expert's, but 39 of 40 episodes start
with wrong actions) under `root`; examples/offline/ and the BC / MARWIL learning tests
use it. BC on `mixed` imitates the majority at the start states and fails; MARWIL
weights the expert's actions by their higher returns.

`make_pendulum_dataset(out_dir)`: SAC with the tuned `tfrl/tuned/sac_pendulum.yaml`
settings trains for `sac_steps` env steps (3,000: short of solving Pendulum; the data
hold a mean return of about -675 with seed 0, from solved episodes to -1,500), then its
stochastic policy writes `num_steps` steps of whole Pendulum-v1 episodes (one line per
episode: `obs`, `new_obs`, `actions`, `rewards`, `terminateds`, `truncateds`, `eps_id`,
`t`, `action_logp`; the env gets the actions unsquashed as the samplers send them,
see `write_pendulum_episodes`); CQL and BC learn from it (examples/offline/pendulum_offline.py,
tests/test_cql_learning.py).
"""

import os
from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np


from tfrl.algorithms.ppo import PPO, PPOConfig
from tfrl.algorithms.sac import SAC, SACConfig
from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.evaluation.sampling.ops import unsquash_and_clip
from tfrl.offline.json_writer import JsonWriter
from tfrl import tuned
from tfrl.utils import yaml_io

TUNED_PPO = tuned.path("ppo_cartpole")
TUNED_SAC = tuned.path("sac_pendulum")


def _write_episode(writer: Any, rows: Dict[str, list], eps_id: int,
                   float_columns: Tuple[str, ...]) -> int:
    """One episode's rows as a SampleBatch (`float_columns` as float32, `eps_id`, `t`)
    written by `writer`; returns its length."""
    n = len(rows[Columns.REWARDS])
    batch = SampleBatch({k: np.asarray(v) for k, v in rows.items()})
    for key in float_columns:
        batch[key] = batch[key].astype(np.float32)
    batch[Columns.EPS_ID] = np.full(n, eps_id, np.int64)
    batch[Columns.T] = np.arange(n, dtype=np.int64)
    writer.write(batch)
    return n

def train_expert(seed: int = 0, target: float = 450.0, max_steps: int = 100_000) -> Any:
    """A PPO policy trained on CartPole-v1 with the tuned settings until its mean return
    reaches `target`.

    Raises:
        RuntimeError: If it does not reach `target` within `max_steps` env steps.
    """
    with open(TUNED_PPO, encoding="utf-8") as f:
        tuned = yaml_io.load(f)
    algo = PPO(config=PPOConfig.from_dict({**tuned["config"], "env": tuned["env"],
                                           "seed": seed}))
    result: Dict[str, Any] = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    try:
        while result["timesteps_total"] < max_steps:
            result = algo.train()
            if result["episode_reward_mean"] >= target:
                return algo.get_policy()
    finally:
        algo.stop()
    raise RuntimeError(f"PPO reached a mean return of {result['episode_reward_mean']:.1f}, "
                       f"not {target}, within {max_steps} steps (seed {seed}).")


def write_episodes(policy: Any, out_dir: str, num_steps: int, *, good_every: int = 1,
                   seed: int = 0, max_file_size: int = 64 * 1024 * 1024) -> Dict[str, float]:
    """Writes whole episodes acted by `policy` (every `good_every`-th; the others by its
    opposite) until `num_steps` steps.

    Returns:
        `{"episodes", "steps", "mean_return"}` of all episodes written, and
        `"good_steps"`, `"good_mean_return"`, `"bad_mean_return"` (NaN without such).
    """
    env = gym.make("CartPole-v1")
    env.action_space.seed(seed)
    writer = JsonWriter(out_dir, max_file_size=max_file_size, compress_columns=["obs",
                                                                                "new_obs"])
    steps, returns, eps_id, good_steps = 0, [], 0, 0
    good_returns, bad_returns = [], []
    while steps < num_steps:
        anti = eps_id % good_every != 0
        obs, _ = env.reset(seed=seed * 1_000_003 + eps_id)
        rows: Dict[str, list] = {k: [] for k in (
            Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
            Columns.TERMINATEDS, Columns.TRUNCATEDS, Columns.ACTION_PROB, Columns.ACTION_LOGP)}
        done = False
        while not done:
            actions, _, extras = policy.compute_actions(obs[None].astype(np.float32),
                                                        explore=True)
            action, prob = int(actions[0]), float(extras[Columns.ACTION_PROB][0])
            if anti:
                action, prob = 1 - action, 1.0 - prob
            prob = min(max(prob, 1e-6), 1.0)
            new_obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in ((Columns.OBS, obs), (Columns.NEXT_OBS, new_obs),
                               (Columns.ACTIONS, action), (Columns.REWARDS, reward),
                               (Columns.TERMINATEDS, terminated),
                               (Columns.TRUNCATEDS, truncated), (Columns.ACTION_PROB, prob),
                               (Columns.ACTION_LOGP, np.log(prob))):
                rows[key].append(value)
            obs, done = new_obs, terminated or truncated
        n = _write_episode(writer, rows, eps_id, (
            Columns.OBS, Columns.NEXT_OBS, Columns.REWARDS, Columns.ACTION_PROB,
            Columns.ACTION_LOGP))
        steps += n
        returns.append(float(np.sum(rows[Columns.REWARDS])))
        (bad_returns if anti else good_returns).append(returns[-1])
        good_steps += 0 if anti else n
        eps_id += 1
    writer.close()
    mean = lambda x: float(np.mean(x)) if x else float("nan")  # noqa: E731
    return {"episodes": len(returns), "steps": steps, "mean_return": mean(returns),
            "good_steps": good_steps, "good_mean_return": mean(good_returns),
            "bad_mean_return": mean(bad_returns)}


def make_cartpole_datasets(root: str, seed: int = 0, expert_steps: int = 20_000,
                           mixed_steps: int = 40_000, policy: Optional[Any] = None
                           ) -> Dict[str, Dict[str, float]]:
    """Writes `root/expert` and `root/mixed` (see the module docstring); returns what
    each holds (see `write_episodes`)."""
    policy = policy or train_expert(seed)
    return {"expert": write_episodes(policy, os.path.join(root, "expert"), expert_steps,
                                     seed=seed),
            "mixed": write_episodes(policy, os.path.join(root, "mixed"), mixed_steps,
                                    good_every=40, seed=seed + 1)}


def train_sac(seed: int = 0, steps: int = 3000) -> Any:
    """A SAC policy trained on Pendulum-v1 with the tuned settings for `steps` env steps
    (at least; whole sampling rounds)."""
    with open(TUNED_SAC, encoding="utf-8") as f:
        tuned = yaml_io.load(f)
    algo = SAC(config=SACConfig.from_dict({**tuned["config"], "env": tuned["env"],
                                           "seed": seed, "timesteps_per_iteration": 500}))
    try:
        while algo.train()["timesteps_total"] < steps:
            pass
        return algo.get_policy()
    finally:
        algo.stop()


def write_pendulum_episodes(policy: Any, out_dir: str, num_steps: int, *, seed: int = 0,
                            explore: bool = True, normalize_actions: bool = True
                            ) -> Dict[str, float]:
    """Writes whole Pendulum-v1 episodes acted by `policy` (sampled with `explore`) until
    `num_steps` steps, one line per episode.

    The env gets what the samplers would send it: with `normalize_actions` (the
    algorithms' default, under which `policy` was trained and a learner on the data is
    evaluated) the policy's actions unsquashed from [-1, 1] into the bounds; the rows
    keep the policy's own actions, as sampled batches do.

    Returns:
        `{"episodes", "steps", "mean_return", "min_return", "max_return"}`.
    """
    env = gym.make("Pendulum-v1")
    writer = JsonWriter(out_dir, compress_columns=[])
    steps, returns, eps_id = 0, [], 0
    while steps < num_steps:
        obs, _ = env.reset(seed=seed * 1_000_003 + eps_id)
        rows: Dict[str, list] = {k: [] for k in (
            Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
            Columns.TERMINATEDS, Columns.TRUNCATEDS, Columns.ACTION_LOGP)}
        done = False
        while not done:
            actions, _, extras = policy.compute_actions(obs[None].astype(np.float32),
                                                        explore=explore)
            action = np.asarray(actions[0], np.float32)
            new_obs, reward, terminated, truncated, _ = env.step(unsquash_and_clip(
                action, env.action_space, normalize_actions, False))
            logp = extras.get(Columns.ACTION_LOGP)
            for key, value in ((Columns.OBS, obs), (Columns.NEXT_OBS, new_obs),
                               (Columns.ACTIONS, action), (Columns.REWARDS, reward),
                               (Columns.TERMINATEDS, terminated),
                               (Columns.TRUNCATEDS, truncated),
                               (Columns.ACTION_LOGP, 0.0 if logp is None else logp[0])):
                rows[key].append(value)
            obs, done = new_obs, terminated or truncated
        n = _write_episode(writer, rows, eps_id, (
            Columns.OBS, Columns.NEXT_OBS, Columns.ACTIONS, Columns.REWARDS,
            Columns.ACTION_LOGP))
        steps += n
        returns.append(float(np.sum(rows[Columns.REWARDS])))
        eps_id += 1
    writer.close()
    return {"episodes": len(returns), "steps": steps, "mean_return": float(np.mean(returns)),
            "min_return": float(np.min(returns)), "max_return": float(np.max(returns))}


def make_pendulum_dataset(out_dir: str, seed: int = 0, sac_steps: int = 3000,
                          num_steps: int = 10_000, policy: Optional[Any] = None
                          ) -> Dict[str, float]:
    """Writes `out_dir` (see the module docstring); returns what it holds (see
    `write_pendulum_episodes`)."""
    policy = policy or train_sac(seed, sac_steps)
    return write_pendulum_episodes(policy, out_dir, num_steps, seed=seed)
