"""TFPolicy with the catalog's LSTM: state in/out when acting, sequence batches when learning."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.strategy import make_strategy
from tfrl.policy.tf_policy import TFPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)
MODEL = {"use_lstm": True, "lstm_cell_size": 4, "fcnet_hiddens": [8], "max_seq_len": 4}
SEQ_LENS = np.array([4, 3, 4, 2, 1, 4, 4, 3], np.int32)


class RecurrentPG(TFPolicy):
    def make_optimizer(self):
        return keras.optimizers.SGD(self.config["lr"])

    def loss(self, model, dist_class, train_batch):
        dist_inputs, value = self.forward(model, train_batch)  # [B, T, n], [B, T]
        mask = self.valid_mask(train_batch)  # [B, T]
        logp = dist_class(dist_inputs, model).logp(train_batch["actions"])  # [B, T]
        advantages = train_batch["advantages"]
        return (-self.global_mean(logp * advantages, mask)
                + self.global_mean((value - advantages) ** 2, mask))


def _policy(strategy="one_device", **config):
    keras.utils.set_random_seed(0)
    strategy = make_strategy({"num_gpus": 2, "_fake_gpus": True} if strategy == "mirrored" else {})
    return RecurrentPG(OBS, ACT, {"seed": 0, "lr": 0.1, "model": MODEL, "num_sgd_iter": 2,
                                  "sgd_minibatch_size": 8, **config}, strategy=strategy)


def _sequence_batch(seed=0, seq_lens=SEQ_LENS):
    rng = np.random.default_rng(seed)
    rows = int(seq_lens.sum())
    return SampleBatch({
        "obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        "actions": rng.integers(0, 2, rows),
        "advantages": rng.normal(size=rows).astype(np.float32),
        "state_in_0": rng.normal(size=(len(seq_lens), 4)).astype(np.float32),
        "state_in_1": rng.normal(size=(len(seq_lens), 4)).astype(np.float32),
        "seq_lens": seq_lens,
    })


def test_acting_carries_state_like_the_model_on_a_sequence():
    policy = _policy()
    assert policy.is_recurrent() and policy.num_state_tensors() == 2
    init = policy.get_initial_state()
    assert [s.shape for s in init] == [(4,), (4,)]
    obs = np.random.default_rng(0).uniform(-1, 1, (2, 3, 3)).astype(np.float32)  # [B, T, 3]
    state = [np.stack([s] * 2) for s in init]
    values = []
    for t in range(3):
        _, state, extras = policy.compute_actions(obs[:, t], state, explore=False)
        values.append(extras["vf_preds"])
    _, value, state_out = policy.model((obs, [np.stack([s] * 2) for s in init],
                                        np.array([3, 3], np.int32)))
    np.testing.assert_allclose(np.stack(values, 1), value.numpy(), atol=1e-5)
    np.testing.assert_allclose(state[0], state_out[0].numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"has 2 state tensor\(s\); received 0"):
        policy.compute_actions(obs[:, 0])
    with pytest.raises(ValueError, match=r"state_batches\[1\] must have shape \(2, 4\); received "
                                         r"\(1, 4\)"):
        policy.compute_actions(obs[:, 0], [state[0], state[1][:1]])


def test_sequence_learning_matches_across_strategies_and_traces_once():
    single, mirrored = _policy(), _policy("mirrored")
    for policy in (single, mirrored):
        for seed in range(3):
            lens = np.roll(SEQ_LENS, seed)
            info = policy.learn_on_batch(_sequence_batch(seed, lens))
        assert policy.num_traces["learn_on_batch"] == 1
        assert info["learner_stats"]["num_grad_updates"] == 3 * 2 * 4
    for a, b in zip(single.get_weights(), mirrored.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_padded_and_unpadded_batches_learn_the_same():
    batch = _sequence_batch()
    padded = SampleBatch({k: v for k, v in batch.items()}, _max_seq_len=4)
    padded.right_zero_pad(4)
    a, b = _policy(num_sgd_iter=1, sgd_minibatch_size=None), _policy(num_sgd_iter=1,
                                                                      sgd_minibatch_size=None)
    a.learn_on_batch(batch)
    b.learn_on_batch(padded)
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(x, y, atol=1e-6)


def test_sequence_batch_errors():
    policy = _policy()
    batch = _sequence_batch()
    with pytest.raises(ValueError, match=r"the policy is recurrent, so the batch needs 'seq_lens'"):
        policy.learn_on_batch({k: v for k, v in batch.items() if k != "seq_lens"})
    with pytest.raises(ValueError, match=r"column 'state_in_0' must have one row per sequence: 8 "
                                         r"rows for seq_lens \[4, 3, 4, 2, 1, 4, 4, 3\]; received 7"):
        policy.learn_on_batch({**batch, "state_in_0": batch["state_in_0"][:7]})
    with pytest.raises(ValueError, match=r"column 'obs' must have one row per timestep: 26 rows "
                                         r"for seq_lens \[5, 3, 4, 2, 1, 4, 4, 3\]; received 25"):
        policy.learn_on_batch({**batch, "seq_lens": SEQ_LENS + np.eye(8, dtype=np.int32)[0]})
    with pytest.raises(ValueError, match=r"does not take sequence batches yet"):
        _policy(learn_input="tf_data").learn_on_batch(batch)
    with pytest.raises(ValueError, match=r"\(16 sequences\) is larger than the batch \(8 "
                                         r"sequences\)"):
        _policy(sgd_minibatch_size=64).learn_on_batch(batch)


def test_view_requirements_name_state_and_model_output_columns():
    requirements = _policy().view_requirements
    state_in = requirements["state_in_1"]
    assert state_in.data_col == "state_out_1" and state_in.shift_arr == [-1]
    assert state_in.batch_repeat_value == 4 and state_in.space.shape == (4,)
    assert requirements["state_out_0"].used_for_training is False
    assert requirements["vf_preds"].used_for_compute_actions is False
    assert "action_logp" in requirements and "obs" in requirements
