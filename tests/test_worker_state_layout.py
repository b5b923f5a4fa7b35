"""One worker-state layout: `RolloutWorker.get_state()`/`save()` and an Algorithm's
checkpoint of its local worker hold the same dict (`tfrl.evaluation.rollout_worker.state`)."""

import pickle

import gymnasium as gym
import numpy as np
import pytest

from rollout_worker_helpers import CountingPolicy
from toy_envs import CounterEnv
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.evaluation.rollout_worker.state import get_worker_state, set_worker_state
from tfrl.policy.policy import PolicySpec

BOX3 = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
LAYOUT = ["filters", "format", "global_vars", "policies"]


def two_policy_worker(**kw):
    return RolloutWorker(
        env_creator=lambda ctx: CounterEnv(), num_workers=1,
        policy_spec={"pa": PolicySpec(CountingPolicy, BOX3, gym.spaces.Discrete(2)),
                     "pb": PolicySpec(CountingPolicy, BOX3, gym.spaces.Discrete(2))},
        policy_mapping_fn=lambda agent_id, episode, worker=None, **k: "pa",
        observation_filter="MeanStdFilter", **kw)


def test_worker_and_algorithm_share_one_layout():
    w = two_policy_worker()
    w.set_weights({"pa": {"w": np.array([1.0, 2.0])}, "pb": {"w": np.array([5.0, 6.0])}})
    w.set_global_vars({"timestep": 7})
    worker_view = w.get_state()
    checkpoint_view = get_worker_state(w, specs=False)  # what Algorithm.__getstate__ stores
    assert sorted(worker_view) == LAYOUT + ["policy_specs"]
    assert sorted(checkpoint_view) == LAYOUT
    assert worker_view["format"] == checkpoint_view["format"] == "tfrl.RolloutWorker.v2"
    assert sorted(worker_view["policies"]) == sorted(checkpoint_view["policies"]) == ["pa", "pb"]
    np.testing.assert_array_equal(checkpoint_view["policies"]["pb"]["weights"]["w"], [5.0, 6.0])
    assert checkpoint_view["global_vars"] == {"timestep": 7}
    assert worker_view["policy_specs"]["pa"].policy_class is CountingPolicy
    # Each restores into the other's reader.
    fresh = two_policy_worker()
    set_worker_state(fresh, checkpoint_view, same_policies=True)
    np.testing.assert_array_equal(fresh.get_weights()["pb"]["w"], [5.0, 6.0])
    other = two_policy_worker()
    other.restore(w.save())
    np.testing.assert_array_equal(other.get_weights()["pa"]["w"], [1.0, 2.0])
    assert other.get_global_vars() == {"timestep": 7}


def test_same_policies_refuses_other_policy_ids():
    w = two_policy_worker()
    state = get_worker_state(w, specs=False)
    del state["policies"]["pb"]
    with pytest.raises(ValueError, match=r"the checkpoint holds policies \['pa'\]; this algorithm "
                                         r"has \['pa', 'pb'\]"):
        set_worker_state(two_policy_worker(), state, same_policies=True)
    # Without it (RolloutWorker.set_state), the missing policy keeps its own state.
    target = two_policy_worker()
    target.set_weights({"pb": {"w": np.array([9.0, 9.0])}})
    set_worker_state(target, state)
    np.testing.assert_array_equal(target.get_weights()["pb"]["w"], [9.0, 9.0])


def test_first_layout_with_state_key_is_read():
    w = two_policy_worker()
    w.set_weights({"pa": {"w": np.array([3.0, 4.0])}})
    old = get_worker_state(w)
    old["state"] = old.pop("policies")
    old["format"] = "tfrl.RolloutWorker.v1"
    fresh = two_policy_worker()
    fresh.restore(pickle.dumps(old))
    np.testing.assert_array_equal(fresh.get_weights()["pa"]["w"], [3.0, 4.0])
