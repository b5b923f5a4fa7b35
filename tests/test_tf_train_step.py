"""TrainStep's start-up path: autograph only for user code, one trace of the step."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import ACT_SPACE, CONFIG, OBS_SPACE, PGPolicy, make_batch, make_policy
from tfrl.policy.train_columns import autograph_converted


class BranchyPG(PGPolicy):
    """A loss with Python control flow on a tensor: needs autograph to trace."""

    def loss(self, model, dist_class, train_batch):
        loss = super().loss(model, dist_class, train_batch)
        if tf.reduce_mean(train_batch["advantages"]) > 100.0:  # never true here
            loss = loss * 0.0
        return loss


class ChangingStatsPG(PGPolicy):
    """Stats whose keys change after the first (symbolic) trace."""

    calls = 0

    def stats(self, train_batch):
        ChangingStatsPG.calls += 1
        stats = super().stats(train_batch)
        if ChangingStatsPG.calls > 1:
            stats["late_stat"] = tf.constant(1.0)
        return stats


def test_user_loss_with_tensor_control_flow_is_still_converted():
    keras.utils.set_random_seed(0)
    policy = BranchyPG(OBS_SPACE, ACT_SPACE, {**CONFIG, "num_sgd_iter": 2})
    reference = make_policy(num_sgd_iter=2)
    batch = make_batch(16)
    info = policy.learn_on_batch(batch)["learner_stats"]
    ref_info = reference.learn_on_batch(batch)["learner_stats"]
    np.testing.assert_allclose(info["total_loss"], ref_info["total_loss"], rtol=1e-6)
    for got, want in zip(policy.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_do_not_convert_functions_are_left_alone():
    @tf.autograph.experimental.do_not_convert
    def plain(x):
        return x + 1

    assert autograph_converted(plain) is plain
    converted = autograph_converted(PGPolicy.stats)
    assert converted is not PGPolicy.stats  # a user function gets converted


def test_learn_runs_every_minibatch_step_in_the_loop():
    policy = make_policy(num_sgd_iter=3, sgd_minibatch_size=8)
    policy.learn_on_batch(make_batch(16))
    assert int(policy.num_grad_updates.numpy()) == 6
    assert int(policy.optimizer.iterations.numpy()) == 6


def test_stats_keys_that_change_after_the_first_trace_raise():
    ChangingStatsPG.calls = 0
    keras.utils.set_random_seed(0)
    policy = ChangingStatsPG(OBS_SPACE, ACT_SPACE, dict(CONFIG))
    with pytest.raises(ValueError, match=r"ChangingStatsPG: the loss and stats returned "
                       r"\['late_stat', 'mean_adv', 'total_loss', 'vf_loss'\] in the train step "
                       r"but \['mean_adv', 'total_loss', 'vf_loss'\] when first traced"):
        policy.learn_on_batch(make_batch(16))
