"""RLlib's policy save/restore test, ported to tfrl.

Ports `rllib/policy/tests/test_policy.py` of ray-project/ray at commit
048f73e1902d1e464c92b7a0c7f0101e44ac11e7: `test_policy_save_restore` (RLlib's framework
loop over tf/tf2/torch becomes one run with tfrl's TF2 policy). `DQNTrainer` and
`DEFAULT_CONFIG` are RLlib 1.x's names, which tfrl keeps.
"""

import random

import numpy as np
import tensorflow as tf
from compat_helpers import check

from tfrl.algorithms.dqn import DEFAULT_CONFIG, DQNTrainer

RLLIB_PATH = "rllib/policy/tests/test_policy.py"
RLLIB_COMMIT = "048f73e1902d1e464c92b7a0c7f0101e44ac11e7"


def test_policy_save_restore():
    random.seed(0)
    np.random.seed(0)
    tf.random.set_seed(0)
    config = DEFAULT_CONFIG.copy()
    trainer = DQNTrainer(config=config, env="CartPole-v0")
    policy = trainer.get_policy()
    state1 = policy.get_state()
    trainer.train()
    state2 = policy.get_state()
    check(state1["_exploration_state"]["last_timestep"],
          state2["_exploration_state"]["last_timestep"], false=True)
    check(state1["global_timestep"], state2["global_timestep"], false=True)
    # Reset policy to its original state and compare.
    policy.set_state(state1)
    state3 = policy.get_state()
    # Make sure everything is the same.
    check(state1, state3)
    trainer.stop()
