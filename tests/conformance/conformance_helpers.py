"""What the conformance suite builds for every registered algorithm: small spaces and envs,
the algorithm's default config with small sizes, its policy under a named strategy, and
batches sampled and postprocessed by the policy itself.

An algorithm joins the suite by being registered in `tfrl.algorithms.registry.ALGORITHMS`:
the suite reads its config class (the defaults) and `default_policy_class` from there.
"""

from typing import Any, Dict, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.env.registry import register_env
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.strategy import make_strategy

ALGORITHM_NAMES = sorted(ALGORITHMS)

# CartPole-like (Box obs, Discrete actions) and Pendulum-like (Box obs, Box actions).
SPACES: Dict[str, Tuple[gym.Space, gym.Space]] = {
    "discrete": (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2)),
    "box": (gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
            gym.spaces.Box(-2.0, 2.0, (1,), np.float32)),
}
SPACE_NAMES = sorted(SPACES)

# Sizes only: every key that the algorithm's config has is set, others are left out.
SMALL = {
    "seed": 0,
    "model": {"fcnet_hiddens": [16]},
    "num_sgd_iter": 2,
    "sgd_minibatch_size": 16,
    "train_batch_size": 32,
    "rollout_fragment_length": 16,
    "batch_mode": "complete_episodes",
    "num_workers": 0,
    "num_envs_per_worker": 1,
    "min_iter_time_s": 0,  # A2C: iterations of a fixed size, not of 10 s
    # Off-policy (DQN): iterations of one sampling round, learning from the first
    # round on, a target update every other round, the replay buffer in checkpoints.
    "timesteps_per_iteration": 0,
    "num_steps_sampled_before_learning_starts": 16,
    "target_network_update_freq": 32,
    "store_buffer_in_checkpoints": True,
}

STRATEGIES = ("default", "one_device", "mirrored")


def supports(name: str, space: str) -> bool:
    """Whether the algorithm's policy accepts the `space` pair's action space: by its
    class attribute `action_space_types` (a tuple of `gym.Space` classes; absent: all)."""
    policy_class = get_algorithm_class(name).default_policy_class
    types = getattr(policy_class, "action_space_types", None)
    return types is None or isinstance(SPACES[space][1], types)


# (algorithm, space) pairs the suite runs, and those each algorithm must reject clearly.
SUPPORTED = [(a, s) for a in ALGORITHM_NAMES for s in SPACE_NAMES if supports(a, s)]
UNSUPPORTED = [(a, s) for a in ALGORITHM_NAMES for s in SPACE_NAMES if not supports(a, s)]


class FixedStart(gym.Wrapper):
    """Every episode starts from the same state (reset with seed 0): the env then carries
    no state across `sample()` calls that a checkpoint would have to hold."""

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=0, options=options)


ENVS = {
    "discrete": "conformance_cartpole",
    "box": "conformance_pendulum",
}
register_env(ENVS["discrete"],
             lambda ctx: FixedStart(gym.make("CartPole-v1", max_episode_steps=24)))
register_env(ENVS["box"],
             lambda ctx: FixedStart(gym.make("Pendulum-v1", max_episode_steps=16)))


def algorithm_config(name: str, **overrides: Any) -> Dict[str, Any]:
    """The registered algorithm's default config dict with the suite's small sizes."""
    _, config_class = get_algorithm_class(name, return_config=True)
    keys = config_class().to_dict()
    small = {key: value for key, value in SMALL.items() if key in keys}
    # Through the config class, so that aliases of a key (min_time_s_per_iteration for
    # min_iter_time_s) agree in the dict.
    return config_class.from_dict({**small, **overrides}).to_dict()


def strategy_named(name: str) -> tf.distribute.Strategy:
    """The default strategy, one device, or 2-replica MirroredStrategy on logical CPUs."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return make_strategy({})
    return make_strategy({"num_gpus": 2, "_fake_gpus": True})


def make_policy(name: str, space: str, strategy: str = "one_device",
                policy_class: Any = None, **overrides: Any) -> Any:
    """The algorithm's default policy on the `space` pair, built from its default config."""
    algo_class = get_algorithm_class(name)
    policy_class = policy_class or algo_class.default_policy_class
    obs_space, action_space = SPACES[space]
    keras.utils.set_random_seed(0)
    return policy_class(obs_space, action_space, algorithm_config(name, **overrides),
                        strategy=strategy_named(strategy))


def sgd_policy_class(name: str) -> type:
    """The algorithm's policy with plain SGD: Adam normalises each gradient entry, which
    turns float rounding differences between strategies into visible weight differences."""
    base = get_algorithm_class(name).default_policy_class

    def make_optimizer(self):
        return keras.optimizers.SGD(0.2)

    return type(f"SGD{base.__name__}", (base,), {"make_optimizer": make_optimizer})


def observations(space: str, rows: int, seed: int) -> np.ndarray:
    obs_space = SPACES[space][0]
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (rows,) + obs_space.shape).astype(np.float32)


def train_batch(policy: Any, space: str, rows: int, seed: int) -> SampleBatch:
    """A trajectory of `rows` steps acted by `policy` and postprocessed by it (so it holds
    every column the algorithm's loss reads)."""
    rng = np.random.default_rng(seed)
    obs = observations(space, rows + 1, seed)
    actions, _, extras = policy.compute_actions(obs[:-1], explore=True)
    terminateds = np.zeros(rows, bool)
    terminateds[-1] = True
    batch = SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                        rewards=rng.normal(size=rows).astype(np.float32),
                        terminateds=terminateds, truncateds=np.zeros(rows, bool),
                        eps_id=np.zeros(rows, np.int64), t=np.arange(rows), **extras)
    return policy.postprocess_trajectory(batch)


def assert_same_state(got: Any, want: Any, where: str = "state") -> None:
    """Bit-for-bit equality of two nested states (dicts, lists, arrays, scalars)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got, want)
        for key in want:
            assert_same_state(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_state(a, b, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(got, want, err_msg=where, strict=True)
