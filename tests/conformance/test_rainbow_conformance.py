"""The Rainbow variant of DQN (C51 with noisy nets, dueling and double Q on top of the
default config): the policy-level conformance checks that its new parts could break.
One update under one device and under a 2-replica MirroredStrategy agree (the noise is
keyed by the update counter, so both replicas draw what one device draws) and each
compiled function, noisy acting included, traces once; the SavedModel acts like the live
policy. (Exact checkpoint restores of these options: tests/test_dqn_rainbow.py.) About
20 s: building and tracing a 2-replica policy's five compiled functions dominates, as in
the registered algorithms' cases."""

import numpy as np
import tensorflow as tf

from conformance_helpers import (assert_each_function_traced_once, make_policy,
                                 observations, sgd_policy_class, train_batch)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

RAINBOW = {"num_atoms": 11, "v_min": -5.0, "v_max": 5.0, "noisy": True, "dueling": True,
           "double_q": True}


def test_rainbow_same_update_under_strategies_traces_once_and_exports(tmp_path):
    policy_class = sgd_policy_class("DQN")
    policies = {name: make_policy("DQN", "discrete", name, policy_class=policy_class,
                                  **RAINBOW)
                for name in ("one_device", "mirrored")}
    assert [p.inference for p in policies.values()] == ["tf", "tf"]
    initial = policies["one_device"].get_weights()
    batch = train_batch(policies["one_device"], "discrete", 32, seed=7)
    infos = {name: p.learn_on_batch(batch)["learner_stats"] for name, p in policies.items()}
    want = policies["one_device"].get_weights()
    assert min(np.abs(a - b).max() for a, b in zip(want, initial)) > 1e-6  # sigma too
    for got, ref in zip(policies["mirrored"].get_weights(), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    for key, value in infos["one_device"].items():
        np.testing.assert_allclose(infos["mirrored"][key], value, rtol=1e-4, atol=1e-6,
                                   err_msg=key)
    policy = policies["mirrored"]
    for i in range(4):
        obs = observations("discrete", 1 + 3 * i, seed=i)  # 1, 4, 7, 10 rows
        policy.compute_actions(obs, explore=bool(i % 2))
        policy.value(obs)
        batch = train_batch(policy, "discrete", 32 + 16 * (i % 2), seed=i)
        info = policy.learn_on_batch(batch)
        grads, _ = policy.compute_gradients(batch)
        policy.apply_gradients(grads)
    assert policy.num_traces["noisy_actions"] == 1
    assert_each_function_traced_once(policy, info)
    # The SavedModel's deterministic action: the noise-free network's greedy action.
    source = policies["one_device"]
    source.export_model(str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    obs = observations("discrete", 6, seed=4)
    actions, _, extras = source.compute_actions(obs, explore=False)
    out = loaded.signatures["deterministic_action"](obs=tf.constant(obs))
    np.testing.assert_array_equal(out["actions"].numpy(), actions)
    for key in ("action_dist_inputs", "vf_preds"):
        np.testing.assert_allclose(out[key].numpy(), extras[key], rtol=1e-5, atol=1e-6)
