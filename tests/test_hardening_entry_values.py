"""Issue 29: numbers that enter from outside are checked where they enter, against the
dtype they are stored in: rewards logged to an external env (finite, within float32),
integers (2**40 for an int32 Box wraps around; 2**70 is beyond int64) and Discrete values
outside their space, from an env, the policy server or an offline file."""

import json

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.base_env import convert_to_base_env
from tfrl.env.external_env import ExternalEnv
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.space_checks import action_error, observation_error
from tfrl.offline.json_format import decode_batch

INT32_BOX = gym.spaces.Box(-2**31, 2**31 - 1, (2,), np.int32)
FLOAT_BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
F32 = r"outside the float32 range \[-3\.4028235e\+38, 3\.4028235e\+38\] it is stored in"
FIX = (r"\. Rewards must be finite numbers that fit float32, the dtype batches store them "
       r"in: fix the simulator's reward")


# ------------------------------------------------------------ item 1: log_returns
@pytest.mark.parametrize("reward,received", [
    (float("nan"), r"reward must be a finite number; received nan"),
    (float("inf"), r"reward must be a finite number; received inf"),
    (np.float64(-np.inf), r"reward must be a finite number; received -inf"),
    (1e39, r"reward is 1e\+39, " + F32),
    (np.float64(-1e300), r"reward is -1e\+300, " + F32),
    (2**1100, r"reward must be a finite number; received an int of 1101 bits"),
    (10**39, r"reward is 1e\+39, " + F32),
    ("1.0", r"reward must be a finite number; received '1\.0'"),
    (True, r"reward must be a finite number; received True"),
    (np.ones(2), r"reward must be a finite number; received \[1\.0, 1\.0\]"),
])
def test_external_env_log_returns_refuses_bad_rewards_at_entry(reward, received):
    env = ExternalEnv(gym.spaces.Discrete(2), FLOAT_BOX)
    eid = env.start_episode("ep7", training_enabled=False)
    env.log_action(eid, [0.0, 0.0], 1)
    with pytest.raises(ValueError, match=r"^Bad reward for episode ep7: " + received + FIX):
        env.log_returns(eid, reward)
    # Nothing of it was recorded; numbers that fit float32 are taken.
    for good in (3.4e38, -3.4e38, np.float32(1.5), np.int64(3), 7, np.array(2.0)):
        env.log_returns(eid, good)


def test_external_multi_agent_env_names_the_agent_of_a_bad_reward():
    env = ExternalMultiAgentEnv(gym.spaces.Discrete(2), FLOAT_BOX)
    eid = env.start_episode("m1", training_enabled=False)
    env.log_action(eid, {"a": [0.0, 0.0], "b": [0.0, 0.0]}, {"a": 0, "b": 1})
    with pytest.raises(ValueError, match=r"^Bad reward for episode m1: reward_dict\['b'\] is "
                                         r"1e\+39, " + F32 + FIX):
        env.log_returns(eid, {"a": 1.0, "b": 1e39})
    with pytest.raises(ValueError, match=r"^Bad reward for episode m1: reward_dict\['a'\] must "
                                         r"be a finite number; received nan"):
        env.log_returns(eid, {"a": float("nan")})
    env.log_returns(eid, {"a": 1.0, "b": -2.0})


# ------------------------------------------------------------ item 2: space checks
@pytest.mark.parametrize("space,value,message", [
    (INT32_BOX, [2**40, 0], "observation[0] is 1099511627776, outside the int32 range "
                            "[-2147483648, 2147483647] observation is stored in (the space is "
                            "Box(-2147483648, 2147483647, (2,), int32))"),
    (INT32_BOX, np.array([0, -2**33]), "observation[1] is -8589934592, outside the int32 range"),
    (INT32_BOX, [1e20, 0.0], "observation[0] is 1e+20, outside the int32 range"),
    (gym.spaces.Discrete(3), 2**70, "observation is 1180591620717411303424, outside the int64 "
                                    "range [-9223372036854775808, 9223372036854775807] (the "
                                    "space is Discrete(3))"),
    (gym.spaces.Discrete(3), 5, "observation is 5, not an integer in [0, 3) (the observation "
                                "space is Discrete(3))"),
    (gym.spaces.Discrete(3, start=1), 0, "observation is 0, not an integer in [1, 4)"),
    (gym.spaces.Discrete(3), 1.5, "observation is 1.5, not an integer in [0, 3)"),
    (gym.spaces.MultiDiscrete([3, 3]), [0, 2**70], "observation[1] is 1180591620717411303424, "
                                                   "outside the int64 range"),
    (gym.spaces.MultiDiscrete([3, 4]), [2, 4], "observation[1] is 4, not integers in [start, "
                                               "start + nvec)"),
    (gym.spaces.MultiBinary(2), [0, 2], "observation[1] is 2, not 0 or 1"),
])
def test_integers_beyond_the_dtype_and_discrete_values_outside_the_space(space, value, message):
    problem = observation_error(space, value)
    assert problem is not None and problem.startswith(message), problem


def test_good_integer_observations_pass():
    assert observation_error(INT32_BOX, [2**31 - 1, -2**31]) is None
    assert observation_error(INT32_BOX, np.array([5, 6], np.int64)) is None
    assert observation_error(gym.spaces.Discrete(3), np.int64(2)) is None
    assert observation_error(gym.spaces.Discrete(3), 2.0) is None  # integer-valued float
    assert observation_error(gym.spaces.MultiDiscrete([3, 4]), [2, 3]) is None


def test_an_int32_action_that_would_wrap_is_refused():
    # 2**40 became 0 in the int32 cast of the membership check and passed.
    assert action_error(INT32_BOX, [2**40, 0]) == (
        "action[0] is 1099511627776, outside the int32 range [-2147483648, 2147483647] action "
        "is stored in (the space is Box(-2147483648, 2147483647, (2,), int32))")
    assert action_error(gym.spaces.Discrete(3), 2**70).startswith(
        "action is 1180591620717411303424, outside the int64 range")
    assert action_error(INT32_BOX, [2**31 - 1, 0]) is None


def test_external_env_refuses_an_int_overflow_and_a_discrete_value_outside_the_space():
    env = ExternalEnv(INT32_BOX, gym.spaces.Discrete(4))
    eid = env.start_episode("e", training_enabled=False)
    with pytest.raises(ValueError, match=r"^Bad observation for episode e: observation is 9, "
                                         r"not an integer in \[0, 4\)"):
        env.log_action(eid, 9, [0, 0])
    with pytest.raises(ValueError, match=r"^Bad off-policy action: action\[1\] is 1099511627776, "
                                         r"outside the int32 range"):
        env.log_action(eid, 1, [0, 2**40])
    env.log_action(eid, 1, [0, 2**31 - 1])


NONFINITE = (r"Observations must be finite numbers: fix the simulator's observation \(e\.g\. a "
             r"division by zero or an overflow\), or replace NaN and inf before passing it\.$")


@pytest.mark.parametrize("call", ["get_action", "log_action", "end_episode"])
@pytest.mark.parametrize("bad,received", [
    (np.array([0.5, np.nan], np.float32), r"observation\[1\] holds a non-finite number \(nan\)"),
    ([np.inf, 0.0], r"observation\[0\] holds a non-finite number \(inf\)"),
])
def test_external_env_refuses_a_nonfinite_observation_where_it_enters(call, bad, received):
    """A NaN or inf observation is refused by the simulator's call (observation_error leaves
    finiteness to the caller): it never reaches a poll, so no policy acts on it."""
    env = ExternalEnv(gym.spaces.Discrete(2), FLOAT_BOX)
    env.get_action_timeout = 0.01
    eid = env.start_episode("e", training_enabled=False)
    args = {"get_action": (eid, bad), "log_action": (eid, bad, 1), "end_episode": (eid, bad)}
    with pytest.raises(ValueError, match=r"^Bad observation for episode e: " + received + r"\. "
                                         + NONFINITE):
        getattr(env, call)(*args[call])
    assert env.episode_counts()["episodes"] == 1 and not env.has_ended_episodes()
    assert not env._episodes["e"].items  # nothing was queued for a poll
    env.log_action(eid, [0.5, 0.0], 1)  # the episode goes on
    assert len(env._episodes["e"].items) == 1


def test_external_multi_agent_env_refuses_a_nonfinite_observation_of_one_agent():
    space = gym.spaces.Dict({"pos": FLOAT_BOX})
    env = ExternalMultiAgentEnv(gym.spaces.Discrete(2), space)
    eid = env.start_episode("m", training_enabled=False)
    obs = {"a": {"pos": [0.0, 0.0]}, "b": {"pos": [0.0, -np.inf]}}
    with pytest.raises(ValueError, match=r"^Bad observation of agent 'b' in episode m: "
                                         r"observation\['pos'\]\[1\] holds a non-finite number "
                                         r"\(-inf\)\. " + NONFINITE):
        env.log_action(eid, obs, {"a": 0, "b": 1})
    assert not env._episodes["m"].items


class _IntObsEnv(gym.Env):
    """Steps into an observation its space's dtype cannot hold."""

    def __init__(self, space, bad):
        self.observation_space, self.action_space = space, gym.spaces.Discrete(2)
        self.bad = bad

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample() * 0, {}

    def step(self, action):
        return self.bad, 0.0, False, False, {}


@pytest.mark.parametrize("space,bad,received", [
    (INT32_BOX, np.array([0, 2**40]), r"it holds 1099511627776, outside \[-2147483648, "
                                      r"2147483647\].*Received: \[0, 1099511627776\]"),
    (gym.spaces.Discrete(3), 2**70, r"it holds 1180591620717411303424, outside "
                                    r"\[-9223372036854775808, 9223372036854775807\]"),
])
def test_env_observations_the_dtype_cannot_hold_are_refused_when_batched(space, bad, received):
    # The int32 batch used to hold 0 instead of 2**40 (silently); 2**70 raised a bare
    # OverflowError from numpy.
    base = convert_to_base_env(_IntObsEnv(space, bad), make_env=lambda i: _IntObsEnv(space, bad),
                               num_envs=2)
    base.poll_arrays()
    base.send_action_array(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=r"^The value of the observation of sub-env 0 does not "
                                         r"fit the int\d\d dtype of its space .*" + received):
        base.poll_arrays()


class _MultiAgentIntEnv(MultiAgentEnv):
    def __init__(self, config=None):
        super().__init__()
        self.observation_space, self.action_space = INT32_BOX, gym.spaces.Discrete(2)
        self._agent_ids = {"a"}

    def reset(self, *, seed=None, options=None):
        return {"a": np.zeros(2, np.int32)}, {}

    def step(self, action_dict):
        return ({"a": np.array([2**40, 0])}, {"a": 0.0}, {"__all__": False},
                {"__all__": False}, {})


def test_multi_agent_env_observation_the_dtype_cannot_hold_is_refused():
    from tfrl.algorithms.pg import PGTFPolicy
    from tfrl.evaluation.rollout_worker import RolloutWorker

    worker = RolloutWorker(
        env_creator=_MultiAgentIntEnv,
        policy_spec={"p": (PGTFPolicy, INT32_BOX, gym.spaces.Discrete(2), {})},
        policy_mapping_fn=lambda *a, **k: "p", rollout_fragment_length=4,
        policy_config={"model": {"fcnet_hiddens": [4]}, "seed": 0,
                       "recreate_failed_sub_environments": False})
    with pytest.raises(ValueError, match=r"The value of the observation of env 0, agent 'a' "
                                         r"does not fit the int32 dtype"):
        worker.sample()


# ------------------------------------------------------------ item 2: offline files
SPACES = {"default_policy": (INT32_BOX, gym.spaces.Discrete(3))}


@pytest.mark.parametrize("columns,spaces,message", [
    ({"obs": [[0, 0], [2**40, 0]]}, SPACES,
     r"column 'obs', row 1: 1099511627776 is outside the int32 range \[-2147483648, "
     r"2147483647\], the dtype it is stored in; observations, actions and rewards must be "
     r"numbers that fit their dtype: repair or remove the record"),
    ({"actions": [0, 2**70]}, None,
     r"column 'actions', row 1: 1180591620717411303424 is outside the int64 range"),
    ({"actions": [0, 2**70]}, SPACES,
     r"column 'actions', row 1: 1180591620717411303424 is outside the int64 range"),
    ({"actions": [0, 7]}, SPACES,
     r"column 'actions', row 1: 7 is not in \[0, 3\) \(the space is Discrete\(3\)\); repair "
     r"or remove the record"),
    ({"prev_actions": [-1, 0]}, SPACES, r"column 'prev_actions', row 0: -1 is not in \[0, 3\)"),
])
def test_offline_records_with_integers_the_dtype_cannot_hold_are_refused(columns, spaces,
                                                                        message):
    record = {"type": "SampleBatch", "obs": [[0, 0], [1, 1]], "actions": [0, 1],
              "rewards": [0.0, 1.0], **columns}
    with pytest.raises(ValueError, match="^" + message):
        decode_batch(json.dumps(record), spaces)
    good = decode_batch(json.dumps({**record, **{k: [[0, 0], [1, 1]] if k == "obs" else [0, 2]
                                                 for k in columns}}), SPACES)
    assert good["obs"].dtype == np.int32 and good["obs"].tolist() == [[0, 0], [1, 1]]
