"""The recurrent variant (`model: use_lstm`) of the policy conformance checks, for every
registered algorithm, each on one action space (`RECURRENT_ONE_SPACE`, alternating
Discrete and Box): compiled functions trace once (acting with state, learning on
sequences), and an update on sequences is the same on one device and on 2 replicas. (That state round-trips bit for bit into an algorithm built
with another seed, that training then continues exactly, and that the SavedModel, state
in and state out, acts like the live policy step by step are checked for the same policy
classes and models on every recurrent algorithm by
test_recurrent_algorithm_conformance.py. The default strategy's update equals 2
replicas' in test_policy_conformance.py, for every pair, so one device's too: the
strategy's code path does not depend on the model.)"""

import numpy as np
import pytest

from conformance_helpers import (assert_each_function_traced_once,
                                 PER_REPLICA_STATS, RECURRENT_MODEL,
                                 RECURRENT_STRATEGY_SUPPORTED, SHARED_RECURRENT_MODEL,
                                 batched_initial_state,
                                 make_recurrent_policy, observations, recurrent_train_batch,
                                 sgd_policy_class)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)


@pytest.mark.parametrize("algo,space", RECURRENT_STRATEGY_SUPPORTED)
def test_recurrent_update_and_stats_are_the_same_on_two_replicas_and_trace_once(algo, space):
    # An SGD policy on one device and one on 2 replicas learn on one 48-row batch of
    # sequences; the 2-replica one then goes on to act, learn and apply gradients with
    # other sizes, and each of its compiled functions has traced once (one case builds
    # and traces both policies for all the checks).
    policy_class = sgd_policy_class(algo)
    policies = {name: make_recurrent_policy(algo, space, name, policy_class=policy_class,
                                            model=SHARED_RECURRENT_MODEL, inference="tf")
                for name in ("one_device", "mirrored")}
    assert [p.strategy.num_replicas_in_sync for p in policies.values()] == [1, 2]
    initial = policies["one_device"].get_weights()
    batch = recurrent_train_batch(policies["one_device"], space, 48, seed=7)
    # Sequences cut at episode ends and every max_seq_len steps; some shorter (padded).
    seq_lens = policies["one_device"].train_batch(batch)["seq_lens"]
    assert seq_lens.sum() == 48 and seq_lens.max() == RECURRENT_MODEL["max_seq_len"]
    assert seq_lens.min() < RECURRENT_MODEL["max_seq_len"]
    infos = {name: p.learn_on_batch(batch)["learner_stats"] for name, p in policies.items()}
    want = policies["one_device"].get_weights()
    # 10x the atol below (BC's gradient on the policy's own actions is zero in
    # expectation, so its update on this batch is small).
    assert max(np.abs(a - b).max() for a, b in zip(want, initial)) > 1e-5
    for got, ref in zip(policies["mirrored"].get_weights(), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg="mirrored")
    # Each replica holds whole sequences with unequal numbers of real steps: the stats
    # are the means over every replica's real timesteps (padding counts for nothing),
    # as on one device. (BC's only stat on a fresh 2-action policy, -log pi(a|s), is
    # about log 2 at every step: replica weighting cannot show in it; it is compared
    # all the same.)
    _assert_same_stats(infos["mirrored"], infos["one_device"], "mirrored")
    _assert_each_function_traces_once(policies["mirrored"], space)


def _assert_each_function_traces_once(policy, space):
    """Acting with state and values for 1-10 agents, learning on 32- or 48-row batches
    of sequences, gradients and their application: each compiled function traces once."""
    assert policy.is_recurrent() and policy.inference == "tf"
    for i in range(4):
        rows = 1 + 3 * i  # 1, 4, 7, 10 agents
        obs = observations(space, rows, seed=i)
        state = batched_initial_state(policy, rows)
        _, state, _ = policy.compute_actions(obs, state, explore=bool(i % 2))
        policy.value(obs, state)
        batch = recurrent_train_batch(policy, space, 32 + 16 * (i % 2), seed=i)
        info = policy.learn_on_batch(batch)
        grads, _ = policy.compute_gradients(batch)
        policy.apply_gradients(grads)
    assert_each_function_traced_once(policy, info)


def _assert_same_stats(got, want, name):
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if name == "mirrored" and key in PER_REPLICA_STATS:
            continue
        np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: {key}")
