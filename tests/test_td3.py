"""TD3TFPolicy and DDPG on small spaces: delayed actor and target updates inside the
compiled learning call, the deterministic policy gradient, exploration noise, numpy
acting and the clear errors (the conformance suite covers tracing,
strategies, state and export)."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.ddpg import DDPG, DDPGConfig, DDPGTFPolicy
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.algorithms.td3 import TD3, TD3Config, TD3TFPolicy
from tfrl.policy.sample_batch import SampleBatch

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
SMALL = {"seed": 0, "actor_hiddens": [8], "critic_hiddens": [8]}


def make(policy_class=TD3TFPolicy, **config):
    return policy_class(OBS, ACT, {**SMALL, **config})


def batch(rows=16, seed=0):
    rng = np.random.default_rng(seed)
    return SampleBatch(
        obs=rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        new_obs=rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        actions=rng.uniform(ACT.low, ACT.high, (rows, 2)).astype(np.float32),
        rewards=rng.normal(size=rows).astype(np.float32),
        terminateds=rng.random(rows) < 0.2)


def values(variables):
    return [np.array(v.numpy()) for v in variables]


def assert_all_equal(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def changed(got, want):
    return any(not np.array_equal(a, b) for a, b in zip(got, want))


# ------------------------------------------------------------ delayed updates

def test_actor_and_targets_move_every_policy_delay_th_step_by_tau():
    policy = make(policy_delay=2, tau=0.25)
    model, target = policy.model, policy.target_model
    actor0, critic0 = values(model.actor.variables), values(model.critic.variables)
    target0 = values(target.variables)
    assert_all_equal(target0, values(model.variables))  # targets start as copies

    policy.learn_on_batch(batch(), num_sgd_iter=1, sgd_minibatch_size=16)  # step 1
    assert changed(values(model.critic.variables), critic0)
    assert_all_equal(values(model.actor.variables), actor0)
    assert_all_equal(values(target.variables), target0)

    policy.learn_on_batch(batch(seed=1), num_sgd_iter=1, sgd_minibatch_size=16)  # step 2
    assert changed(values(model.actor.variables), actor0)
    for got, online, before in zip(values(target.variables), values(model.variables), target0):
        np.testing.assert_allclose(got, 0.25 * online + 0.75 * before, rtol=1e-6, atol=1e-7)
    assert int(policy.optimizer.optimizers[0].iterations.numpy()) == 1
    assert int(policy.optimizer.optimizers[1].iterations.numpy()) == 2


def test_four_steps_in_one_call_update_the_actor_twice():
    policy = make(policy_delay=2)
    info = policy.learn_on_batch(batch(64), num_sgd_iter=1, sgd_minibatch_size=16)
    assert info["learner_stats"]["num_grad_updates"] == 4
    assert int(policy.optimizer.optimizers[0].iterations.numpy()) == 2
    assert int(policy.optimizer.optimizers[1].iterations.numpy()) == 4
    assert policy.num_traces["learn_on_batch"] == 1


def test_ddpg_updates_actor_and_targets_with_every_step():
    policy = make(DDPGTFPolicy)
    assert policy.config["policy_delay"] == 1 and not policy.config["twin_q"]
    assert not hasattr(policy.model.critic, "q2")
    target0 = values(policy.target_model.variables)
    policy.learn_on_batch(batch(), num_sgd_iter=1, sgd_minibatch_size=16)
    assert int(policy.optimizer.optimizers[0].iterations.numpy()) == 1
    tau = policy.config["tau"]
    for got, online, before in zip(values(policy.target_model.variables),
                                   values(policy.model.variables), target0):
        np.testing.assert_allclose(got, tau * online + (1 - tau) * before, rtol=1e-6,
                                   atol=1e-7)


def test_learning_rates_of_the_actor_and_the_critics_are_their_own():
    policy = make(actor_lr=1e-2, critic_lr=1e-4)
    assert float(policy.optimizer.optimizers[0].learning_rate.numpy()) == pytest.approx(1e-2)
    assert float(policy.optimizer.optimizers[1].learning_rate.numpy()) == pytest.approx(1e-4)


# ------------------------------------------------- the loss and its gradients

def test_gradients_are_the_critic_loss_and_the_deterministic_policy_gradient():
    policy = make(smooth_target_policy=False, l2_reg=0.0)
    rows = batch(32)
    grads, info = policy.compute_gradients(rows)
    model, target = policy.model, policy.target_model
    obs = tf.constant(rows["obs"])
    # The actor: -mean Q_1(s, mu(s)), differentiated w.r.t. the actor's variables only.
    with tf.GradientTape() as tape:
        actor_loss = -tf.reduce_mean(model.q1(obs, model.actor(obs)))
    want_actor = tape.gradient(actor_loss, model.actor.trainable_variables)
    # The critics: the squared TD errors against min of the target critics.
    a_tp1 = target.actor(rows["new_obs"])
    q1_tp1, q2_tp1 = target.q_values(rows["new_obs"], a_tp1)
    y = rows["rewards"] + 0.99 * (1.0 - rows["terminateds"]) * np.minimum(q1_tp1, q2_tp1)
    with tf.GradientTape() as tape:
        q1, q2 = model.q_values(obs, rows["actions"])
        critic_loss = tf.reduce_mean(0.5 * (q1 - y) ** 2 + 0.5 * (q2 - y) ** 2)
    want_critic = tape.gradient(critic_loss, model.critic.trainable_variables)
    by_variable = dict(zip((id(v) for v in model.trainable_variables), grads))
    for variable, want in zip(model.actor.trainable_variables, want_actor):
        np.testing.assert_allclose(by_variable[id(variable)], want, rtol=1e-5, atol=1e-6)
    for variable, want in zip(model.critic.trainable_variables, want_critic):
        np.testing.assert_allclose(by_variable[id(variable)], want, rtol=1e-5, atol=1e-6)
    stats = info["learner_stats"]
    assert stats["actor_loss"] == pytest.approx(float(actor_loss), rel=1e-5)
    assert stats["critic_loss"] == pytest.approx(float(critic_loss), rel=1e-5)
    assert stats["total_loss"] == pytest.approx(float(actor_loss + critic_loss), rel=1e-5)


def test_actor_stats_are_means_over_the_actor_update_steps():
    # policy_delay 2: step 0 of a fresh policy leaves the actor alone (and evaluates no
    # actor loss), step 1 updates it. One-step phases show both cases.
    policy = make(policy_delay=2, smooth_target_policy=False)
    rows = batch(32)
    first = policy.learn_on_batch(rows, sgd_minibatch_size=32)["learner_stats"]
    assert first["actor_steps"] == 0.0
    assert "actor_loss" not in first and "mean_q_pi" not in first
    assert np.isfinite(first["critic_loss"])
    # The next step's actor loss is -mean Q_1(s, mu(s)) under the weights it starts from.
    obs = tf.constant(rows["obs"])
    want = -float(tf.reduce_mean(policy.model.q1(obs, policy.model.actor(obs))))
    second = policy.learn_on_batch(rows, sgd_minibatch_size=32)["learner_stats"]
    assert second["actor_steps"] == 1.0
    assert second["actor_loss"] == pytest.approx(want, rel=1e-5)
    assert second["mean_q_pi"] == pytest.approx(-want, rel=1e-5)
    # A four-step phase: two actor steps; the actor's stats average those two only.
    both = policy.learn_on_batch(batch(128, seed=1), sgd_minibatch_size=32,
                                 shuffle_sequences=False)["learner_stats"]
    assert both["actor_steps"] == 0.5 and np.isfinite(both["actor_loss"])
    assert both["actor_loss"] == pytest.approx(-both["mean_q_pi"], rel=1e-6)


def test_target_smoothing_noise_changes_with_each_update_and_follows_the_state():
    policy = make(target_noise=0.5, target_noise_clip=10.0)
    rows = batch(32)
    first = policy.compute_gradients(rows)[1]["learner_stats"]["critic_loss"]
    assert policy.compute_gradients(rows)[1]["learner_stats"]["critic_loss"] == first
    policy.num_grad_updates.assign(7)  # another update draws other noise
    assert policy.compute_gradients(rows)[1]["learner_stats"]["critic_loss"] != first
    unsmoothed = make(smooth_target_policy=False)
    assert unsmoothed.compute_gradients(rows)[1]["learner_stats"]["critic_loss"] != first
    # A policy of another seed given this one's state draws the same noise.
    other = make(seed=5, target_noise=0.5, target_noise_clip=10.0)
    other.set_state(policy.get_state())
    assert (other.compute_gradients(rows)[1]["learner_stats"]["critic_loss"]
            == policy.compute_gradients(rows)[1]["learner_stats"]["critic_loss"])


def test_td_errors_are_the_twin_critics_mean_absolute_errors():
    policy = make()
    rows = batch(8)
    a_tp1 = policy.target_model.actor(rows["new_obs"])
    q1_tp1, q2_tp1 = policy.target_model.q_values(rows["new_obs"], a_tp1)
    y = rows["rewards"] + 0.99 * (1.0 - rows["terminateds"]) * np.minimum(q1_tp1, q2_tp1)
    q1, q2 = policy.model.q_values(rows["obs"], rows["actions"])
    want = 0.5 * (np.abs(q1 - y) + np.abs(q2 - y))
    np.testing.assert_allclose(policy.td_errors(rows), want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------- acting

def policy_bounds(normalize):
    """The policy's action bounds: [-1, 1] with normalize_actions (the sampler unsquashes
    into ACT's bounds), ACT's own without."""
    if normalize:
        return -np.ones(2, np.float32), np.ones(2, np.float32)
    return ACT.low, ACT.high


@pytest.mark.parametrize("normalize", [True, False])
def test_numpy_and_tf_inference_agree(normalize):
    fast = make(inference="numpy", normalize_actions=normalize)
    graph = make(inference="tf", normalize_actions=normalize)
    low, high = policy_bounds(normalize)
    assert (fast.inference, graph.inference) == ("numpy", "tf")
    graph.set_weights(fast.get_weights())
    obs = np.random.default_rng(3).uniform(-1, 1, (5, 3)).astype(np.float32)
    a_np, _, extras_np = fast.compute_actions(obs, explore=False)
    a_tf, _, extras_tf = graph.compute_actions(obs, explore=False)
    np.testing.assert_allclose(a_np, a_tf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(extras_np["vf_preds"], extras_tf["vf_preds"], rtol=1e-5,
                               atol=1e-6)
    want = fast.model(obs)
    np.testing.assert_allclose(a_np, want[0].numpy(), rtol=1e-5, atol=1e-6)
    assert np.all(a_np >= low) and np.all(a_np <= high)


@pytest.mark.parametrize("normalize", [True, False])
def test_gaussian_noise_after_the_random_phase(normalize):
    exploration = {"type": "GaussianNoise", "random_timesteps": 100, "stddev": 0.1,
                   "initial_scale": 1.0, "final_scale": 0.5, "scale_timesteps": 1000}
    policy = make(exploration_config=exploration, normalize_actions=normalize)
    low, high = policy_bounds(normalize)
    obs = np.zeros((4000, 3), np.float32)
    mu = policy.compute_actions(obs, explore=False)[0]
    random = policy.compute_actions(obs, explore=True, timestep=99)[0]
    assert np.all(random >= low) and np.all(random <= high)
    np.testing.assert_allclose(random.mean(0), (low + high) / 2, atol=0.05)
    np.testing.assert_allclose(random.std(0), (high - low) / np.sqrt(12), rtol=0.05)
    for step, scale in ((100, 1.0 - 0.5 * 0.1), (500, 0.75), (5000, 0.5)):
        noisy = policy.compute_actions(obs, explore=True, timestep=step)[0]
        # mu is inside the bounds by more than 4 std here: nothing is clipped.
        assert np.all(np.abs(mu - (low + high) / 2) < (high - low) / 2 - 0.25)
        np.testing.assert_allclose((noisy - mu).std(0), 0.1 * scale, rtol=0.06)
        np.testing.assert_allclose((noisy - mu).mean(0), 0.0, atol=0.01)


@pytest.mark.parametrize("normalize", [True, False])
def test_gaussian_noise_is_clipped_to_the_bounds(normalize):
    policy = make(exploration_config={"type": "GaussianNoise", "random_timesteps": 0,
                                      "stddev": 100.0}, normalize_actions=normalize)
    low, high = policy_bounds(normalize)
    actions = policy.compute_actions(np.zeros((200, 3), np.float32), explore=True)[0]
    assert np.all(actions >= low) and np.all(actions <= high)
    assert np.any(actions == low) and np.any(actions == high)


@pytest.mark.parametrize("normalize", [True, False])
def test_ornstein_uhlenbeck_noise_follows_its_recursion(normalize):
    config = {"type": "OrnsteinUhlenbeckNoise", "random_timesteps": 0, "ou_base_scale": 0.1,
              "ou_theta": 0.15, "ou_sigma": 0.2, "initial_scale": 1.0, "final_scale": 1.0,
              "scale_timesteps": 1}
    policy = make(DDPGTFPolicy, exploration_config=config, normalize_actions=normalize)
    low, high = policy_bounds(normalize)  # the OU noise scales with the policy's range
    obs = np.zeros((2, 3), np.float32)
    mu = policy.compute_actions(obs, explore=False)[0]
    rng = np.random.default_rng()
    rng.bit_generator.state = policy.sampling_rng.bit_generator.state
    x = np.zeros(2, np.float32)
    for _ in range(3):
        x += -0.15 * x + 0.2 * rng.standard_normal(2, dtype=np.float32)
        want = np.clip(mu + 0.1 * x * (high - low), low, high)
        got = policy.compute_actions(obs, explore=True)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(policy.get_state()["exploration_state"]["ou_state"], x)



@pytest.mark.parametrize("policy_class,kind", [(DDPGTFPolicy, "OrnsteinUhlenbeckNoise"),
                                               (TD3TFPolicy, "GaussianNoise")])
def test_exploration_config_without_a_type_takes_the_algorithms_type(policy_class, kind):
    # A partial exploration_config keeps its algorithm's noise type (DDPG's OU, TD3's
    # Gaussian) and takes that type's other settings.
    policy = make(policy_class, exploration_config={"random_timesteps": 0})
    assert policy._exploration.config["type"] == kind
    assert policy._exploration.config["random_timesteps"] == 0
    assert ("ou_theta" in policy._exploration.config) == (kind == "OrnsteinUhlenbeckNoise")


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("name", ["TD3", "DDPG"])
def test_discrete_actions_are_refused_naming_sac_discrete(name):
    policy_class = get_algorithm_class(name).default_policy_class
    with pytest.raises(ValueError, match=r"needs a Box action space.*received Discrete\(3\)"
                                         r".*SAC's discrete variant"):
        policy_class(OBS, gym.spaces.Discrete(3), dict(SMALL))


def test_other_bad_configs_are_refused_clearly():
    with pytest.raises(ValueError, match="bounds, which must be finite"):
        TD3TFPolicy(OBS, gym.spaces.Box(-np.inf, np.inf, (1,)), dict(SMALL))
    with pytest.raises(ValueError, match="use_state_preprocessor=True is not supported"):
        make(use_state_preprocessor=True)
    with pytest.raises(ValueError, match=r"exploration_config\['type'\] must be one of "
                                         r"\['GaussianNoise', 'OrnsteinUhlenbeckNoise'\]; "
                                         r"received 'EpsilonGreedy'"):
        make(exploration_config={"type": "EpsilonGreedy"})
    with pytest.raises(ValueError, match=r"unknown exploration_config keys \['sigma'\]"):
        make(exploration_config={"type": "GaussianNoise", "sigma": 0.1})


def test_algorithms_use_their_configs():
    assert TD3.config_class is TD3Config and DDPG.config_class is DDPGConfig
    assert TD3Config.algo_class is TD3 and DDPGConfig.algo_class is DDPG
    assert DDPGTFPolicy.default_config()["exploration_config"]["type"] == \
        "OrnsteinUhlenbeckNoise"


def test_export_checkpoint_round_trips_weights_and_both_optimizers(tmp_path):
    source = make()
    source.learn_on_batch(batch(32), num_sgd_iter=1, sgd_minibatch_size=16)
    source.export_checkpoint(str(tmp_path / "ckpt"))
    target = make(seed=9)
    target.import_checkpoint(str(tmp_path / "ckpt"))
    assert_all_equal(target.get_weights(), source.get_weights())
    assert_all_equal(values(target.optimizer.variables), values(source.optimizer.variables))
    assert int(target.optimizer.optimizers[0].iterations.numpy()) == 1  # actor: one update
