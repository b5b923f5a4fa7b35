"""RLlib's error-message tests, ported to tfrl.

Ports `rllib/utils/tests/test_errors.py` of ray-project/ray at commit
16726759cf24a2719cda9c844892901b36aef9b1: `test_bad_envs`. RLlib's builder methods change
the config in place; tfrl's configs are frozen, so each `config.environment(...)` is
assigned back (the env strings and the expected errors are RLlib's). The module paths
`ray.rllib.examples.envs...` are renamed to `tfrl.examples.envs...`.

Left out: `test_no_gpus_error`, whose scenario is IMPALA's default `num_gpus=1` on a CPU
machine; tfrl's ImpalaConfig defaults to `num_gpus=0` (documented there), so the default
config builds. (Asked for a GPU it has not, tfrl raises a RuntimeError as RLlib does.)
"""

import re

import pytest

from tfrl.algorithms.ppo import PPOConfig
from tfrl.utils.error import EnvError

RLLIB_PATH = "rllib/utils/tests/test_errors.py"
RLLIB_COMMIT = "16726759cf24a2719cda9c844892901b36aef9b1"


def _expect_env_error(config):
    with pytest.raises(EnvError,
                       match=f"The env string you provided \\('{re.escape(config.env)}'\\) is"):
        config.build()


def test_bad_envs():
    config = (
        PPOConfig().rollouts(num_rollout_workers=0)
        # Non existing/non-registered gym env string.
        .environment("Alien-Attack-v42")
    )
    _expect_env_error(config)

    # Malformed gym env string (must have v\d at end).
    config = config.environment("Alien-Attack-part-42")
    _expect_env_error(config)

    # Non-existing class in a full-class-path.
    config = config.environment("tfrl.examples.envs.random_env.RandomEnvThatDoesntExist")
    _expect_env_error(config)

    # Non-existing module inside a full-class-path.
    config = config.environment("tfrl.examples.envs.module_that_doesnt_exist.SomeEnv")
    _expect_env_error(config)
