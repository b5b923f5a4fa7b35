"""Every registered algorithm's policy, on a Discrete and a Box action space: updates
agree across strategies and compiled functions trace once, the SavedModel acts like the
live policy, and a wrong observation shape is rejected clearly. (That state round-trips
bit for bit, into a policy built with another seed, and training continues exactly is
checked for every pair by test_algorithm_conformance.py, through `save()`/`restore()`.)"""

import numpy as np
import pytest
import tensorflow as tf

from conformance_helpers import (assert_each_function_traced_once,
                                 PER_REPLICA_STATS, POLICY_SUPPORTED, SPACES,
                                 make_policy, observations,
                                 sgd_policy_class, train_batch)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

pytestmark = pytest.mark.parametrize("algo,space", POLICY_SUPPORTED)


def test_same_update_under_every_strategy_and_each_function_traces_once(algo, space):
    # An SGD policy under the default strategy and one on 2 replicas learn on the same
    # batch; the 2-replica one (acting on the TF path) then goes on to act, learn and
    # apply gradients with other batch sizes, and each of its compiled functions has
    # traced once (one case builds and traces both policies for both checks). One device
    # (`OneDeviceStrategy`) learns as 2 replicas do in test_recurrent_conformance.py, so
    # as the default strategy too.
    policy_class = sgd_policy_class(algo)
    policies = {name: make_policy(algo, space, name, policy_class=policy_class,
                                  inference="tf")
                for name in ("default", "mirrored")}
    assert [p.strategy.num_replicas_in_sync for p in policies.values()] == [1, 2]
    initial = policies["default"].get_weights()
    batch = train_batch(policies["default"], space, 32, seed=7)
    infos = {name: p.learn_on_batch(batch)["learner_stats"] for name, p in policies.items()}
    want = policies["default"].get_weights()
    # The update is large enough for a wrong gradient scale to show (10x the atol below;
    # BC's gradient on the policy's own actions is zero in expectation, so its update on
    # this batch is small: 2.7e-5).
    assert max(np.abs(a - b).max() for a, b in zip(want, initial)) > 1e-5
    for name in ("mirrored",):
        for got, ref in zip(policies[name].get_weights(), want):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=name)
        assert sorted(infos[name]) == sorted(infos["default"])
        for key, value in infos["default"].items():
            if name == "mirrored" and key in PER_REPLICA_STATS:
                assert -1.0 <= infos[name][key] <= 1.0, (key, infos[name][key])
                continue
            np.testing.assert_allclose(infos[name][key], value, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{name}: {key}")
    _assert_each_function_traces_once(policies["mirrored"], space)


def _assert_each_function_traces_once(policy, space):
    """Acting, values, learning, gradients and their application with 1-10 observation
    rows and 32- or 48-row batches: each compiled function traces once."""
    assert policy.inference == "tf"
    for i in range(4):
        obs = observations(space, 1 + 3 * i, seed=i)  # 1, 4, 7, 10 rows
        policy.compute_actions(obs, explore=bool(i % 2))
        policy.value(obs)
        batch = train_batch(policy, space, 32 + 16 * (i % 2), seed=i)  # 32 or 48 rows
        info = policy.learn_on_batch(batch)
        grads, _ = policy.compute_gradients(batch)
        policy.apply_gradients(grads)
    assert_each_function_traced_once(policy, info)
    assert info["num_traces"] == policy.num_traces


def test_saved_model_acts_like_the_live_policy(algo, space, tmp_path):
    policy = make_policy(algo, space)
    policy.learn_on_batch(train_batch(policy, space, 32, seed=1))
    policy.export_model(str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    obs = observations(space, 6, seed=4)
    actions, _, extras = policy.compute_actions(obs, explore=False)
    out = loaded.signatures["deterministic_action"](obs=tf.constant(obs))
    # Live actions may come from numpy inference: equal up to float rounding.
    np.testing.assert_allclose(out["actions"].numpy(), actions, rtol=1e-5, atol=1e-6)
    for key in ("action_dist_inputs", "vf_preds"):
        np.testing.assert_allclose(out[key].numpy(), extras[key], rtol=1e-5, atol=1e-6)
    # Sampling in the SavedModel takes no seed: check what it returns, not its values.
    sampled = loaded.signatures["stochastic_action"](obs=tf.constant(obs))
    action_space = SPACES[space][1]
    sampled_actions = sampled["actions"].numpy()
    assert sampled_actions.shape == (6,) + action_space.shape
    assert sampled_actions.dtype == action_space.dtype
    if space == "discrete":
        assert all(action_space.contains(int(a)) for a in sampled_actions)
    else:  # a Gaussian's samples are unbounded (clipped only when sent to the env)
        assert np.all(np.isfinite(sampled_actions))
    assert np.all(np.isfinite(sampled["action_logp"].numpy()))


@pytest.mark.parametrize("inference", ["numpy", "tf"])
def test_wrong_observation_shape_is_rejected_naming_both_shapes(algo, space, inference):
    policy = make_policy(algo, space, inference=inference)
    assert policy.inference == inference
    obs_dim = SPACES[space][0].shape[0]
    bad = np.zeros((3, obs_dim + 1), np.float32)
    expected = rf"must have shape \[B, {obs_dim}\].*received shape \(3, {obs_dim + 1}\)"
    with pytest.raises(ValueError, match=expected):
        policy.compute_actions(bad)
    with pytest.raises(ValueError, match=expected):
        policy.value(bad)
    batch = train_batch(policy, space, 16, seed=0)
    batch["obs"] = np.zeros((16, obs_dim + 1), np.float32)
    with pytest.raises(ValueError, match=rf"'obs'.*\[B, {obs_dim}\].*received shape \(16, {obs_dim + 1}\)"):
        policy.learn_on_batch(batch)
