"""TFPolicy: compiled acting and learning, the same under every strategy, traced once."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import (ACT_SPACE, CONFIG, OBS_SPACE, STRATEGIES, PGPolicy, TinyModel, make_batch,
                            make_policy, pg_loss_numpy_free)
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.tf_policy import TFPolicy


# ------------------------------------------------------------------ equivalence


@pytest.fixture(scope="module")
def default_strategy_update():
    """`default_strategy_update(learn_input)`: the weights and info of a default-strategy
    policy after `learn_on_batch(make_batch(64))`, computed once per module for the
    strategy cases below to compare with (each case still builds and updates its own
    policy, the "default" case a second default-strategy one)."""
    results = {}

    def get(learn_input):
        if learn_input not in results:
            reference = make_policy("default", learn_input=learn_input)
            info = reference.learn_on_batch(make_batch(64))
            results[learn_input] = reference.get_weights(), info
        return results[learn_input]

    return get


@pytest.fixture(scope="module")
def default_strategy_gradients():
    """The gradients a default-strategy policy computes on `make_batch(32)` and its weights
    after applying them, computed once per module (each case builds its own policy)."""
    reference = make_policy("default")
    ref_grads, _ = reference.compute_gradients(make_batch(32))
    reference.apply_gradients(ref_grads)
    return ref_grads, reference.get_weights()


@pytest.mark.parametrize("learn_input", ["in_graph", "tf_data"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_learn_on_batch_gives_the_same_weights_under_every_strategy(strategy, learn_input,
                                                                    default_strategy_update):
    ref_weights, ref_info = default_strategy_update(learn_input)
    policy = make_policy(strategy, learn_input=learn_input)
    batch = make_batch(64)
    info = policy.learn_on_batch(batch)
    for got, want in zip(policy.get_weights(), ref_weights):
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert info["learner_stats"]["num_grad_updates"] == 3 * 4
    for key in ("total_loss", "vf_loss", "mean_adv"):
        np.testing.assert_allclose(info["learner_stats"][key], ref_info["learner_stats"][key],
                                   rtol=1e-5)


def test_tf_data_input_draws_the_in_graph_minibatches():
    # Both inputs take the same seeded permutations: shuffled epochs learn bit for bit
    # the same weights and stats; the compiled function still traces once.
    in_graph = make_policy(learn_input="in_graph")
    tf_data = make_policy(learn_input="tf_data")
    for seed in range(3):
        batch = make_batch(48 + 8 * seed, seed=seed)
        want = in_graph.learn_on_batch(batch)["learner_stats"]
        got = tf_data.learn_on_batch(batch)["learner_stats"]
        assert got == want
    for a, b in zip(tf_data.get_weights(), in_graph.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert tf_data.num_traces["learn_on_batch"] == 1
    assert int(tf_data.num_grad_updates.numpy()) == 3 * (3 + 3 + 4)  # 48, 56, 64 rows: 3, 3, 4 minibatches of 16


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compute_and_apply_gradients_match_under_every_strategy(strategy,
                                                               default_strategy_gradients):
    ref_grads, ref_weights = default_strategy_gradients
    policy = make_policy(strategy)
    batch = make_batch(32)
    grads, info = policy.compute_gradients(batch)
    for got, want in zip(grads, ref_grads):
        np.testing.assert_allclose(got, want, atol=1e-6)
    policy.apply_gradients(grads)
    for got, want in zip(policy.get_weights(), ref_weights):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert set(info["learner_stats"]) == {"total_loss", "vf_loss", "mean_adv"}


@pytest.mark.parametrize("strategy", ["one_device", "mirrored"])
def test_one_sgd_step_equals_a_hand_written_step(strategy):
    policy = make_policy(strategy, num_sgd_iter=1, sgd_minibatch_size=None)
    model = TinyModel(2)
    batch = make_batch(32)
    model(batch["obs"])
    model.set_weights(policy.get_weights())
    with tf.GradientTape() as tape:
        loss = pg_loss_numpy_free(model, batch)
    grads = tape.gradient(loss, model.trainable_variables)
    keras.optimizers.SGD(0.1).apply_gradients(zip(grads, model.trainable_variables))
    info = policy.learn_on_batch(batch)
    for got, want in zip(policy.get_weights(), model.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(info["learner_stats"]["total_loss"], float(loss), rtol=1e-5)


def test_unshuffled_minibatches_take_the_rows_in_order():
    # shuffle_sequences=False: each epoch's minibatches are rows [0, 8) then [8, 16),
    # as two hand-written SGD steps compute; shuffled ones differ.
    policy = make_policy(num_sgd_iter=2, sgd_minibatch_size=8, shuffle_sequences=False)
    shuffled = make_policy(num_sgd_iter=2, sgd_minibatch_size=8)
    model = TinyModel(2)
    batch = make_batch(16)
    model(batch["obs"])
    model.set_weights(policy.get_weights())
    sgd = keras.optimizers.SGD(0.1)
    for _ in range(2):
        for start in (0, 8):
            rows = {k: v[start:start + 8] for k, v in batch.items()}
            with tf.GradientTape() as tape:
                loss = pg_loss_numpy_free(model, rows)
            sgd.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))
    policy.learn_on_batch(batch)
    shuffled.learn_on_batch(batch)
    for got, want in zip(policy.get_weights(), model.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert any(not np.allclose(a, b, atol=1e-6)
               for a, b in zip(shuffled.get_weights(), model.get_weights()))


# ------------------------------------------------------------------ trace once


@pytest.mark.parametrize("strategy,learn_input,num_calls", [
    ("one_device", "in_graph", 50), ("mirrored", "in_graph", 50),
    ("mirrored", "tf_data", 10)])
def test_each_compiled_function_traces_once_across_50_calls(strategy, learn_input, num_calls):
    policy = make_policy(strategy, num_sgd_iter=2, learn_input=learn_input)
    for i in range(num_calls):
        obs = make_batch(1 + i % 9, seed=i)["obs"]
        policy.compute_actions(obs, explore=bool(i % 2))
        policy.value(obs)
        batch = make_batch(32 + 2 * (i % 5), seed=i)  # 32..40 rows, contents vary
        if i % 3 == 0:
            batch["actions"] = batch["actions"].astype(np.int32)
            batch["advantages"] = batch["advantages"].astype(np.float64)
        info = policy.learn_on_batch(SampleBatch(batch) if i % 2 else batch)
        grads, _ = policy.compute_gradients(batch)
        policy.apply_gradients(grads)
    assert policy.num_traces == {"compute_actions": 1, "value": 1, "learn_on_batch": 1,
                                 "compute_gradients": 1, "apply_gradients": 1}
    assert info["learner_stats"]["num_traces"] == 1 and info["num_traces"] == policy.num_traces


# ------------------------------------------------------------------ acting


def test_compute_actions_outputs():
    policy = make_policy()
    obs = make_batch(5)["obs"]
    actions, state_outs, extras = policy.compute_actions(obs, explore=False)
    logits = extras["action_dist_inputs"]
    assert actions.dtype == np.int64 and state_outs == []
    np.testing.assert_array_equal(actions, logits.argmax(axis=1))
    np.testing.assert_array_equal(extras["action_logp"], np.zeros(5, np.float32))
    _, value = policy.model(obs)
    np.testing.assert_allclose(extras["vf_preds"], value.numpy(), atol=1e-6)
    actions, _, extras = policy.compute_actions(obs, explore=True)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(extras["action_logp"], log_softmax[np.arange(5), actions],
                               atol=1e-5)
    np.testing.assert_allclose(extras["action_prob"], np.exp(extras["action_logp"]), rtol=1e-6)
    assert policy.global_timestep == 10


def test_explore_samples_and_config_default():
    policy = make_policy(explore=False)
    obs = np.zeros((2000, 4), np.float32)
    greedy, _, extras = policy.compute_actions(obs)
    assert len(set(greedy.tolist())) == 1
    sampled, _, _ = policy.compute_actions(obs, explore=True)
    p1 = np.exp(extras["action_dist_inputs"][0])
    p1 = p1[1] / p1.sum()
    assert abs(sampled.mean() - p1) < 0.05


@pytest.mark.parametrize("inference", ["numpy", "tf"])
def test_sampler_style_calls_advance_the_global_timestep_by_their_rows(inference):
    policy = TFPolicy(OBS_SPACE, ACT_SPACE, {"seed": 0, "inference": inference,
                                             "model": {"fcnet_hiddens": [8]}})
    assert policy.inference == inference
    obs = make_batch(3)["obs"]
    for expected in (3, 6, 9):  # a sampler passes the policy's own counter (RLlib's convention)
        policy.compute_actions(obs, timestep=policy.global_timestep)
        assert policy.global_timestep == expected
    policy.compute_actions(obs, timestep=1000)  # this call's step, not the counter's value
    assert policy.global_timestep == 12
    policy.compute_actions(obs)
    assert policy.global_timestep == 15
    policy.on_global_var_update({"timestep": 500})
    assert policy.global_timestep == 500
    policy.compute_single_action(obs[0], timestep=policy.global_timestep)
    policy.compute_actions_from_input_dict({"obs": obs[:2]}, timestep=policy.global_timestep)
    assert policy.global_timestep == 503
    policy.value(obs)  # not acting
    assert policy.global_timestep == 503
    assert policy.get_state()["global_timestep"] == 503


def test_compute_single_action_and_timestep():
    policy = make_policy()
    action, state, extras = policy.compute_single_action(np.zeros(4, np.float32), explore=False,
                                                         timestep=100)
    assert ACT_SPACE.contains(int(action)) and state == [] and extras["vf_preds"].shape == ()
    assert policy.global_timestep == 1  # counts the row; timestep=100 was for that call only
    assert policy.get_initial_state() == [] and not policy.is_recurrent()
    assert policy.get_session() is None


# ------------------------------------------------------------------ state


def test_weights_round_trip_between_policies():
    source, target = make_policy(), make_policy("mirrored")
    source.learn_on_batch(make_batch(32))
    target.set_weights(source.get_weights())
    for a, b in zip(source.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(a, b)
    obs = make_batch(4)["obs"]
    np.testing.assert_array_equal(source.compute_actions(obs, explore=False)[2]["vf_preds"],
                                  target.compute_actions(obs, explore=False)[2]["vf_preds"])


@pytest.mark.parametrize("strategy", ["one_device", "mirrored"])
def test_state_round_trip_restores_the_optimizer(strategy):
    source = make_policy(strategy, optimizer="adam", lr=0.01, shuffle_sequences=False)
    source.learn_on_batch(make_batch(32))
    source.global_timestep = 77
    state = source.get_state()
    target = make_policy(strategy, optimizer="adam", lr=0.01, shuffle_sequences=False)
    target.set_state(state)
    assert target.global_timestep == 77 and target.get_state()["num_grad_updates"] == 6
    batch = make_batch(32, seed=1)
    source.learn_on_batch(batch)
    target.learn_on_batch(batch)
    for a, b in zip(source.get_weights(), target.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_restored_policy_continues_like_the_original():
    source = make_policy(optimizer="adam", lr=0.01)  # shuffled minibatches
    source.learn_on_batch(make_batch(32))
    state = source.get_state()
    assert set(state["_rng_states"]) == {"shuffle", "sampling", "tf_sampling"}
    restored = make_policy(optimizer="adam", lr=0.01, seed=123)
    restored.set_state(state)
    without_rngs = make_policy(optimizer="adam", lr=0.01, seed=123)
    without_rngs.set_state({k: v for k, v in state.items() if k != "_rng_states"})
    for seed in (1, 2):
        batch = make_batch(32, seed=seed)
        for policy in (source, restored, without_rngs):
            policy.learn_on_batch(batch)
    for a, b, c in zip(source.get_weights(), restored.get_weights(), without_rngs.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert any(not np.allclose(a, c, atol=1e-6)
               for a, c in zip(source.get_weights(), without_rngs.get_weights()))
    message = (r"'_rng_states' must be a dict with keys \['sampling', 'shuffle', 'tf_sampling'\] "
               r"\(from get_state\(\); older states lack 'tf_sampling'\); received")
    with pytest.raises(ValueError, match=message):
        restored.set_state({**state, "_rng_states": {"shuffle": None}})
    with pytest.raises(ValueError, match=message):
        restored.set_state({**state, "_rng_states": {**state["_rng_states"], "other": 1}})
    # A state saved before 'tf_sampling' existed still restores.
    old = {k: v for k, v in state["_rng_states"].items() if k != "tf_sampling"}
    restored.set_state({**state, "_rng_states": old})


# ------------------------------------------------------------------ errors


def test_compute_actions_bad_input():
    policy = make_policy()
    with pytest.raises(ValueError, match=r"obs_batch must have shape \[B, 4\] for items of Box.*"
                                         r"received shape \(2, 3\)"):
        policy.compute_actions(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"received shape \(4,\). It looks like one unbatched item"):
        policy.compute_actions(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"obs_batch must be numeric .*received dtype <U1"):
        policy.compute_actions(np.full((2, 4), "a"))
    with pytest.raises(ValueError, match=r"has 0 state tensor\(s\); received 1 state batch"):
        policy.compute_actions(np.zeros((2, 4), np.float32), [np.zeros((2, 3))])


def test_learn_on_batch_bad_input():
    policy = make_policy()
    batch = make_batch(32)
    with pytest.raises(KeyError, match=r"reads column 'advantages', which the train batch lacks; "
                                       r"it has \['actions', 'obs', 'rewards'\]"):
        policy.learn_on_batch({k: v for k, v in batch.items() if k != "advantages"})
    policy.learn_on_batch(batch)
    with pytest.raises(KeyError, match=r"the batch lacks columns \['advantages'\], which the loss "
                                       r"reads"):
        policy.learn_on_batch({k: v for k, v in batch.items() if k != "advantages"})
    with pytest.raises(ValueError, match=r"actions must lie in \[0, 1\] for Discrete\(2\); rows "
                                         r"\[3\] hold \[2\]"):
        policy.learn_on_batch({**batch, "actions": np.where(np.arange(32) == 3, 2, 0)})
    with pytest.raises(ValueError, match=r"actions must be integers for Discrete\(2\); received "
                                         r"dtype float32"):
        policy.learn_on_batch({**batch, "actions": np.zeros(32, np.float32)})
    with pytest.raises(ValueError, match=r"samples\['obs'\] must have shape \[B, 4\]"):
        policy.learn_on_batch({**batch, "obs": np.zeros((32, 5), np.float32)})
    with pytest.raises(TypeError, match=r"column 'advantages' has dtype <U1; the compiled train "
                                        r"step takes float32"):
        policy.learn_on_batch({**batch, "advantages": np.full(32, "a")})
    with pytest.raises(ValueError, match=r"column 'advantages' must have shape \[B\] \(fixed by "
                                         r"the first batch\); received \(32, 2\)"):
        policy.learn_on_batch({**batch, "advantages": np.zeros((32, 2), np.float32)})
    with pytest.raises(ValueError, match=r"columns have different lengths"):
        policy.learn_on_batch({**batch, "advantages": np.zeros(31, np.float32)})
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=16 \(16 rows\) is larger than the "
                                         r"batch \(8 rows\)"):
        policy.learn_on_batch(make_batch(8))
    with pytest.raises(TypeError, match=r"takes a SampleBatch or a dict of columns; received list"):
        policy.learn_on_batch([batch])
    with pytest.raises(ValueError, match=r"PGPolicy: config\['learn_input'\] must be 'in_graph' "
                                         r"or 'tf_data'; received 'dataset'"):
        make_policy(learn_input="dataset")


def test_learn_on_batch_rejects_multi_agent_and_sequence_batches():
    from tfrl.policy.multi_agent_batch import MultiAgentBatch

    policy = make_policy()
    with pytest.raises(TypeError, match=r"received a MultiAgentBatch with policies \['p0'\]"):
        policy.learn_on_batch(MultiAgentBatch({"p0": SampleBatch(make_batch(4))}, 4))
    with pytest.raises(ValueError, match=r"received a sequence batch \(with 'seq_lens'\) for a "
                                         r"policy whose model is not recurrent"):
        policy.learn_on_batch({**make_batch(4), "seq_lens": np.array([4])})


def test_rows_must_divide_among_replicas():
    policy = make_policy("mirrored", sgd_minibatch_size=15)
    with pytest.raises(ValueError, match=r"sgd_minibatch_size \(15\) must be divisible by the "
                                         r"number of replicas \(2, devices"):
        policy.learn_on_batch(make_batch(32))
    with pytest.raises(ValueError, match=r"the batch size \(31\) must be divisible"):
        policy.compute_gradients(make_batch(31))


def test_weights_and_gradients_errors():
    policy = make_policy()
    weights = policy.get_weights()
    with pytest.raises(ValueError, match=r"takes the list get_weights\(\) returns: 6 arrays .*"
                                         r"received 5 arrays"):
        policy.set_weights(weights[:5])
    with pytest.raises(ValueError, match="received dict"):
        policy.set_weights({})
    with pytest.raises(ValueError, match=r"weight 0 \(.*kernel\) must have shape \(4, 8\); "
                                         r"received shape \(8, 4\)"):
        policy.set_weights([weights[0].T] + weights[1:])
    with pytest.raises(ValueError, match=r"one gradient per trainable variable \(6, .*received 2"):
        policy.apply_gradients(weights[:2])
    with pytest.raises(ValueError, match=r"gradient 1 \(.*bias\) must have shape \(8,\)"):
        policy.apply_gradients([weights[0], weights[0]] + weights[2:])
    with pytest.raises(ValueError, match=r"received str"):
        policy.apply_gradients("grads")
    state = policy.get_state()
    state["_optimizer_variables"] = state["_optimizer_variables"] + [np.zeros(3)]
    with pytest.raises(ValueError, match=r"'_optimizer_variables' must have shapes"):
        policy.set_state(state)


def test_loss_must_be_overridden_and_num_gpus_checked():
    class NoLoss(PGPolicy):
        loss = TFPolicy.loss

    policy = NoLoss(OBS_SPACE, ACT_SPACE, CONFIG)
    with pytest.raises(NotImplementedError, match=r"NoLoss must override loss\(model, dist_class"):
        policy.learn_on_batch(make_batch(16))
    with pytest.raises(ValueError, match=r"num_gpus=4 \(fake GPUs.*only 2 CPU device"):
        PGPolicy(OBS_SPACE, ACT_SPACE, {"num_gpus": 4, "_fake_gpus": True})
    policy = PGPolicy(OBS_SPACE, ACT_SPACE, {"num_gpus": 2, "_fake_gpus": True})
    assert policy.strategy.num_replicas_in_sync == 2 and len(policy.devices) == 2


@pytest.mark.parametrize("strategy", ["default", "one_device"])
def test_a_deleted_policy_leaves_no_traced_graph_behind(strategy):
    # Keras sums gradients across replicas through a tf.custom_gradient, which registers
    # each traced call's gradient function in TensorFlow's process-wide registry and so
    # kept every learning graph alive (12.9 GB in one test process); with one replica the
    # policy skips that identity sum.
    import gc

    from tensorflow.python.framework.func_graph import FuncGraph

    def graphs():
        gc.collect()
        return sum(isinstance(o, FuncGraph) for o in gc.get_objects())

    before = graphs()
    policy = make_policy(strategy)
    batch = make_batch(32)
    policy.learn_on_batch(batch)
    grads, _ = policy.compute_gradients(batch)
    policy.apply_gradients(grads)
    policy.compute_actions(batch["obs"][:3])
    assert graphs() > before  # the policy's compiled functions are traced graphs
    del policy, grads
    assert graphs() == before
