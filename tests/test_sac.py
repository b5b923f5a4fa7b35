"""SAC: each loss reaches only its own variables, soft target updates by tau after every
gradient step inside the learning call, the noise column, TD errors, the discrete
variant, and bad input (the losses themselves: tests/test_actor_critic_losses.py)."""

import re

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import run_tfrl
from cli_helpers import tuned as tuned_file
from tfrl.algorithms.sac import SACConfig, SACTFPolicy
from tfrl.algorithms.sac.sac_loss import (sac_actor_loss, sac_alpha_loss, sac_critic_loss,
                                          soft_q_target)
from tfrl.algorithms.sac.sac_tf_policy import NOISE, TARGET_WEIGHTS

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
NETS = {"fcnet_hiddens": [16], "fcnet_activation": "relu"}
SMALL = {"seed": 0, "q_model_config": NETS, "policy_model_config": NETS}


def make_policy(action_space=BOX, **config):
    return SACTFPolicy(OBS_SPACE, action_space,
                       SACConfig.from_dict({**SMALL, **config}).to_dict())


def batch(action_space, rows=8, seed=0):
    rng = np.random.default_rng(seed)
    if isinstance(action_space, gym.spaces.Discrete):
        actions = rng.integers(action_space.n, size=rows)
    else:
        actions = rng.uniform(-2, 2, (rows,) + action_space.shape).astype(np.float32)
    return {"obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
            "new_obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
            "actions": actions, "rewards": rng.normal(size=rows).astype(np.float32),
            "terminateds": np.arange(rows) % 3 == 2}


def variables_of(policy):
    model = policy.model
    return {"actor": model.actor.trainable_variables,
            "critics": model.twin_q.trainable_variables, "alpha": [model.log_alpha]}


def test_each_group_gets_the_gradient_of_its_own_loss_only():
    policy = make_policy(gamma=0.9, initial_alpha=0.5)
    rows = batch(BOX)
    # Targets != critics, so that the target is not computed by the online critics.
    for target in policy.target_model.variables:
        target.assign(target + 0.05)
    noise = np.random.default_rng(5).standard_normal((8, 2, 2)).astype(np.float32)
    grads, _ = policy.compute_gradients({**rows, NOISE: noise})
    model = policy.model
    # The three losses by hand, each differentiated alone.
    with tf.GradientTape(persistent=True) as tape:
        both, _ = model.actor(np.concatenate([rows["obs"], rows["new_obs"]]))
        dist_t = policy.dist_class(both[:8], model.actor)
        dist_tp1 = policy.dist_class(both[8:], model.actor)
        a_t, logp_t = dist_t.sample_from_noise(noise[:, 0])
        a_tp1, logp_tp1 = dist_tp1.sample_from_noise(noise[:, 1])
        alpha = tf.exp(model.log_alpha)
        t1, t2 = policy.target_model(rows["new_obs"], a_tp1)
        y = soft_q_target(rows["rewards"], rows["terminateds"], t1, logp_tp1, t2,
                          alpha=alpha, gamma=0.9)
        q1, q2 = model.twin_q(rows["obs"], rows["actions"])
        critic, _ = sac_critic_loss(q1, q2, y)
        p1, p2 = model.twin_q(rows["obs"], a_t)
        actor, _ = sac_actor_loss(logp_t, p1, p2, alpha=alpha)
        alpha_loss, _ = sac_alpha_loss(model.log_alpha, logp_t, target_entropy=-2.0)
    want = {"critics": tape.gradient(critic, variables_of(policy)["critics"]),
            "actor": tape.gradient(actor, variables_of(policy)["actor"]),
            "alpha": tape.gradient(alpha_loss, [model.log_alpha])}
    by_variable = {id(v): g for v, g in zip(model.trainable_variables, grads)}
    for group, variables in variables_of(policy).items():
        for variable, expected in zip(variables, want[group]):
            np.testing.assert_allclose(by_variable[id(variable)], expected.numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=f"{group} {variable.path}")
    assert np.abs(by_variable[id(model.log_alpha)]).max() > 0


@pytest.mark.parametrize("action_space, tau", [(BOX, 0.0), (DISCRETE, 1.0)],
                         ids=["box-tau0", "discrete-tau1"])
def test_three_steps_in_one_call_move_the_targets_by_tau(action_space, tau):
    policy = make_policy(action_space, tau=tau)
    start = [v.numpy() for v in policy.target_model.variables]
    info = policy.learn_on_batch(batch(action_space, 24), sgd_minibatch_size=8)
    assert info["learner_stats"]["num_grad_updates"] == 3
    assert policy.num_traces["learn_on_batch"] == 1
    want = start if tau == 0.0 else [v.numpy() for v in policy.model.twin_q.variables]
    for got, expected in zip(policy.target_model.variables, want):
        np.testing.assert_array_equal(got.numpy(), expected)
    assert not np.array_equal(policy.model.twin_q.variables[0].numpy(), start[0])


def test_with_a_target_update_freq_the_targets_move_only_in_update_target():
    policy = make_policy(tau=0.5, target_network_update_freq=100)
    start = [v.numpy() for v in policy.target_model.variables]
    policy.learn_on_batch(batch(BOX, 8), sgd_minibatch_size=8)
    for got, expected in zip(policy.target_model.variables, start):
        np.testing.assert_array_equal(got.numpy(), expected)
    policy.update_target()
    critics = [v.numpy() for v in policy.model.twin_q.variables]
    for t0, w, t1 in zip(start, critics, policy.target_model.variables):
        np.testing.assert_allclose(t1.numpy(), 0.5 * w + 0.5 * t0, rtol=1e-6, atol=1e-7)


def test_one_step_moves_the_target_exactly_tau_toward_the_updated_critics():
    policy = make_policy(tau=0.25)
    before = [v.numpy() for v in policy.target_model.variables]
    policy.learn_on_batch(batch(BOX, 8), sgd_minibatch_size=8)
    critics = [v.numpy() for v in policy.model.twin_q.variables]
    for t0, w, t1 in zip(before, critics, policy.target_model.variables):
        np.testing.assert_allclose(t1.numpy(), 0.25 * w + 0.75 * t0, rtol=1e-6, atol=1e-7)


def test_learning_updates_the_actor_the_critics_and_alpha_with_three_optimizers():
    policy = make_policy(optimization={"actor_learning_rate": 1e-3,
                                       "critic_learning_rate": 2e-3,
                                       "entropy_learning_rate": 5e-2})
    start = {k: [v.numpy() for v in vs] for k, vs in variables_of(policy).items()}
    info = policy.learn_on_batch(batch(BOX, 16), sgd_minibatch_size=8)
    for group, variables in variables_of(policy).items():
        assert any(not np.array_equal(v.numpy(), s) for v, s in zip(variables, start[group]))
    # Adam's first step moves every weight by about its learning rate.
    step = abs(float(policy.model.log_alpha.numpy()) - float(start["alpha"][0]))
    assert step == pytest.approx(2 * 5e-2, rel=0.05)  # two steps of lr each
    assert [int(o.iterations.numpy()) for o in policy.optimizer.optimizers] == [2, 2, 2]
    stats = info["learner_stats"]
    assert {"critic_loss", "actor_loss", "alpha_loss", "alpha", "mean_q",
            "target_entropy"} <= set(stats)
    assert stats["target_entropy"] == -2.0  # "auto": -dim(A)
    state = policy.get_state()
    assert len(state[TARGET_WEIGHTS]) == len(policy.target_model.variables)
    assert len(state["_optimizer_variables"]) == len(policy.optimizer.variables)


def test_the_noise_column_comes_from_the_policys_generator():
    a, b = make_policy(), make_policy()
    rows = batch(BOX)
    noise = a.train_batch(rows)[NOISE]
    assert NOISE not in rows and noise.shape == (8, 2, 2)
    np.testing.assert_array_equal(noise, b.train_batch(rows)[NOISE])
    assert not np.array_equal(a.train_batch(rows)[NOISE], noise)  # the generator moved on
    assert make_policy(DISCRETE).train_batch(batch(DISCRETE)) is not None
    assert NOISE not in make_policy(DISCRETE).train_batch(batch(DISCRETE))


@pytest.mark.parametrize("action_space", [BOX, DISCRETE], ids=["box", "discrete"])
def test_td_errors_are_the_mean_critic_error_and_compile_once(action_space):
    policy = make_policy(action_space, twin_q=False)
    rows = batch(action_space)
    td = policy.td_errors(rows)
    assert td.shape == (8,) and np.all(td >= 0)
    policy.td_errors(batch(action_space, 5, seed=1))
    assert policy.num_traces["compute_td_error"] == 1
    if isinstance(action_space, gym.spaces.Discrete):  # exact: no noise
        model = policy.model
        logits, _ = model.actor(rows["new_obs"])
        probs = tf.nn.softmax(logits).numpy()
        alpha = np.exp(model.log_alpha.numpy())
        q_next = policy.target_model(rows["new_obs"]).numpy()
        v_next = (probs * (q_next - alpha * np.log(probs))).sum(-1)
        y = rows["rewards"] + 0.99 * (1 - rows["terminateds"]) * v_next
        q = model.twin_q(rows["obs"]).numpy()[np.arange(8), rows["actions"]]
        np.testing.assert_allclose(td, np.abs(q - y), rtol=1e-4, atol=1e-5)


def test_discrete_sac_acts_with_probabilities_and_vf_preds_are_zero():
    policy = make_policy(DISCRETE)
    assert policy.inference == "numpy"
    obs = np.random.default_rng(0).uniform(-1, 1, (64, 3)).astype(np.float32)
    actions, _, extras = policy.compute_actions(obs, explore=True)
    assert actions.shape == (64,) and set(np.unique(actions)) <= {0, 1, 2}
    assert len(np.unique(actions)) > 1  # sampled, not greedy
    np.testing.assert_array_equal(extras["vf_preds"], 0.0)
    box = make_policy()
    actions, _, _ = box.compute_actions(obs, explore=True)
    assert actions.shape == (64, 2) and np.all(np.abs(actions) <= 2.0)


def test_export_checkpoint_restores_networks_alpha_and_all_three_optimizers(tmp_path):
    source = make_policy()
    source.learn_on_batch(batch(BOX, 16), sgd_minibatch_size=8)
    source.export_checkpoint(str(tmp_path / "ckpt"))
    target = make_policy(seed=3)
    target.import_checkpoint(str(tmp_path / "ckpt"))
    for got, want in zip(target.get_weights(), source.get_weights()):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(target.optimizer.variables, source.optimizer.variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert target.alpha == source.alpha != 1.0


# --------------------------------------------------------------------- errors

@pytest.mark.parametrize("action_space, match", [
    (gym.spaces.Box(-np.inf, np.inf, (2,)), r"finite bounds.*Box\(-inf, inf"),
    (gym.spaces.Box(-1, 1, (2, 2)), r"shape \(A,\).*Box"),
    (gym.spaces.MultiDiscrete([2, 3]), r"Box action space .*or a Discrete one.*MultiDiscrete"),
    (gym.spaces.Tuple([DISCRETE]), r"Box action space .*or a Discrete one.*Tuple"),
])
def test_spaces_sac_cannot_handle_are_rejected_naming_them(action_space, match):
    with pytest.raises(ValueError, match=match):
        make_policy(action_space)


def test_bad_observation_space_and_config_are_rejected_clearly():
    with pytest.raises(ValueError, match=r"flat Box observations.*Dict"):
        SACTFPolicy(gym.spaces.Dict({"a": OBS_SPACE}), BOX, SACConfig().to_dict())
    with pytest.raises(ValueError, match="does not support recurrent models.*use_lstm=True"):
        make_policy(model={"use_lstm": True})
    with pytest.raises(ValueError, match=r"custom_model'\] is not supported"):
        make_policy(q_model_config={"custom_model": "my_q"})


# ----------------------------------------------------------------------- CLI

@pytest.mark.parametrize("tuned", ["sac_pendulum.yaml", "sac_cartpole.yaml"])
def test_tfrl_train_runs_sac_from_the_tuned_file(tmp_path, tuned):
    lines = run_tfrl("train", "--algo=SAC", f"--config={tuned_file(tuned)}",
                     "--config_override=timesteps_per_iteration=128",
                     "--config_override=learning_starts=64",
                     "--config_override=q_model_config.fcnet_hiddens=[8]",
                     "--config_override=policy_model_config.fcnet_hiddens=[8]",
                     "--stop=training_iteration=1", f"--logdir={tmp_path}").splitlines()
    assert re.match(r"iter +1  steps +128  reward", lines[0]), lines
    assert lines[1].startswith("Finished (training_iteration=1 >= 1): 1 iterations, 128 env")
