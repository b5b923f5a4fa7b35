"""The learner's non-finite guard: a NaN/inf loss or gradient never reaches the weights."""

import numpy as np
import pytest

from policy_helpers import make_batch, make_policy
from tfrl.policy.tf_train_step import NonFiniteUpdateError


def _state(policy):
    """Weights and optimizer variables (Adam's moments and iteration count)."""
    return ([w.copy() for w in policy.get_weights()]
            + [np.array(v.numpy()) for v in policy.optimizer.variables])


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _bad_batch(row, column="advantages", value=np.nan):
    batch = make_batch(16)
    batch[column] = batch[column].copy()
    batch[column][row] = value
    return batch


SGD = dict(num_sgd_iter=2, sgd_minibatch_size=8, shuffle_sequences=False)


@pytest.mark.parametrize("column,value,named", [
    ("advantages", np.nan, ["total_loss=nan", "mean_adv=nan"]),
    ("obs", np.inf, ["grad_norm="]),
])
def test_nonfinite_step_raises_naming_the_stats_and_leaves_weights_and_optimizer(column, value,
                                                                                 named):
    policy = make_policy(optimizer="adam", **SGD)
    policy.learn_on_batch(make_batch(16, seed=1))  # Adam's slots exist and are non-zero.
    before = _state(policy)
    batch = make_batch(16)
    batch[column] = batch[column].copy()
    batch[column][3] = value
    with pytest.raises(NonFiniteUpdateError) as info:
        policy.learn_on_batch(batch)
    message = str(info.value)
    assert "PGPolicy" in message and "optimizer step 0 of 4" in message
    assert "after 4 applied updates" in message
    for name in named:
        assert name in message
    assert isinstance(info.value, FloatingPointError)
    assert info.value.step == 0 and info.value.policy_class == "PGPolicy"
    _assert_same(_state(policy), before)
    assert int(policy.num_grad_updates.numpy()) == 4


def test_raise_keeps_the_finite_steps_before_the_bad_one_and_stops_there():
    # Row 12 is in the second minibatch: step 0 is applied, step 1 is not, nor 2 and 3.
    policy = make_policy(**SGD)
    reference = make_policy(num_sgd_iter=1, sgd_minibatch_size=8, shuffle_sequences=False)
    with pytest.raises(NonFiniteUpdateError, match="optimizer step 1 of 4"):
        policy.learn_on_batch(_bad_batch(12))
    reference.learn_on_batch({k: v[:8] for k, v in make_batch(16).items()})
    _assert_same(policy.get_weights(), reference.get_weights())
    assert int(policy.num_grad_updates.numpy()) == 1


def test_skip_applies_only_the_finite_steps_and_counts_the_others():
    policy = make_policy(nonfinite_updates="skip", **SGD)
    reference = make_policy(**SGD)
    stats = policy.learn_on_batch(_bad_batch(12))["learner_stats"]
    ref_stats = reference.learn_on_batch({k: v[:8] for k, v in make_batch(16).items()},
                                         num_sgd_iter=2)["learner_stats"]
    _assert_same(policy.get_weights(), reference.get_weights())
    assert stats["num_nonfinite_updates_skipped"] == 2
    assert stats["num_grad_updates"] == 2
    # The stats are the means over the applied steps.
    np.testing.assert_allclose(stats["total_loss"], ref_stats["total_loss"], rtol=1e-6)
    assert np.isfinite(stats["mean_adv"])
    clean = policy.learn_on_batch(make_batch(16))["learner_stats"]
    assert clean["num_nonfinite_updates_skipped"] == 0


def test_the_guard_adds_no_trace():
    policy = make_policy(nonfinite_updates="skip", **SGD)
    for batch in (make_batch(16), _bad_batch(0), _bad_batch(12, "obs", np.inf), make_batch(16)):
        info = policy.learn_on_batch(batch)
    assert info["learner_stats"]["num_traces"] == 1
    raising = make_policy(**SGD)
    raising.learn_on_batch(make_batch(16))
    with pytest.raises(NonFiniteUpdateError):
        raising.learn_on_batch(_bad_batch(5))
    assert raising.learn_on_batch(make_batch(16))["learner_stats"]["num_traces"] == 1


@pytest.mark.parametrize("mode", ["raise", "skip"])
def test_mirrored_replicas_agree_when_only_one_sees_the_nan(mode):
    # 2 replicas each take half of a minibatch: row 2 is in replica 0's half only.
    policy = make_policy("mirrored", nonfinite_updates=mode, num_sgd_iter=1,
                         sgd_minibatch_size=16, shuffle_sequences=False)
    before = _state(policy)
    if mode == "raise":
        with pytest.raises(NonFiniteUpdateError, match="total_loss=nan"):
            policy.learn_on_batch(_bad_batch(2))
    else:
        stats = policy.learn_on_batch(_bad_batch(2))["learner_stats"]
        assert stats["num_nonfinite_updates_skipped"] == 1
    _assert_same(_state(policy), before)
    assert int(policy.num_grad_updates.numpy()) == 0
    policy.learn_on_batch(make_batch(16))  # and it still learns
    assert int(policy.num_grad_updates.numpy()) == 1


def test_tf_data_input_is_guarded_too():
    policy = make_policy(learn_input="tf_data", **SGD)
    before = _state(policy)
    with pytest.raises(NonFiniteUpdateError, match="optimizer step 0 of 4"):
        policy.learn_on_batch(_bad_batch(0))
    _assert_same(_state(policy), before)


def test_unknown_nonfinite_updates_value_is_rejected():
    with pytest.raises(ValueError, match=r"nonfinite_updates'\] must be one of \('raise', "
                                         r"'skip'\); received 'ignore'"):
        make_policy(nonfinite_updates="ignore")


@pytest.mark.parametrize("mode", ["raise", "skip"])
def test_apply_gradients_refuses_nonfinite_gradients(mode):
    policy = make_policy(nonfinite_updates=mode)
    grads, _ = policy.compute_gradients(make_batch(16))
    grads[0] = grads[0].copy()
    grads[0].flat[0] = np.inf
    before = policy.get_weights()
    if mode == "raise":
        with pytest.raises(NonFiniteUpdateError, match="PGPolicy: apply_gradients\\(\\): "
                           "non-finite grad_norm=inf"):
            policy.apply_gradients(grads)
    else:
        policy.apply_gradients(grads)
    _assert_same(policy.get_weights(), before)
    assert int(policy.num_grad_updates.numpy()) == 0
