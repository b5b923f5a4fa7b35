"""`jit_compile=True` (each replica's loss and gradients compiled with XLA) learns what
`jit_compile=False` does, to float32 rounding, in one traced call per learning phase; a
value other than True/False, an op XLA cannot compile, and a masked mean under several
replicas are rejected with errors that say what to do."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from conformance_helpers import (PER_REPLICA_STATS, make_policy, make_recurrent_policy, recurrent_train_batch,
                                 train_batch)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)
from tfrl.policy.strategy import make_strategy
from tfrl.policy.tf_policy import TFPolicy
from tfrl.policy.tf_train_step import XlaCompileError

pytestmark = pytest.mark.slow  # XLA compiles each policy's step: ~2-5 s per case

CASES = [("PPO", "discrete", False, "one_device"), ("PPO", "discrete", False, "mirrored"),
         ("PPO", "box", True, "one_device"), ("SAC", "box", False, "one_device"),
         ("SAC", "box", False, "mirrored"), ("TD3", "box", False, "one_device")]


def _policies(algo, space, recurrent, strategy):
    build = make_recurrent_policy if recurrent else make_policy
    # XLA draws stateless random numbers with another algorithm than TensorFlow's CPU
    # kernels (same seed, other numbers): TD3's target smoothing noise is switched off
    # so that both learn from the same targets.
    extra = {"target_noise": 0.0} if algo == "TD3" else {}
    off = build(algo, space, "one_device", seed=0, jit_compile=False, **extra)
    on = build(algo, space, strategy, seed=0, jit_compile=True, **extra)
    return off, on


@pytest.mark.parametrize("algo,space,recurrent,strategy", CASES)
def test_jit_compile_learns_what_the_graph_executor_does(algo, space, recurrent, strategy):
    off, on = _policies(algo, space, recurrent, strategy)
    assert on.config["jit_compile"] is True and off.config["jit_compile"] is False
    for a, b in zip(on.get_weights(), off.get_weights()):
        np.testing.assert_array_equal(a, b)
    initial = off.get_weights()
    for call in range(2):
        if recurrent:
            batch = recurrent_train_batch(off, space, 48, seed=call)
            kwargs = {"num_sgd_iter": 2, "sgd_minibatch_size": 16}
        else:
            batch = train_batch(off, space, 64, seed=call)
            kwargs = {"num_sgd_iter": 2, "sgd_minibatch_size": 32}
        stats_off = off.learn_on_batch(batch, **kwargs)["learner_stats"]
        stats_on = on.learn_on_batch(batch, **kwargs)["learner_stats"]
        assert stats_on["num_grad_updates"] == stats_off["num_grad_updates"] > 0
        assert stats_on["num_traces"] == 1  # one compiled learning phase, traced once
        # XLA fuses and reorders float32 arithmetic; Adam turns those rounding
        # differences into small weight differences that the later steps' stats show.
        for key, value in stats_off.items():
            if strategy == "mirrored" and key in PER_REPLICA_STATS:
                continue  # each replica's own value over its half, averaged
            np.testing.assert_allclose(stats_on[key], value, rtol=1e-2, atol=5e-3,
                                       err_msg=key)
    moved = max(np.abs(a - b).max() for a, b in zip(off.get_weights(), initial))
    assert moved > 1e-4  # the updates are large enough to compare
    for a, b in zip(on.get_weights(), off.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_jit_compile_other_than_a_bool_is_rejected(value):
    with pytest.raises(ValueError, match="jit_compile") as error:
        make_policy("PPO", "discrete", jit_compile=value)
    assert repr(value) in str(error.value)


def test_masked_mean_under_two_replicas_is_rejected_with_the_fix():
    policy = make_recurrent_policy("PPO", "discrete", "mirrored", jit_compile=True)
    batch = recurrent_train_batch(policy, "discrete", 48, seed=0)
    with pytest.raises(XlaCompileError, match="one replica") as error:
        policy.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=16)
    message = str(error.value)
    assert "masked global_mean" in message and "jit_compile=False" in message


class _StringOpPolicy(TFPolicy):
    """A loss that round-trips through a string op, which XLA cannot compile."""

    def make_optimizer(self):
        return keras.optimizers.SGD(0.1)

    def loss(self, model, dist_class, train_batch):
        dist_inputs, value = model(train_batch["obs"], training=True)
        # The rewards through their decimal text and back (a data-dependent string op).
        rewards = tf.strings.to_number(tf.strings.as_string(train_batch["rewards"],
                                                            precision=9))
        return self.global_mean((value - rewards) ** 2)


def test_an_op_xla_cannot_compile_is_named():
    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    config = {"seed": 0, "jit_compile": True, "model": {"fcnet_hiddens": [8]}}
    policy = _StringOpPolicy(space, gym.spaces.Discrete(2), config,
                             strategy=make_strategy({}))
    rng = np.random.default_rng(0)
    batch = {"obs": rng.uniform(-1, 1, (8, 4)).astype(np.float32),
             "rewards": rng.normal(size=8).astype(np.float32)}
    with pytest.raises(XlaCompileError, match="jit_compile=False") as error:
        policy.learn_on_batch(batch)
    assert error.value.ops, str(error.value)
    assert any("String" in op for op in error.value.ops), error.value.ops
    # Without XLA the same loss learns.
    plain = _StringOpPolicy(space, gym.spaces.Discrete(2), {**config, "jit_compile": False},
                            strategy=make_strategy({}))
    assert plain.learn_on_batch(batch)["learner_stats"]["num_grad_updates"] == 1
