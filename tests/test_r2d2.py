"""R2D2's config checks, its policy's sequence batches and its replay buffer of
sequences (the loss: tests/test_r2d2_loss.py; learning: tests/test_r2d2_learning.py; the
conformance suite runs it with and without an LSTM)."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.r2d2 import R2D2, R2D2Config, R2D2TFPolicy
from tfrl.algorithms.r2d2.r2d2_config import replay_burn_in, replay_sequence_length
from tfrl.policy.sample_batch import SampleBatch

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
LSTM = {"use_lstm": True, "lstm_cell_size": 4, "fcnet_hiddens": [8], "max_seq_len": 3}


@pytest.mark.parametrize("config, message", [
    ({"replay_buffer_config": {"replay_sequence_length": 20}},
     r"R2D2Config: replay_buffer_config\['replay_sequence_length'\] is computed as "
     r"model\['max_seq_len'\] \+ replay_burn_in.*Received 20"),
    ({"replay_buffer_config": {"type": "MultiAgentPrioritizedReplayBuffer"}},
     r"prioritized replay of sequences is not implemented; use 'MultiAgentReplayBuffer'"),
    ({"burn_in": 3, "replay_buffer_config": {"replay_burn_in": 2}},
     r"burn_in=3 \(RLlib 1.x's name\) and replay_buffer_config\['replay_burn_in'\]=2 "
     r"disagree"),
    ({"num_atoms": 51}, r"distributional Q-learning and noisy nets are not implemented.*"
                        r"num_atoms=51"),
    ({"noisy": True}, r"noisy=True"),
    ({"model": {"use_lstm": True, "lstm_use_prev_action": True}},
     r"model\['lstm_use_prev_action'\]=True is not supported"),
    ({"model": {"use_attention": True, "attention_use_n_prev_rewards": 2}},
     r"model\['attention_use_n_prev_rewards'\]=2 is not supported .*set it to 0"),
    ({"replay_buffer_config": {"storage_unit": "timesteps"}},
     r"replay_buffer_config\['storage_unit'\] must be one of 'sequences'; received "
     r"'timesteps'"),
    ({"replay_buffer_config": {"replay_burnin": 2}},
     r"Unknown R2D2Config replay_buffer_config key 'replay_burnin'. Did you mean "
     r"'replay_burn_in'\?"),
    ({"zero_init_state": False}, r"Did you mean 'zero_init_states'\?"),
    ({"h_function_epsilon": 0.0}, r"h_function_epsilon"),
])
def test_config_refuses_bad_values_naming_them(config, message):
    with pytest.raises(ValueError, match=message):
        R2D2Config.from_dict(config)


def test_config_defaults_and_the_computed_sequence_length():
    config = R2D2Config()
    # RLlib's R2D2 defaults.
    assert (config.lr, config.gamma, config.adam_epsilon) == (1e-4, 0.997, 1e-3)
    assert (config.train_batch_size, config.target_network_update_freq) == (1000, 1000)
    assert config.zero_init_states and config.use_h_function
    assert config.h_function_epsilon == 1e-3 and config.batch_mode == "complete_episodes"
    assert config.replay_buffer_config["storage_unit"] == "sequences"
    assert config.model == {"use_lstm": True}
    # max_seq_len (the catalog's 20) + replay_burn_in; burn_in is RLlib 1.x's name.
    assert replay_sequence_length(config.to_dict()) == 20
    legacy = R2D2Config.from_dict({"burn_in": 5, "model": {"max_seq_len": 10}}).to_dict()
    assert replay_burn_in(legacy) == 5 and replay_sequence_length(legacy) == 15


def _rows(policy, lengths):
    """Episodes of the given lengths acted by the recurrent policy, as a sampler records
    them (the state before each step on every row)."""
    episodes = []
    for eps_id, length in enumerate(lengths):
        obs = np.random.default_rng(eps_id).uniform(-1, 1, (length + 1, 2)).astype(np.float32)
        state = [s[None] for s in policy.get_initial_state()]
        states, actions = [], []
        for t in range(length):
            states.append([s[0] for s in state])
            action, state, _ = policy.compute_actions(obs[t:t + 1], state)
            actions.append(action[0])
        episodes.append(SampleBatch(
            obs=obs[:-1], new_obs=obs[1:], actions=np.array(actions),
            rewards=np.ones(length, np.float32), terminateds=np.arange(length) == length - 1,
            truncateds=np.zeros(length, bool), eps_id=np.full(length, eps_id),
            t=np.arange(length),
            **{f"state_in_{i}": np.stack([s[i] for s in states]) for i in range(2)}))
    return SampleBatch.concat_samples(episodes)


@pytest.mark.parametrize("zero_init_states", [True, False])
def test_policy_cuts_rows_into_sequences_of_max_seq_len_plus_burn_in(zero_init_states):
    policy = R2D2TFPolicy(OBS_SPACE, gym.spaces.Discrete(2), {
        "model": LSTM, "seed": 0, "burn_in": 1, "zero_init_states": zero_init_states})
    rows = _rows(policy, [6, 3])
    batch = policy.train_batch(rows)
    # Sequences of 3 + 1 steps, cut at the episode end: [4, 2] and [3].
    assert batch["seq_lens"].tolist() == [4, 2, 3]
    stored = rows["state_in_0"][[0, 4, 6]]  # the state before each sequence's first step
    assert np.abs(stored[1]).max() > 0  # the second sequence starts mid-episode
    want = np.zeros_like(stored) if zero_init_states else stored
    np.testing.assert_array_equal(batch["state_in_0"], want)
    if zero_init_states:  # (learning traces both LSTMs: once is enough here)
        info = policy.learn_on_batch(rows)["learner_stats"]
        assert np.isfinite(info["total_loss"]) and info["num_grad_updates"] == 1
    too_long = policy.train_batch(rows)
    too_long["seq_lens"] = np.array([6, 3], np.int32)
    with pytest.raises(ValueError, match=r"received a sequence of 6 steps; R2D2 learns on "
                                         r"sequences of at most replay_sequence_length = "
                                         r"model\['max_seq_len'\] \+ replay_burn_in = 4"):
        policy.train_batch(too_long)


def test_feed_forward_policy_learns_on_transitions_and_refuses_n_step():
    policy = R2D2TFPolicy(OBS_SPACE, gym.spaces.Discrete(2), {"model": {}, "seed": 0})
    assert not policy.is_recurrent()
    rows = SampleBatch(obs=np.zeros((4, 2), np.float32), new_obs=np.ones((4, 2), np.float32),
                       actions=np.array([0, 1, 0, 1]), rewards=np.ones(4, np.float32),
                       terminateds=np.array([False, False, False, True]))
    assert policy.train_batch(rows) is rows
    assert np.isfinite(policy.learn_on_batch(rows)["learner_stats"]["total_loss"])
    with pytest.raises(ValueError, match=r"with a feed-forward model R2D2 learns on single "
                                         r"transitions, so n_step must be 1; received "
                                         r"n_step=3"):
        R2D2TFPolicy(OBS_SPACE, gym.spaces.Discrete(2), {"model": {}, "n_step": 3})


def test_algorithm_replays_sequences_from_its_buffer():
    algo = R2D2(config={
        "env": "CartPole-v1", "seed": 0, "model": LSTM, "burn_in": 1,
        "train_batch_size": 16, "rollout_fragment_length": 8,
        "num_steps_sampled_before_learning_starts": 8, "timesteps_per_iteration": 0})
    try:
        buffer = algo.local_replay_buffer
        assert buffer.replay_sequence_length == 4 and buffer.replay_batch_size == 4
        result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert stats["num_grad_updates"] == 1 and np.isfinite(stats["total_loss"])
        replayed = buffer.replay()
        assert replayed["seq_lens"].shape == (4,) and replayed.count == 16
        assert np.all(replayed["state_in_0"] == 0.0)  # zero_init_states
    finally:
        algo.stop()
