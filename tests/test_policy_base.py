"""The Policy base class, PolicySpec and make_strategy."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.examples.policy.random_policy import RandomPolicy
from tfrl.policy.policy import Policy, PolicySpec
from tfrl.policy.strategy import make_strategy

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)


class EchoPolicy(Policy):
    """Action = 1 if obs[0] > 0; state passes through incremented; records kwargs; counts
    the rows it acts on in `global_timestep` (the convention `compute_actions` documents)."""

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        timestep=None, **kwargs):
        self.last_call = dict(prev_action_batch=prev_action_batch, explore=explore,
                              prev_reward_batch=prev_reward_batch, timestep=timestep)
        obs = np.asarray(obs_batch)
        states = [np.asarray(s) + 1 for s in (state_batches or [])]
        self.global_timestep += len(obs)
        return (obs[:, 0] > 0).astype(np.int64), states, {"vf_preds": obs.sum(1)}


def test_policy_spec_is_a_four_field_record():
    spec = PolicySpec(EchoPolicy, OBS, ACT, {"lr": 1.0})
    assert spec == PolicySpec(*spec)
    assert PolicySpec(policy_class=EchoPolicy) == (EchoPolicy, None, None, None)
    assert spec._replace(config=None).config is None


def test_base_defaults():
    policy = EchoPolicy(OBS, ACT, None)
    assert policy.config == {} and policy.get_initial_state() == []
    assert not policy.is_recurrent() and policy.num_state_tensors() == 0
    assert policy.get_session() is None and policy.get_weights() == {}
    assert policy.view_requirements["obs"].space is OBS
    assert policy.view_requirements["new_obs"].data_col == "obs"
    policy.on_global_var_update({"timestep": 42})
    assert policy.get_state() == {"weights": {}, "global_timestep": 42}
    batch = {"obs": np.zeros((2, 3))}
    assert policy.postprocess_trajectory(batch) is batch
    with pytest.raises(NotImplementedError, match="EchoPolicy does not compute gradients"):
        policy.learn_on_batch(batch)
    with pytest.raises(NotImplementedError, match=r"EchoPolicy.learn_on_batch\(\) learns in one "
                                                  r"step on the whole batch; received "
                                                  r"num_sgd_iter=3, sgd_minibatch_size=None"):
        policy.learn_on_batch(batch, num_sgd_iter=3)
    with pytest.raises(NotImplementedError, match="sgd_minibatch_size=2. Override learn_on_batch"):
        policy.learn_on_batch(batch, sgd_minibatch_size=2)
    with pytest.raises(NotImplementedError, match="EchoPolicy does not compute gradients"):
        policy.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=0)  # one whole step
    with pytest.raises(TypeError, match="policy.config is read-only"):
        policy.config["lr"] = 1.0
    with pytest.raises(NotImplementedError, match="does not apply gradients"):
        policy.apply_gradients([])
    with pytest.raises(NotImplementedError, match="cannot export a model"):
        policy.export_model("/tmp/x")
    with pytest.raises(NotImplementedError, match="cannot export a checkpoint"):
        policy.export_checkpoint("/tmp/x")


def test_default_value_is_the_deterministic_vf_preds():
    policy = EchoPolicy(OBS, ACT, None)
    policy.global_timestep = 7
    obs = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    np.testing.assert_array_equal(policy.value(obs), [6.0, -0.5])
    # The counting compute_actions saw timestep 7; value() is not acting: still 7.
    assert policy.last_call["explore"] is False and policy.last_call["timestep"] == 7
    assert policy.global_timestep == 7
    with pytest.raises(NotImplementedError, match=r"RandomPolicy has no value function: "
                                                  r"compute_actions\(\) returns no 'vf_preds'"):
        RandomPolicy(OBS, ACT, {}).value(obs)


def test_policy_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Policy(OBS, ACT, {})


def test_constructor_errors():
    with pytest.raises(TypeError, match=r"`observation_space` must be a gymnasium Space; received \(3,\)"):
        EchoPolicy((3,), ACT, {})
    with pytest.raises(TypeError, match="`action_space` must be a gymnasium Space"):
        EchoPolicy(OBS, 2, {})
    with pytest.raises(TypeError, match="`config` must be a dict or None; received list"):
        EchoPolicy(OBS, ACT, [])


def test_set_state_errors_and_round_trip():
    policy = EchoPolicy(OBS, ACT, {})
    policy.set_state({"weights": {}, "global_timestep": 7})
    assert policy.global_timestep == 7
    with pytest.raises(ValueError, match=r"with a 'weights' entry; received dict with keys \['w'\]"):
        policy.set_state({"w": 1})
    with pytest.raises(ValueError, match="received list"):
        policy.set_state([])


def test_compute_single_action_adds_and_removes_the_batch_axis():
    policy = EchoPolicy(OBS, ACT, {})
    action, state, extras = policy.compute_single_action(
        np.array([0.5, 0.0, 0.0]), [np.array([1.0])], prev_reward=1.0, explore=False, timestep=3)
    assert action == 1 and state[0] == 2.0 and extras["vf_preds"] == 0.5
    assert policy.last_call["explore"] is False and policy.last_call["timestep"] == 3
    assert policy.global_timestep == 1
    np.testing.assert_array_equal(policy.last_call["prev_reward_batch"], [1.0])
    action, state, _ = policy.compute_single_action(
        input_dict={"obs": np.array([-0.5, 0.0, 0.0]), "state_in_0": np.array([5.0])})
    assert action == 0 and state[0] == 6.0
    with pytest.raises(ValueError, match="needs `obs`"):
        policy.compute_single_action()


def test_compute_actions_from_input_dict():
    policy = EchoPolicy(OBS, ACT, {})
    actions, states, _ = policy.compute_actions_from_input_dict(
        {"obs": np.array([[1.0, 0, 0], [-1.0, 0, 0]]), "state_in_0": np.zeros(2),
         "prev_actions": np.array([0, 1])}, explore=True)
    np.testing.assert_array_equal(actions, [1, 0])
    np.testing.assert_array_equal(states[0], [1.0, 1.0])
    np.testing.assert_array_equal(policy.last_call["prev_action_batch"], [0, 1])
    with pytest.raises(KeyError, match=r"needs an 'obs' column; received columns \['new_obs'\]"):
        policy.compute_actions_from_input_dict({"new_obs": np.zeros((1, 3))})


def test_random_policy_is_a_policy():
    policy = RandomPolicy(OBS, ACT, {"seed": 0})
    assert isinstance(policy, Policy)
    actions, _, _ = policy.compute_actions(np.zeros((5, 3), np.float32))
    assert actions.shape == (5,) and ACT.contains(int(actions[0]))


def test_make_strategy():
    assert isinstance(make_strategy({}), tf.distribute.OneDeviceStrategy)
    one = make_strategy({"num_gpus": 1, "_fake_gpus": True})
    assert isinstance(one, tf.distribute.OneDeviceStrategy)
    two = make_strategy({"num_gpus": 2, "_fake_gpus": True})
    assert isinstance(two, tf.distribute.MirroredStrategy) and two.num_replicas_in_sync == 2


def test_make_strategy_errors():
    with pytest.raises(ValueError, match=r"num_gpus=3 \(fake GPUs: logical CPU devices\), but only "
                                         r"2 CPU device\(s\) are present"):
        make_strategy({"num_gpus": 3, "_fake_gpus": True})
    gpus = len(tf.config.list_logical_devices("GPU"))
    with pytest.raises(ValueError, match=rf"num_gpus=8, but only {gpus} GPU device\(s\).*_fake_gpus"):
        make_strategy({"num_gpus": 8})
    with pytest.raises(ValueError, match=r"must be a number >= 0; received num_gpus=-1"):
        make_strategy({"num_gpus": -1})
    with pytest.raises(ValueError, match="must be a number >= 0; received num_gpus='2'"):
        make_strategy({"num_gpus": "2"})
    with pytest.raises(ValueError, match=r"whole number of devices; received num_gpus=1.5"):
        make_strategy({"num_gpus": 1.5})


def test_make_strategy_shares_one_strategy_per_device_set():
    assert make_strategy({"num_gpus": 2, "_fake_gpus": True}) is make_strategy(
        {"num_gpus": 2, "_fake_gpus": True})
    assert make_strategy({}) is make_strategy({"num_gpus": 0})


def test_view_requirement_helpers():
    from tfrl.policy.policy import action_output_view_requirements, recurrent_view_requirements

    assert sorted(action_output_view_requirements()) == [
        "action_dist_inputs", "action_logp", "action_prob", "vf_preds"]
    assert recurrent_view_requirements([], 20) == {}
    reqs = recurrent_view_requirements([np.zeros(3, np.float32)], 8)
    assert sorted(reqs) == ["state_in_0", "state_out_0"]
    assert reqs["state_in_0"].batch_repeat_value == 8
