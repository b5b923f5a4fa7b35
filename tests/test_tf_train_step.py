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


class StepCountingPG(PGPolicy):
    """Stats that show which optimizer step and which rows each minibatch step saw."""

    def stats(self, train_batch):
        obs = train_batch["obs"]
        return {"step": tf.cast(self.optimizer.iterations, tf.float32),  # before this update
                "rows": tf.cast(tf.shape(obs)[0], tf.float32),
                "max_row_id": tf.reduce_max(obs[:, 0])}


def _row_id_batch(num_rows):
    batch = make_batch(num_rows)
    batch["obs"][:, 0] = np.arange(num_rows, dtype=np.float32)  # obs[:, 0] is the row id
    return batch


def test_minibatch_rule_drops_each_epochs_remainder_and_stats_average_every_step():
    keras.utils.set_random_seed(0)
    policy = StepCountingPG(OBS_SPACE, ACT_SPACE, {"seed": 0, "lr": 0.01,
                                                   "shuffle_sequences": False})
    assert isinstance(policy.optimizer, keras.optimizers.SGD)
    # 10 rows, minibatches of 4, 3 epochs: floor(10 / 4) = 2 steps per epoch, 6 in all.
    stats = policy.learn_on_batch(_row_id_batch(10), num_sgd_iter=3,
                                  sgd_minibatch_size=4)["learner_stats"]
    assert int(policy.optimizer.iterations.numpy()) == 6
    assert stats["num_grad_updates"] == 6
    # The mean over all 6 steps of all epochs (the last epoch alone: 4.5; last step: 5).
    assert stats["step"] == pytest.approx((0 + 1 + 2 + 3 + 4 + 5) / 6)
    assert stats["rows"] == 4.0  # every minibatch is full: no short last minibatch
    # Unshuffled, each epoch learns on rows 0-3 and 4-7; rows 8 and 9 are dropped.
    assert stats["max_row_id"] == pytest.approx((3 + 7) / 2)


def test_shuffled_epochs_drop_a_different_remainder_each_epoch():
    keras.utils.set_random_seed(0)
    policy = StepCountingPG(OBS_SPACE, ACT_SPACE, {"seed": 0, "lr": 0.01})
    stats = policy.learn_on_batch(_row_id_batch(10), num_sgd_iter=4,
                                  sgd_minibatch_size=3)["learner_stats"]
    assert int(policy.optimizer.iterations.numpy()) == 4 * 3  # floor(10 / 3) = 3 per epoch
    assert stats["rows"] == 3.0
    assert stats["step"] == pytest.approx(sum(range(12)) / 12)


def test_sgd_arguments_change_one_call_only_and_share_one_trace():
    policy = make_policy(num_sgd_iter=1, sgd_minibatch_size=None)
    batch = make_batch(16)
    policy.learn_on_batch(batch)  # the config: one epoch, the whole batch
    assert int(policy.optimizer.iterations.numpy()) == 1
    policy.learn_on_batch(batch, num_sgd_iter=3, sgd_minibatch_size=8)
    assert int(policy.optimizer.iterations.numpy()) == 1 + 3 * 2
    policy.learn_on_batch(batch, sgd_minibatch_size=0)  # 0: the whole batch
    policy.learn_on_batch(batch)
    assert int(policy.optimizer.iterations.numpy()) == 1 + 6 + 1 + 1
    assert policy.config["num_sgd_iter"] == 1 and policy.config["sgd_minibatch_size"] is None
    assert policy.num_traces["learn_on_batch"] == 1


def test_sgd_argument_errors():
    policy = make_policy()
    batch = make_batch(16)
    with pytest.raises(ValueError, match=r"learn_on_batch\(\): num_sgd_iter must be an int >= 1 "
                                         r"\(or None for the policy's config\); received 0"):
        policy.learn_on_batch(batch, num_sgd_iter=0)
    with pytest.raises(ValueError, match=r"sgd_minibatch_size must be an int >= 0 .*received -1"):
        policy.learn_on_batch(batch, sgd_minibatch_size=-1)
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=32 \(32 rows\) is larger than the "
                                         r"batch \(16 rows\)"):
        policy.learn_on_batch(batch, sgd_minibatch_size=32)
    assert int(policy.optimizer.iterations.numpy()) == 0
