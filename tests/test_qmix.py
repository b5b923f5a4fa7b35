"""QMIX: the pure loss functions against hand-computed numbers, the mixer's monotonicity,
the policy's spaces, masking, state and traces, and short runs of each mixer (the
learning test: tests/test_qmix_learning.py)."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.qmix import QMix, QMixConfig, QMixTFPolicy
from tfrl.algorithms.qmix.mixers import QMixer, VDNMixer
from tfrl.algorithms.qmix.model import AgentGRU
from tfrl.algorithms.qmix.qmix_loss import (chosen_action_q, qmix_mix, qmix_sequence_td_loss,
                                            qmix_td_loss, target_agent_q, vdn_mix)
from tfrl.algorithms.qmix.qmix_tf_policy import GROUP_REWARDS_COLUMN
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.examples.envs.two_step_game import TwoStepGameWithGroupedAgents
from tfrl.execution.replay_buffer_rows import from_sequence_items, to_sequence_items
from tfrl.models.catalog import ModelCatalog
from tfrl.policy.sample_batch import SampleBatch

# The feed-forward agent network (the tests of numpy acting and of transitions), and the
# recurrent one (QMIX's default).
SMALL = {"agent_network": "fcnet", "model": {"fcnet_hiddens": [8]}, "mixing_embed_dim": 4,
         "seed": 0}
SMALL_GRU = {"model": {"lstm_cell_size": 8}, "mixing_embed_dim": 4, "seed": 0}
NETWORKS = {"fcnet": SMALL, "gru": SMALL_GRU}


# ------------------------------------------------------------------ pure functions

def test_chosen_and_target_agent_q_by_hand():
    q_t = tf.constant([[[1.0, 2.0], [3.0, 4.0]]])
    np.testing.assert_array_equal(chosen_action_q(q_t, tf.constant([[1, 0]])), [[2.0, 3.0]])
    target = tf.constant([[[1.0, 5.0], [2.0, 0.0]]])
    online = tf.constant([[[3.0, 1.0], [0.0, 4.0]]])
    np.testing.assert_array_equal(target_agent_q(target), [[5.0, 2.0]])  # max
    np.testing.assert_array_equal(target_agent_q(target, online), [[1.0, 0.0]])  # double Q
    # Agent 0 may not take action 1 at t+1: its best allowed target value is 1.
    mask = tf.constant([[[1.0, 0.0], [1.0, 1.0]]])
    np.testing.assert_array_equal(target_agent_q(target, None, mask), [[1.0, 2.0]])
    online_prefers_masked = tf.constant([[[0.0, 9.0], [0.0, 4.0]]])
    np.testing.assert_array_equal(target_agent_q(target, online_prefers_masked, mask),
                                  [[1.0, 0.0]])
    with pytest.raises(ValueError, match=r"q_t must be \[B, N, A\]; received shape \(2, 2\)"):
        chosen_action_q(tf.zeros((2, 2)), tf.zeros((2, 2), tf.int32))


def test_mixing_by_hand():
    np.testing.assert_array_equal(vdn_mix(tf.constant([[1.0, 2.0], [3.0, -1.0]])),
                                  [[3.0], [2.0]])
    # |W1| = [[1, 1], [0.5, 2]]: q @ |W1| = [2, 5]; + b1 = [2, -1]; elu: [2, e^-1 - 1];
    # |w_final| = [1, 0.5]: 2 + 0.5 (e^-1 - 1) + V (0.5).
    q_tot = qmix_mix(tf.constant([[1.0, 2.0]]), tf.constant([[[1.0, -1.0], [0.5, 2.0]]]),
                     tf.constant([[0.0, -6.0]]), tf.constant([[-1.0, 0.5]]),
                     tf.constant([[0.5]]))
    np.testing.assert_allclose(q_tot, [[2.0 + 0.5 * (np.exp(-1.0) - 1.0) + 0.5]], rtol=1e-6)


def test_td_loss_by_hand_with_masks_and_weights():
    # Mixed (K = 1): y = [1 + 0.5 * 2, 0 (terminated)] = [2, 0]; td = [-1, 2].
    loss, stats = qmix_td_loss(tf.constant([[1.0], [2.0]]), tf.constant([[1.0], [0.0]]),
                               tf.constant([False, True]), tf.constant([[2.0], [5.0]]),
                               gamma=0.5)
    assert float(loss) == pytest.approx((1.0 + 4.0) / 2)
    assert float(stats["td_error_abs"]) == pytest.approx(1.5)
    assert float(stats["q_taken_mean"]) == pytest.approx(1.5)
    assert float(stats["target_mean"]) == pytest.approx(1.0)
    np.testing.assert_allclose(stats["td_error"], [-1.0, 2.0])
    # Per agent (K = 2, no mixer), agent 1 absent from row 0, row 2 padding: the mean runs
    # over the 3 real entries; importance weights scale each row.
    q = tf.constant([[1.0, 2.0], [3.0, 4.0], [7.0, 7.0]])
    rewards = tf.constant([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    mask = tf.constant([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    args = (q, rewards, tf.ones(3), tf.fill((3, 2), 100.0), mask)
    loss, stats = qmix_td_loss(*args, gamma=0.9)
    assert float(loss) == pytest.approx((1.0 + 4.0 + 9.0) / 3)
    np.testing.assert_allclose(stats["td_error"], [1.0, 2.5, 0.0])
    loss, _ = qmix_td_loss(*args, tf.constant([2.0, 1.0, 5.0]), gamma=0.9)
    assert float(loss) == pytest.approx((2.0 * 1.0 + 4.0 + 9.0) / 3)
    # The target is held constant: no gradient into the next values.
    tp1 = tf.Variable([[2.0], [5.0]])
    with tf.GradientTape() as tape:
        loss, _ = qmix_td_loss(tf.constant([[1.0], [2.0]]), tf.zeros((2, 1)), tf.zeros(2),
                               tp1, gamma=0.9)
    assert tape.gradient(loss, tp1) is None
    with pytest.raises(ValueError, match=r"rewards_t must have q_tot_t's shape"):
        qmix_td_loss(tf.zeros((2, 1)), tf.zeros((2, 2)), tf.zeros(2), tf.zeros((2, 1)),
                     gamma=0.9)


def test_sequence_td_loss_by_hand_with_padding_and_weights():
    # Two sequences of T = 2 (K = 1), the second one step long: its step 1 is padding
    # whose numbers would count if it were real. gamma 0.5: y = [[1 + 0.5 * 2, 0 (end)],
    # [1 + 0 (end), -]]; td = [[-1, 2], [2, 0]].
    q = tf.constant([[[1.0], [2.0]], [[3.0], [50.0]]])
    rewards = tf.constant([[[1.0], [0.0]], [[1.0], [9.0]]])
    terminateds = tf.constant([[False, True], [True, False]])
    q_tp1 = tf.constant([[[2.0], [5.0]], [[4.0], [7.0]]])
    seq_mask = tf.constant([[1.0, 1.0], [1.0, 0.0]])
    loss, stats = qmix_sequence_td_loss(q, rewards, terminateds, q_tp1, seq_mask, gamma=0.5)
    assert float(loss) == pytest.approx((1.0 + 4.0 + 4.0) / 3)  # mean over the 3 real steps
    np.testing.assert_allclose(stats["td_error"], [[-1.0, 2.0], [2.0, 0.0]])
    assert float(stats["q_taken_mean"]) == pytest.approx((1.0 + 2.0 + 3.0) / 3)
    # Importance weights per step; the padding's weight does not count.
    weights = tf.constant([[1.0, 2.0], [3.0, 100.0]])
    loss, _ = qmix_sequence_td_loss(q, rewards, terminateds, q_tp1, seq_mask, None, weights,
                                    gamma=0.5)
    assert float(loss) == pytest.approx((1.0 + 2.0 * 4.0 + 3.0 * 4.0) / 3)
    # Per agent (K = 2) with agent 1 absent from sequence 0's step 0: 5 real entries.
    q2 = tf.concat([q, q], axis=2)
    agent_mask = tf.constant([[[1.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]])
    loss, stats = qmix_sequence_td_loss(q2, tf.concat([rewards, rewards], 2), terminateds,
                                        tf.concat([q_tp1, q_tp1], 2), seq_mask, agent_mask,
                                        gamma=0.5)
    assert float(loss) == pytest.approx((1.0 + 4.0 + 4.0 + 4.0 + 4.0) / 5)
    np.testing.assert_allclose(stats["td_error"], [[-1.0, 2.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match=r"seq_mask must be q_tot_t's \[B, T\]"):
        qmix_sequence_td_loss(q, rewards, terminateds, q_tp1, tf.ones((2, 3)), gamma=0.5)


def test_agent_gru_unroll_is_its_steps():
    keras.utils.set_random_seed(0)
    net = AgentGRU(obs_size=3, num_actions=2, hidden_size=4)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, 5, 3, 3)).astype(np.float32)  # [B, T, M, obs]
    h0 = rng.normal(size=(2, 3, 4)).astype(np.float32)  # [B, M, H]
    q, h = net.unroll(obs, h0)
    assert q.shape == (2, 5, 3, 2) and h.shape == (2, 5, 3, 4)
    state = h0.reshape(6, 4)
    for t in range(5):
        q_t, state = net.step(obs[:, t].reshape(6, 3), state)
        np.testing.assert_allclose(q[:, t], np.reshape(q_t, (2, 3, 2)), atol=1e-6)
        np.testing.assert_allclose(h[:, t], np.reshape(state, (2, 3, 4)), atol=1e-6)
    # The layers of RLlib's RNNModel: fc1 (ReLU), a GRU cell, the Q-value layer.
    assert [w.shape for w in net.weights] == [(3, 4), (4,), (4, 12), (4, 12), (2, 12),
                                              (4, 2), (2,)]


def test_qmixer_is_monotonic_in_every_agent_q_and_vdn_sums():
    keras.utils.set_random_seed(0)
    mixer = QMixer(n_agents=3, state_dim=5, mixing_embed_dim=8)
    rng = np.random.default_rng(0)
    for layer in mixer.layers:  # large weights of both signs
        layer.set_weights([rng.normal(0.0, 3.0, w.shape).astype(np.float32)
                           for w in layer.get_weights()])
    qs = tf.Variable(rng.normal(0.0, 5.0, (64, 3)).astype(np.float32))
    states = tf.constant(rng.normal(0.0, 2.0, (64, 5)).astype(np.float32))
    with tf.GradientTape() as tape:
        q_tot = mixer(qs, states)
    grads = tape.gradient(q_tot, qs).numpy()  # row b: dQ_tot(b) / dq_i(b)
    assert q_tot.shape == (64, 1)
    assert (grads >= 0.0).all() and (grads > 0.0).any()
    raised = mixer(qs + tf.one_hot(np.arange(64) % 3, 3) * 0.5, states)
    assert (raised.numpy() >= q_tot.numpy() - 1e-5).all()
    np.testing.assert_allclose(VDNMixer()(qs, states), tf.reduce_sum(qs, 1, keepdims=True))


# -------------------------------------------------------------------- the policy

def grouped_spaces(env_config=None):
    env = TwoStepGameWithGroupedAgents(env_config or {})
    raw = env.get_observation_space("agents")
    obs_space = ModelCatalog.get_preprocessor_for_space(raw).observation_space
    return obs_space, env.get_action_space("agents")


MASKED_MEMBER = gym.spaces.Dict({"obs": gym.spaces.Box(0.0, 1.0, (3,), np.float32),
                                 "action_mask": gym.spaces.Box(0, 1, (4,), np.float32)})


def masked_group(n=2):
    raw = gym.spaces.Tuple([MASKED_MEMBER] * n)
    prep = ModelCatalog.get_preprocessor_for_space(raw)
    return prep, prep.observation_space, gym.spaces.Tuple([gym.spaces.Discrete(4)] * n)


def masked_obs(prep, rows, rng, n=2):
    masks = np.zeros((rows, n, 4), np.float32)
    masks[:, :, 2] = 1.0
    masks[:, 1, 0] = 1.0
    items = [tuple({"obs": rng.random(3).astype(np.float32), "action_mask": masks[r, i]}
                   for i in range(n)) for r in range(rows)]
    return prep.transform_batch(items), masks


@pytest.mark.parametrize("network", ["fcnet", "gru"])
@pytest.mark.parametrize("explore", [True, False])
def test_actions_are_per_agent_tuples_that_obey_the_action_mask(explore, network):
    prep, obs_space, act_space = masked_group()
    policy = QMixTFPolicy(obs_space, act_space, {**NETWORKS[network], "exploration_config": {
        "initial_epsilon": 1.0, "final_epsilon": 1.0}})
    obs, masks = masked_obs(prep, 200, np.random.default_rng(0))
    actions, state, extras = policy.compute_actions(obs, explore=explore)
    assert isinstance(actions, tuple) and len(actions) == 2 and extras == {}
    # The GRU's next state: one row per agent of the group.
    assert [s.shape for s in state] == ([] if network == "fcnet" else [(200, 2, 8)])
    assert set(actions[0].tolist()) == {2} and set(actions[1].tolist()) <= {0, 2}
    if explore:  # epsilon 1: uniform over the allowed actions
        assert set(actions[1].tolist()) == {0, 2}
    assert policy.global_timestep == 200


def test_numpy_and_compiled_acting_agree():
    obs_space, act_space = grouped_spaces({"one_hot_state_encoding": True})
    numpy_policy = QMixTFPolicy(obs_space, act_space, SMALL)
    tf_policy = QMixTFPolicy(obs_space, act_space, {**SMALL, "inference": "tf"})
    tf_policy.set_weights(numpy_policy.get_weights())
    obs = np.random.default_rng(0).integers(0, 2, (16, obs_space.shape[0])).astype(np.float32)
    for policy in (numpy_policy, tf_policy):
        q = policy._acting_q(policy.layout.split(obs)[0])
        np.testing.assert_allclose(q, tf_policy._q_fn(policy.layout.split(obs)[0]),
                                   rtol=1e-5, atol=1e-6)
    assert tf_policy.num_traces == {"compute_actions": 1}


def test_layout_reads_obs_mask_and_state_entries():
    obs_space, act_space = grouped_spaces({"one_hot_state_encoding": True,
                                           "separate_state_space": True})
    policy = QMixTFPolicy(obs_space, act_space, SMALL)
    layout = policy.layout
    # A member: obs MultiDiscrete([2, 2, 2, 3]) one-hot (9), state MultiDiscrete([2] * 3)
    # one-hot (6): Dict keys in order "obs", "state".
    assert (layout.n_agents, layout.n_actions, layout.segment) == (2, 2, 15)
    assert layout.obs_range == (0, 9) and layout.state_range == (9, 15)
    assert layout.mask_range is None and layout.state_size == 6
    flat = np.arange(30, dtype=np.float32)[None]
    obs, mask, state = layout.split(flat)
    np.testing.assert_array_equal(obs, [[np.arange(9), np.arange(15, 24)]])
    np.testing.assert_array_equal(state, [np.arange(9, 15)])
    # Without a "state" entry the mixer reads all members' observations.
    plain = QMixTFPolicy(*grouped_spaces(), SMALL).layout
    assert plain.state_size == 12 and plain.obs_range == (0, 6)


def test_policy_rejects_spaces_it_cannot_take_naming_them():
    obs_space, act_space = grouped_spaces()
    with pytest.raises(ValueError, match=r"needs a Tuple action space.*received Discrete\(2\)"
                                         r".*with_agent_groups"):
        QMixTFPolicy(obs_space, gym.spaces.Discrete(2), SMALL)
    with pytest.raises(ValueError, match=r"needs a Tuple observation space.*received Box"):
        QMixTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,)), act_space, SMALL)
    with pytest.raises(ValueError, match="needs Discrete actions"):
        QMixTFPolicy(obs_space, gym.spaces.Tuple([gym.spaces.Box(-1, 1, (1,))] * 2), SMALL)
    with pytest.raises(ValueError, match="same action space"):
        QMixTFPolicy(obs_space, gym.spaces.Tuple([gym.spaces.Discrete(2),
                                                  gym.spaces.Discrete(3)]), SMALL)
    with pytest.raises(ValueError, match="has 2 agents and the action space 3"):
        QMixTFPolicy(obs_space, gym.spaces.Tuple([gym.spaces.Discrete(2)] * 3), SMALL)
    mixed = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(4)])
    with pytest.raises(ValueError, match="same observation space"):
        QMixTFPolicy(mixed, act_space, SMALL)
    no_obs = gym.spaces.Tuple([gym.spaces.Dict({"x": gym.spaces.Discrete(2)})] * 2)
    with pytest.raises(ValueError, match="needs an 'obs' entry"):
        QMixTFPolicy(no_obs, act_space, SMALL)
    bad_mask = gym.spaces.Tuple([gym.spaces.Dict({
        "obs": gym.spaces.Discrete(2), "action_mask": gym.spaces.Box(0, 1, (3,))})] * 2)
    with pytest.raises(ValueError, match=r"one entry per action.*shape \(3,\) for 2 actions"):
        QMixTFPolicy(bad_mask, act_space, SMALL)
    with pytest.raises(ValueError, match="does not support recurrent models.*use_lstm=True"):
        QMixTFPolicy(obs_space, act_space, {"model": {"use_lstm": True}})
    with pytest.raises(ValueError, match=r"flat \(preprocessed\) grouped observations "
                                         r"\[B, 12\]; received shape \(3, 5\)"):
        QMixTFPolicy(obs_space, act_space, SMALL).compute_actions(np.zeros((3, 5)))


def test_config_checks():
    with pytest.raises(ValueError, match=r"mixer must be one of \('qmix', 'vdn', None\); "
                                         r"received 'sum'"):
        QMixConfig().training(mixer="sum")
    with pytest.raises(ValueError, match="n_step must be 1"):
        QMixConfig().training(n_step=3)
    with pytest.raises(ValueError, match="exploration_config\\['type'\\] must be 'EpsilonGreedy'"):
        QMixConfig().exploration_config and QMixConfig.from_dict(
            {"exploration_config": {"type": "SoftQ"}})
    with pytest.raises(ValueError, match=r"agent_network must be one of 'gru', 'fcnet'; "
                                         r"received 'lstm'"):
        QMixConfig().training(agent_network="lstm")
    # A given model is merged into QMIX's model defaults.
    model = QMixConfig().training(model={"max_seq_len": 4}).model
    assert (model["max_seq_len"], model["lstm_cell_size"], model["fcnet_hiddens"]) == (4, 64, [64])
    with pytest.raises(ValueError, match="grad_norm_clipping .* and grad_clip are both given"):
        QMixConfig.from_dict({"grad_norm_clipping": 1.0, "grad_clip": 2.0})
    assert QMixConfig().training(grad_norm_clipping=3.0).grad_clip == 3.0
    assert get_algorithm_class("QMIX") is QMix


def episode_batch(policy, rows, seed, with_group_rewards=False):
    """Random TwoStepGame-like transitions acted by `policy` (episodes of 2 steps)."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((rows, 12), np.float32)
    first = np.arange(rows) % 2 == 0
    obs[first, 0] = obs[first, 9] = 1.0
    second_state = rng.integers(1, 3, rows)
    obs[~first, second_state[~first]] = 1.0
    obs[~first, second_state[~first] + 6 + 3] = 1.0
    new_obs = np.roll(obs, -1, axis=0)
    actions, _, _ = policy.compute_actions(obs, explore=True)
    rewards = np.where(first, 0.0, rng.choice([0.0, 1.0, 7.0, 8.0], rows)).astype(np.float32)
    infos = np.array([{"_group_rewards": [r / 2, r / 2]} for r in rewards], object)
    batch = SampleBatch(obs=obs, new_obs=new_obs, actions=actions, rewards=rewards,
                        terminateds=~first, truncateds=np.zeros(rows, bool), infos=infos,
                        eps_id=np.arange(rows) // 2, t=np.arange(rows) % 2)
    return policy.postprocess_trajectory(batch)


# Each mixer once, on either agent network.
@pytest.mark.parametrize("mixer,network", [("qmix", "gru"), ("vdn", "fcnet"), (None, "gru")])
def test_learning_traces_once_moves_weights_and_state_round_trips(mixer, network):
    obs_space, act_space = grouped_spaces()
    config = {**NETWORKS[network], "mixer": mixer}
    source = QMixTFPolicy(obs_space, act_space, config)
    batch = episode_batch(source, 64, seed=1)
    assert (GROUP_REWARDS_COLUMN in batch) == (mixer is None)
    before = source.get_weights()
    infos = [source.learn_on_batch(batch, num_sgd_iter=1, sgd_minibatch_size=16)
             for _ in range(2)]
    stats = infos[-1]["learner_stats"]
    assert np.isfinite([stats[k] for k in ("loss", "td_error_abs", "q_taken_mean",
                                           "target_mean", "grad_norm")]).all()
    assert stats["num_grad_updates"] == 8 and source.num_traces["learn_on_batch"] == 1
    after = source.get_weights()
    assert (after["mixer"] is None) == (mixer != "qmix")
    assert not np.array_equal(before["model"][0], after["model"][0])
    # The target networks moved only with update_target().
    np.testing.assert_array_equal(before["target_model"][0], after["target_model"][0])
    source.update_target()
    np.testing.assert_array_equal(source.get_weights()["target_model"][0], after["model"][0])
    # A policy set to the source's state acts and learns as it does.
    target = QMixTFPolicy(obs_space, act_space, {**config, "seed": 5})
    next_batch = episode_batch(target, 32, seed=2)  # acted before its state is replaced
    target.set_state(source.get_state())
    obs = next_batch["obs"]
    for a, b in zip(target.compute_actions(obs)[0], source.compute_actions(obs)[0]):
        np.testing.assert_array_equal(a, b)
    assert target.learn_on_batch(next_batch) == source.learn_on_batch(next_batch)
    td = source.td_errors(next_batch)
    assert td.shape == (32,) and np.isfinite(td).all()
    assert source.num_traces["compute_td_error"] == 1


def test_without_mixer_each_agent_needs_its_own_reward():
    obs_space, act_space = grouped_spaces()
    policy = QMixTFPolicy(obs_space, act_space, {**SMALL, "mixer": None})
    batch = SampleBatch(obs=np.zeros((2, 12), np.float32), infos=np.array([{}, {}], object))
    with pytest.raises(ValueError, match=r"mixer=None learns each agent from its own reward.*"
                                         r"row 0 has info \{\}"):
        policy.postprocess_trajectory(batch)
    with pytest.raises(ValueError, match="set_weights\\(\\) takes get_weights\\(\\)'s dict"):
        policy.set_weights([np.zeros(1)])


# ------------------------------------------------------------------ algorithm runs

def small_algorithm(mixer, env_config=None, steps_per_iteration=32, **overrides):
    overrides = {"model": {"fcnet_hiddens": [8], "lstm_cell_size": 8}, **overrides}
    config = (QMixConfig().environment(TwoStepGameWithGroupedAgents, env_config=env_config or {})
              .training(mixer=mixer, mixing_embed_dim=4, learning_starts=16,
                        target_network_update_freq=16, **overrides)
              .reporting(min_time_s_per_iteration=0,
                         min_sample_timesteps_per_iteration=steps_per_iteration)
              .debugging(seed=0))
    return config.build()


@pytest.mark.parametrize("mixer,env_config,overrides", [
    ("vdn", None, {}),
    ("vdn", None, {"agent_network": "fcnet"}),
    (None, None, {}),
    # Prioritized sequences: a sequence's priority is its rows' largest |TD error|.
    ("qmix", {"one_hot_state_encoding": True, "separate_state_space": True},
     {"replay_buffer_config": {"type": "MultiAgentPrioritizedReplayBuffer"}}),
])
def test_each_mixer_trains_on_the_grouped_two_step_game(mixer, env_config, overrides):
    algo = small_algorithm(mixer, env_config, **overrides)
    try:
        for _ in range(2):
            result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert result["timesteps_total"] == 64 and result["episodes_total"] == 32
        assert np.isfinite(stats["loss"]) and stats["num_grad_updates"] > 0
        assert result["counters"]["num_target_updates"] >= 1
        assert 0.0 <= result["episode_reward_mean"] <= 8.0
    finally:
        algo.stop()


@pytest.mark.parametrize("network", ["fcnet", "gru"])
def test_restore_continues_exactly(tmp_path, network):
    # Iterations of one sampling round (as the conformance suite's): with
    # min_sample_timesteps_per_iteration > 0 a restored algorithm's first iteration
    # samples another number of steps (DQN's too). The GRU's buffer holds sequences with
    # their stored states.
    algo = small_algorithm("qmix", steps_per_iteration=0, store_buffer_in_checkpoints=True,
                           agent_network=network)
    try:
        for _ in range(5):
            algo.train()
        path = algo.save(str(tmp_path))
        want = [algo.train() for _ in range(3)]
        weights = algo.get_policy().get_weights()
    finally:
        algo.stop()
    restored = small_algorithm("qmix", steps_per_iteration=0, store_buffer_in_checkpoints=True,
                               agent_network=network)
    try:
        restored.restore(path)
        got = [restored.train() for _ in range(3)]
        for g, w in zip(got, want):
            assert g["timesteps_total"] == w["timesteps_total"]
            assert (g["info"]["learner"]["default_policy"]["learner_stats"]
                    == w["info"]["learner"]["default_policy"]["learner_stats"])
        for key, arrays in weights.items():
            for a, b in zip(arrays or [], restored.get_policy().get_weights()[key] or []):
                np.testing.assert_array_equal(a, b)
    finally:
        restored.stop()


def test_lr_follows_the_schedule_and_the_state():
    obs_space, act_space = grouped_spaces()
    policy = QMixTFPolicy(obs_space, act_space, {**SMALL, "lr_schedule": [[0, 0.1], [100, 0.0]]})
    policy.on_global_var_update({"timestep": 50})
    assert float(np.asarray(policy.optimizer.learning_rate)) == pytest.approx(0.05)
    other = QMixTFPolicy(obs_space, act_space, {**SMALL, "lr_schedule": [[0, 0.1], [100, 0.0]]})
    other.set_state(policy.get_state())
    assert float(np.asarray(other.optimizer.learning_rate)) == pytest.approx(0.05)


# ------------------------------------------------------------ the recurrent network

def test_acting_with_the_carried_state_is_the_unrolled_episode():
    obs_space, act_space = grouped_spaces()
    policy = QMixTFPolicy(obs_space, act_space, SMALL_GRU)
    assert policy.is_recurrent()
    np.testing.assert_array_equal(policy.get_initial_state()[0], np.zeros((2, 8)))
    # 3 episodes side by side, 6 steps each, acted step by step from the initial state.
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, (3, 7, 12)).astype(np.float32)  # [B, T + 1, flat]
    state = None
    acted_q, acted_h = [], []
    for t in range(6):
        q, h = policy._acting_q_rnn(policy.layout.split(obs[:, t])[0], state)
        actions, state_out, _ = policy.compute_actions(obs[:, t], state, explore=False)
        np.testing.assert_array_equal(state_out[0], h)
        np.testing.assert_array_equal(np.stack(actions, 1), q.argmax(-1))
        acted_q.append(q)
        acted_h.append(h)
        state = state_out
    per_agent = obs.reshape(3, 7, 2, 6)  # [B, T + 1, N, obs]
    h0 = np.zeros((3, 2, 8), np.float32)
    q, h = policy.model.unroll(per_agent[:, :6], h0)
    np.testing.assert_allclose(q, np.stack(acted_q, 1), atol=1e-5)
    np.testing.assert_allclose(h, np.stack(acted_h, 1), atol=1e-5)
    # The loss values each next observation from the state after the steps before it:
    # what acting at the next step computes.
    q_t, _, q_tp1_online = policy._sequence_q(per_agent[:, :6], per_agent[:, 1:], h0)
    np.testing.assert_allclose(q_t, q, atol=1e-6)
    np.testing.assert_allclose(q_tp1_online[:, :5], np.stack(acted_q[1:], 1), atol=1e-5)
    # Acting in numpy (the default) and in one compiled call agree.
    compiled = QMixTFPolicy(obs_space, act_space, {**SMALL_GRU, "inference": "tf"})
    compiled.set_weights(policy.get_weights())
    q, h = compiled._acting_q_rnn(policy.layout.split(obs[:, 1])[0], [acted_h[0]])
    np.testing.assert_allclose(q, acted_q[1], atol=1e-5)
    np.testing.assert_allclose(h, acted_h[1], atol=1e-5)
    assert compiled.num_traces == {"compute_actions": 1}
    with pytest.raises(ValueError, match=r"one array \[B, N, H\] = \[3, 2, 8\].*received "
                                         r"\[\(3, 8\)\]"):
        policy.compute_actions(obs[:, 0], [np.zeros((3, 8))])


@pytest.fixture(scope="module")
def sampled_gru():
    """A GRU QMIX algorithm's policy and 24 sampled steps (12 two-step episodes)."""
    algo = small_algorithm("qmix", model={"lstm_cell_size": 8, "max_seq_len": 4})
    try:
        worker = algo.workers.local_worker()
        batches = [worker.sample() for _ in range(6)]
        yield algo.get_policy(), SampleBatch.concat_samples(batches)
    finally:
        algo.stop()


def test_sampling_carries_the_state_through_each_episode(sampled_gru):
    policy, batch = sampled_gru
    assert batch.count == 24 and batch["state_in_0"].shape == (24, 2, 8)
    start = batch["t"] == 0
    assert start.sum() == 12
    np.testing.assert_array_equal(batch["state_in_0"][start], 0.0)  # initial state
    np.testing.assert_array_equal(batch["state_in_0"][~start], batch["state_out_0"][start])
    obs = policy.layout.split(batch["obs"])[0].reshape(12, 2, 2, 6)  # [episode, t, N, obs]
    _, h = policy.model.unroll(obs, np.zeros((12, 2, 8), np.float32))
    np.testing.assert_allclose(h, batch["state_out_0"].reshape(12, 2, 2, 8), atol=1e-5)


def test_flat_batches_and_replayed_sequences_give_the_same_td_errors(sampled_gru):
    policy, batch = sampled_gru
    flat = policy.td_errors(batch)  # cut at the episode ends
    assert flat.shape == (24,) and np.abs(flat).min() > 0.0
    # The same episodes as the replay buffer gives them: zero-padded to 4 steps.
    replayed = from_sequence_items(to_sequence_items(batch, 4, zero_init_states=False), 4)
    padded = policy.td_errors(replayed)  # [12 * 4]
    real = np.tile(np.arange(4) < 2, 12)
    np.testing.assert_allclose(padded[real], flat, atol=1e-6)
    np.testing.assert_array_equal(padded[~real], 0.0)
    # Each step its own sequence (max_seq_len 1), starting from the state stored with it:
    # the same values as unrolled from the episode's start.
    one_step = QMixTFPolicy(policy.observation_space, policy.action_space,
                            {**policy.config, "model": {"lstm_cell_size": 8, "max_seq_len": 1}})
    one_step.set_weights(policy.get_weights())
    np.testing.assert_allclose(one_step.td_errors(batch), flat, atol=1e-5)
    bad = batch.copy()
    bad["state_in_0"] = np.zeros((24, 2, 3), np.float32)
    with pytest.raises(ValueError, match=r"'state_in_0' must hold the GRU's state \[N, H\] = "
                                         r"\[2, 8\] per row; received shape \(24, 2, 3\)"):
        policy.td_errors(bad)


def test_fcnet_refuses_sequences_and_algorithm_replays_gru_sequences(sampled_gru):
    policy, batch = sampled_gru
    replayed = from_sequence_items(to_sequence_items(batch, 4), 4)
    fcnet = QMixTFPolicy(policy.observation_space, policy.action_space, SMALL)
    with pytest.raises(ValueError, match="sequence batch.*agent_network='fcnet'"):
        fcnet.learn_on_batch(replayed)
    # Minibatches of whole sequences with about sgd_minibatch_size steps each: 24 steps
    # in minibatches of 8 -> 3 steps of 4 sequences.
    before = int(policy.num_grad_updates.numpy())
    stats = policy.learn_on_batch(replayed, sgd_minibatch_size=8)["learner_stats"]
    assert stats["num_grad_updates"] == before + 3
