"""RLlib's postprocessing tests (n-step adjustment), ported to tfrl.

Ports `rllib/evaluation/tests/test_postprocessing.py` of ray-project/ray at commit
b19e66f4bcd551a321c14f57fea162138f17a7c2: `test_n_step_3`, `test_n_step_4`,
`test_n_step_malformed_terminateds`, `test_n_step_very_short_trajectory`,
`test_n_step_from_same_obs_source_array`; and, from the 1.x version of the file (commit
2280f8bab432cf0f8b45c03fce84233adb00b8e9, `dones` instead of terminateds/truncateds),
`test_n_step_malformed_dones`. Ray start-up dropped.
"""

import numpy as np
import pytest
from compat_helpers import check

from tfrl.evaluation.postprocessing import adjust_nstep, discount_cumsum
from tfrl.policy.sample_batch import SampleBatch

RLLIB_PATH = "rllib/evaluation/tests/test_postprocessing.py"
RLLIB_COMMIT = "b19e66f4bcd551a321c14f57fea162138f17a7c2"
RLLIB_COMMIT_1X = "2280f8bab432cf0f8b45c03fce84233adb00b8e9"


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)


def test_n_step_3():
    gamma = 0.9
    obs = [1, 2, 3, 4, 5, 6, 7]
    actions = ["ac1", "ac2", "ac1", "ac1", "ac1", "ac2", "ac1"]
    rewards = [10.0, 0.0, 100.0, 100.0, 100.0, 100.0, 100.0]
    terminateds = [0, 0, 0, 0, 0, 0, 1]
    truncateds = [0, 0, 0, 0, 0, 0, 0]
    next_obs = [2, 3, 4, 5, 6, 7, 8]
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: terminateds, SampleBatch.TRUNCATEDS: truncateds,
        SampleBatch.NEXT_OBS: next_obs,
    })
    adjust_nstep(3, gamma, batch)
    check(batch[SampleBatch.OBS], [1, 2, 3, 4, 5, 6, 7])
    check(batch[SampleBatch.ACTIONS], ["ac1", "ac2", "ac1", "ac1", "ac1", "ac2", "ac1"])
    check(batch[SampleBatch.NEXT_OBS], [4, 5, 6, 7, 8, 8, 8])
    check(batch[SampleBatch.TERMINATEDS], [0, 0, 0, 0, 1, 1, 1])
    check(batch[SampleBatch.TRUNCATEDS], [0, 0, 0, 0, 0, 0, 0])
    check(batch[SampleBatch.REWARDS], [91.0, 171.0, 271.0, 271.0, 271.0, 190.0, 100.0])


def test_n_step_4():
    gamma = 0.99
    obs = np.arange(0, 7)
    actions = np.random.randint(-1, 3, size=(7,))
    check_actions = actions.copy()
    rewards = [10.0, 0.0, 100.0, 50.0, 60.0, 10.0, 100.0]
    terminateds = [False, False, False, False, False, False, True]
    truncateds = [False, False, False, False, False, False, False]
    next_obs = np.arange(1, 8)
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: terminateds, SampleBatch.TRUNCATEDS: truncateds,
        SampleBatch.NEXT_OBS: next_obs,
    })
    adjust_nstep(4, gamma, batch)
    check(batch[SampleBatch.OBS], [0, 1, 2, 3, 4, 5, 6])
    check(batch[SampleBatch.ACTIONS], check_actions)
    check(batch[SampleBatch.NEXT_OBS], [4, 5, 6, 7, 7, 7, 7])
    check(batch[SampleBatch.TERMINATEDS], [False, False, False, True, True, True, True])
    check(batch[SampleBatch.TRUNCATEDS], [False] * 7)
    check(batch[SampleBatch.REWARDS], [
        discount_cumsum(np.array(rewards[0:4]), gamma)[0],
        discount_cumsum(np.array(rewards[1:5]), gamma)[0],
        discount_cumsum(np.array(rewards[2:6]), gamma)[0],
        discount_cumsum(np.array(rewards[3:7]), gamma)[0],
        discount_cumsum(np.array(rewards[4:]), gamma)[0],
        discount_cumsum(np.array(rewards[5:]), gamma)[0],
        discount_cumsum(np.array(rewards[6:]), gamma)[0],
    ])


def test_n_step_malformed_terminateds():
    # Bad input: a trajectory with `terminateds` (or `truncateds`) in the middle.
    gamma = 1.0
    obs = np.arange(0, 7)
    actions = np.random.randint(-1, 3, size=(7,))
    rewards = [10.0, 0.0, 100.0, 50.0, 60.0, 10.0, 100.0]
    next_obs = np.arange(1, 8)
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: [False, False, True, False, False, False, True],
        SampleBatch.TRUNCATEDS: [False] * 7,
        SampleBatch.NEXT_OBS: next_obs,
    })
    with pytest.raises(AssertionError, match="Unexpected terminated\\|truncated in middle"):
        adjust_nstep(5, gamma, batch)

    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: [False, False, False, False, False, False, True],
        SampleBatch.TRUNCATEDS: [False, True, False, True, False, False, False],
        SampleBatch.NEXT_OBS: next_obs,
    })
    with pytest.raises(AssertionError, match="Unexpected terminated\\|truncated in middle"):
        adjust_nstep(5, gamma, batch)


def test_n_step_malformed_dones():
    # RLlib 1.x (commit RLLIB_COMMIT_1X): the same check on a `dones` column.
    gamma = 1.0
    obs = np.arange(0, 7)
    actions = np.random.randint(-1, 3, size=(7,))
    rewards = [10.0, 0.0, 100.0, 50.0, 60.0, 10.0, 100.0]
    next_obs = np.arange(1, 8)
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.DONES: [False, False, True, False, False, False, True],
        SampleBatch.NEXT_OBS: next_obs,
    })
    with pytest.raises(AssertionError, match="Unexpected done in middle"):
        adjust_nstep(5, gamma, batch)


def test_n_step_very_short_trajectory():
    gamma = 1.0
    obs = np.arange(0, 2)
    actions = np.random.randint(-100, 300, size=(2,))
    check_actions = actions.copy()
    rewards = [10.0, 100.0]
    next_obs = np.arange(1, 3)
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: [False, False], SampleBatch.TRUNCATEDS: [False, False],
        SampleBatch.NEXT_OBS: next_obs,
    })
    adjust_nstep(3, gamma, batch)
    check(batch[SampleBatch.OBS], [0, 1])
    check(batch[SampleBatch.ACTIONS], check_actions)
    check(batch[SampleBatch.TERMINATEDS], [False, False])
    check(batch[SampleBatch.TRUNCATEDS], [False, False])
    check(batch[SampleBatch.REWARDS], [10.0 + gamma * 100.0, 100.0])
    check(batch[SampleBatch.NEXT_OBS], [2, 2])


def test_n_step_from_same_obs_source_array():
    """n-step on obs and new_obs that are views of one array."""
    gamma = 0.99
    underlying_obs = np.arange(0, 8)
    obs = underlying_obs[:7]
    next_obs = underlying_obs[1:]
    actions = np.random.randint(-1, 3, size=(7,))
    check_actions = actions.copy()
    rewards = [10.0, 0.0, 100.0, 50.0, 60.0, 10.0, 100.0]
    terminateds = [False] * 7
    truncateds = [False, False, False, False, False, False, True]
    batch = SampleBatch({
        SampleBatch.OBS: obs, SampleBatch.ACTIONS: actions, SampleBatch.REWARDS: rewards,
        SampleBatch.TERMINATEDS: terminateds, SampleBatch.TRUNCATEDS: truncateds,
        SampleBatch.NEXT_OBS: next_obs,
    })
    adjust_nstep(4, gamma, batch)
    check(batch[SampleBatch.OBS], [0, 1, 2, 3, 4, 5, 6])
    check(batch[SampleBatch.ACTIONS], check_actions)
    check(batch[SampleBatch.NEXT_OBS], [4, 5, 6, 7, 7, 7, 7])
    check(batch[SampleBatch.TERMINATEDS], [False] * 7)
    check(batch[SampleBatch.TRUNCATEDS], [False, False, False, True, True, True, True])
    check(batch[SampleBatch.REWARDS], [
        discount_cumsum(np.array(rewards[0:4]), gamma)[0],
        discount_cumsum(np.array(rewards[1:5]), gamma)[0],
        discount_cumsum(np.array(rewards[2:6]), gamma)[0],
        discount_cumsum(np.array(rewards[3:7]), gamma)[0],
        discount_cumsum(np.array(rewards[4:]), gamma)[0],
        discount_cumsum(np.array(rewards[5:]), gamma)[0],
        discount_cumsum(np.array(rewards[6:]), gamma)[0],
    ])
