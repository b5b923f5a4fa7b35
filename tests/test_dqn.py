"""DQN: config checks, epsilon-greedy acting, target updates, training intensity,
priority updates, and bad input (the loss itself: tests/test_dqn_loss.py)."""

import json
import os
import re

import gymnasium as gym
import numpy as np
import pytest

from cli_helpers import run_tfrl, tuned
from tfrl.algorithms.dqn import DQN, DQNConfig, DQNTFPolicy
from tfrl.algorithms.off_policy_config import OffPolicyConfig
from tfrl.algorithms.off_policy_plan import learning_schedule
from tfrl.cli.experiment import build_config, resolve_experiment
from tfrl.execution.replay_buffer import BATCH_INDEXES

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
SMALL = {"model": {"fcnet_hiddens": [16]}, "hiddens": [8], "seed": 0}


def make_policy(**config):
    return DQNTFPolicy(OBS_SPACE, gym.spaces.Discrete(3),
                       DQNConfig.from_dict({**SMALL, **config}).to_dict())


def make_dqn(**config):
    # One sampling round of `rollout_fragment_length` steps per train() call.
    return DQN(config={**SMALL, "env": "CartPole-v1", "rollout_fragment_length": 4,
                       "train_batch_size": 8, "timesteps_per_iteration": 0,
                       "num_steps_sampled_before_learning_starts": 0, **config})


def obs(rows, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (rows, 4)).astype(np.float32)


# ------------------------------------------------------------------ config

def test_defaults_are_rllibs_and_subdicts_merge_into_theirs():
    config = DQNConfig()
    assert (config.lr, config.train_batch_size, config.target_network_update_freq,
            config.num_steps_sampled_before_learning_starts, config.n_step,
            config.dueling, config.double_q, config.hiddens) == (
        5e-4, 32, 500, 1000, 1, True, True, [256])
    assert config.prioritized_replay
    merged = DQNConfig.from_dict({"replay_buffer_config": {"type": "MultiAgentReplayBuffer"},
                                  "exploration_config": {"final_epsilon": 0.1},
                                  "learning_starts": 7})
    assert not merged.prioritized_replay
    assert merged.replay_buffer_config["capacity"] == 50000
    assert merged.exploration_config == {"type": "EpsilonGreedy", "initial_epsilon": 1.0,
                                         "final_epsilon": 0.1, "epsilon_timesteps": 10000}
    assert merged.num_steps_sampled_before_learning_starts == 7


@pytest.mark.parametrize("config, message", [
    ({"num_atoms": 0}, r"num_atoms must be an int >= 1; received 0"),
    ({"num_atoms": 51, "distributional": "iqn"},
     r"distributional must be one of \('c51', 'quantile'\) .*received 'iqn'"),
    ({"num_atoms": 51, "v_min": 1.0, "v_max": -1.0},
     r"C51 \(num_atoms > 1\) needs v_min < v_max; received v_min=1.0, v_max=-1.0"),
    ({"noisy": True, "model": {"use_lstm": True}},
     r"received model\['use_lstm'\]=True. Drop 'use_lstm', or use num_atoms=1"),
    ({"sigma0": -0.5}, r"sigma0 must be a finite float >= 0; received -0.5"),
    ({"td_error_loss_fn": "l1"}, r"td_error_loss_fn must be one of \('huber', 'mse'\); "
                                 r"received 'l1'"),
    ({"hiddens": [0]}, r"hiddens must be a list of positive ints; received \[0\]"),
    ({"replay_buffer_config": {"type": "Fancy"}}, r"replay_buffer_config\['type'\] must be one "
                                                  r"of .*received 'Fancy'"),
    ({"replay_buffer_config": {"capacity": 0}}, r"'capacity'\] must be an int >= 1; received 0"),
    ({"replay_buffer_config": {"prioritized_replay_alpha": -1}},
     r"'prioritized_replay_alpha'\] must be a finite float >= 0; received -1"),
    ({"replay_buffer_config": {"replay_sequence_length": 4}},
     r"'replay_sequence_length'\] must be 1 .*received 4"),
    ({"replay_buffer_config": {"worker_side_prioritization": True}},
     r"'worker_side_prioritization'\]=True is not implemented"),
    ({"replay_buffer_config": {"capasity": 10}}, r"'capasity'.*Did you mean 'capacity'"),
    ({"exploration_config": {"type": "SoftQ"}}, r"exploration_config\['type'\] must be "
                                                r"'EpsilonGreedy'.*received 'SoftQ'"),
    ({"exploration_config": {"final_epsilon": 1.5}},
     r"exploration_config\['final_epsilon'\] must be a finite float in \[0, 1\]; "
     r"received 1.5"),
    ({"exploration_config": {"epsilon_timesteps": 0}},
     r"'epsilon_timesteps'\] must be an int >= 1; received 0"),
    ({"training_intensity": 0}, r"training_intensity"),
    ({"n_step": 0}, r"n_step"),
])
def test_bad_config_values_are_rejected_naming_the_key(config, message):
    with pytest.raises(ValueError, match=message):
        DQNConfig.from_dict(config)


def test_config_shares_off_policy_configs_replay_keys():
    config = DQNConfig()
    assert isinstance(config, OffPolicyConfig)
    assert config.replay_buffer_config == {
        "type": "MultiAgentPrioritizedReplayBuffer", "capacity": 50000,
        "prioritized_replay_alpha": 0.6, "prioritized_replay_beta": 0.4,
        "prioritized_replay_eps": 1e-6, "final_prioritized_replay_beta": None,
        "prioritized_replay_beta_annealing_timesteps": 20000, "replay_sequence_length": 1,
        "worker_side_prioritization": False}
    # RLlib's single-agent type names are accepted too.
    assert DQNConfig.from_dict({"replay_buffer_config": {"type": "PrioritizedReplayBuffer"}}
                               ).prioritized_replay
    assert not DQNConfig.from_dict({"replay_buffer_config": {"type": "ReplayBuffer"}}
                                   ).prioritized_replay
    # training() merges into the current subdicts.
    changed = config.training(exploration_config={"epsilon_timesteps": 5}).training(
        exploration_config={"final_epsilon": 0.5})
    assert (changed.exploration_config["epsilon_timesteps"],
            changed.exploration_config["final_epsilon"]) == (5, 0.5)
    with pytest.raises(ValueError, match=r"DQNConfig: replay_buffer_config holds "
                                         r"'learning_starts'"):
        DQNConfig.from_dict({"replay_buffer_config": {"learning_starts": 10}})


def test_prioritized_replay_beta_is_annealed_over_stored_steps():
    algo = make_dqn(replay_buffer_config={
        "prioritized_replay_beta": 0.4, "final_prioritized_replay_beta": 1.0,
        "prioritized_replay_beta_annealing_timesteps": 8})
    buffer = algo.local_replay_buffer
    betas = []
    for _ in range(3):  # 4 steps per round
        algo.train()
        betas.append(buffer.beta())
    algo.stop()
    np.testing.assert_allclose(betas, [0.7, 1.0, 1.0])
    # Without a final beta (the default), or with the same one, beta stays constant.
    for final in (None, 0.5):
        constant = make_dqn(replay_buffer_config={"prioritized_replay_beta": 0.5,
                                                  "final_prioritized_replay_beta": final})
        constant.train()
        assert constant.local_replay_buffer.prioritized_replay_beta == 0.5
        assert constant.local_replay_buffer.beta() == 0.5
        constant.stop()
    with pytest.raises(ValueError, match=r"replay_buffer_config\['final_prioritized_replay_beta'\] "
                                         r"must be None or a finite float in \[0, 1\]; received 2"):
        DQNConfig.from_dict({"replay_buffer_config": {"final_prioritized_replay_beta": 2}})


def test_box_action_space_is_rejected_naming_the_alternatives():
    with pytest.raises(ValueError, match=r"DQNTFPolicy needs a Discrete action space.*"
                                         r"received Box.*use SAC or TD3"):
        DQNTFPolicy(OBS_SPACE, gym.spaces.Box(-1.0, 1.0, (1,)), DQNConfig().to_dict())
    with pytest.raises(ValueError, match=r"needs a Discrete action space.*received Box"):
        DQN(config={**SMALL, "env": "Pendulum-v1"})


# ------------------------------------------------------------------ acting

def test_epsilon_falls_linearly_over_epsilon_timesteps():
    policy = make_policy(exploration_config={"initial_epsilon": 1.0, "final_epsilon": 0.1,
                                             "epsilon_timesteps": 100})
    values = [policy.epsilon_schedule.value(t) for t in (0, 50, 100, 1000)]
    np.testing.assert_allclose(values, [1.0, 0.55, 0.1, 0.1])
    assert policy.cur_epsilon == 1.0
    policy.global_timestep = 50
    assert policy.cur_epsilon == pytest.approx(0.55)


def test_epsilon_greedy_replaces_that_share_of_greedy_actions():
    policy = make_policy(exploration_config={"initial_epsilon": 1.0, "final_epsilon": 0.0,
                                             "epsilon_timesteps": 1000})
    assert policy.inference == "numpy"
    batch = obs(3000)
    greedy = policy.compute_actions(batch, explore=False)[0]
    # At timestep 500 epsilon is 0.5: half the rows act at random, a third of which
    # happen to pick the greedy action.
    explored = policy.compute_actions(batch, explore=True, timestep=500)[0]
    assert explored.dtype == greedy.dtype and set(np.unique(explored)) == {0, 1, 2}
    assert np.mean(explored != greedy) == pytest.approx(0.5 * 2 / 3, abs=0.03)
    # Past epsilon_timesteps (final_epsilon 0): greedy.
    np.testing.assert_array_equal(policy.compute_actions(batch, timestep=1000)[0], greedy)


def test_greedy_action_is_the_argmax_of_the_dueling_q_values():
    policy = make_policy(dueling=True)
    batch = obs(20)
    q = policy.q_values(policy.model, batch).numpy()
    actions, _, extras = policy.compute_actions(batch, explore=False)
    np.testing.assert_array_equal(actions, q.argmax(axis=1))
    # Q = V + A - mean A, with V the value head and A the model's outputs.
    a = extras["action_dist_inputs"]
    np.testing.assert_allclose(q, extras["vf_preds"][:, None] + a - a.mean(1, keepdims=True),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ learning

def target_weights(algo):
    return [w.numpy().copy() for w in algo.get_policy().target_model.weights]


def same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_target_network_is_copied_exactly_every_target_network_update_freq_steps():
    algo = make_dqn(target_network_update_freq=12)
    policy = algo.get_policy()
    assert same(target_weights(algo), policy.get_weights())  # a copy from the start
    updated_at = []
    for _ in range(10):  # 4 steps per round, one learning step per round
        before = target_weights(algo)
        result = algo.train()
        after = target_weights(algo)
        if not same(before, after):
            updated_at.append(result["timesteps_total"])
            assert same(after, policy.get_weights())
    algo.stop()
    assert updated_at == [12, 24, 36]
    assert result["counters"]["num_target_updates"] == 3


def test_tau_moves_the_target_that_share_of_the_way():
    policy = make_policy(tau=0.25)
    start = [w.numpy().copy() for w in policy.target_model.weights]
    np.testing.assert_array_equal(start[0], policy.get_weights()[0])  # a copy at first
    online = [w + 1.0 for w in policy.get_weights()]
    policy.set_weights(online)
    policy.update_target()
    for target, before, now in zip(policy.target_model.weights, start, online):
        np.testing.assert_allclose(target.numpy(), 0.25 * now + 0.75 * before, rtol=1e-6)
    policy.update_target(tau=1.0)
    assert same([w.numpy() for w in policy.target_model.weights], online)


@pytest.mark.parametrize("intensity, rounds, grad_updates", [
    (None, 6, 6),  # one minibatch of 8 per round of 4 steps
    (4, 3, 6),  # 4 x 4 = 16 replayed rows per round: 2 minibatches of 8
    (0.5, 8, 2),  # 0.5 x 4 = 2 rows per round: one minibatch every 4 rounds
])
def test_training_intensity_sets_gradient_steps_per_sampled_step(intensity, rounds,
                                                                 grad_updates):
    algo = make_dqn(training_intensity=intensity)
    for _ in range(rounds):
        result = algo.train()
    algo.stop()
    assert result["timesteps_total"] == 4 * rounds
    assert result["counters"]["num_env_steps_trained"] == 8 * grad_updates
    assert algo.get_policy().num_grad_updates.numpy() == grad_updates
    # Replayed rows per sampled step: the intensity asked for (8 / 4 natively).
    assert grad_updates * 8 / (4 * rounds) == (intensity or 2)


def test_learning_schedule_rounds_to_whole_steps():
    base = {"rollout_fragment_length": 256, "num_envs_per_worker": 1, "num_workers": 0,
            "train_batch_size": 64}
    assert learning_schedule({**base, "training_intensity": None}) == (1, 1)
    assert learning_schedule({**base, "training_intensity": 32}) == (1, 128)
    assert learning_schedule({**base, "num_envs_per_worker": 2, "training_intensity": 32}
                             ) == (1, 256)
    assert learning_schedule({**base, "training_intensity": 0.05}) == (5, 1)  # 0.2 per round


def test_priorities_are_the_td_errors_after_learning():
    algo = make_dqn(target_network_update_freq=1000, training_intensity=4,
                    replay_buffer_config={"prioritized_replay_alpha": 1.0,
                                          "prioritized_replay_eps": 0.01})
    assert algo.local_replay_buffer.prioritized_replay
    replayed = []
    buffer = algo.local_replay_buffer
    replay = buffer.replay
    buffer.replay = lambda: replayed.append(replay()) or replayed[-1]
    algo.train()
    algo.stop()
    (batch,) = replayed
    policy = algo.get_policy()
    assert policy.num_grad_updates.numpy() == 2
    priorities = buffer.get_state()["buffers"]["default_policy"]["priorities"]
    td = policy.td_errors(batch)
    assert td.shape == (16,) and np.all(np.abs(td) > 0)
    # Rows replayed twice keep the priority of their last occurrence.
    last = {int(i): k for k, i in enumerate(batch[BATCH_INDEXES])}
    for slot, k in last.items():
        assert priorities[slot] == pytest.approx(abs(td[k]) + 0.01, rel=1e-6)
    never = sorted(set(range(len(buffer))) - set(last))
    np.testing.assert_array_equal(priorities[never], 1.0)  # max priority at insertion


def test_multi_agent_dqn_replays_learns_and_prioritizes_per_policy():
    # Two agents on two policies: each policy has its own prioritized buffer of its
    # agent's rows, learns from it, gets its priorities from its own TD errors and its
    # own target copy.
    from tfrl.env.multi_agent_env import make_multi_agent
    from tfrl.env.registry import register_env
    from tfrl.policy.policy import PolicySpec

    two_cartpoles = make_multi_agent("CartPole-v1")
    register_env("dqn_two_cartpoles", lambda ctx: two_cartpoles({"num_agents": 2}))
    algo = make_dqn(env="dqn_two_cartpoles", target_network_update_freq=8, multiagent={
        "policies": {"p0": PolicySpec(), "p1": PolicySpec()},
        "policy_mapping_fn": lambda aid, episode, worker=None, **kw: f"p{aid}"})
    initial = algo.get_weights()
    for _ in range(3):  # 4 env steps per round, one gradient step per policy and round
        result = algo.train()
    buffer = algo.local_replay_buffer
    assert buffer.prioritized_replay and sorted(buffer.replay_buffers) == ["p0", "p1"]
    assert sorted(result["info"]["learner"]) == ["p0", "p1"]
    state = buffer.get_state()["buffers"]
    for pid in ("p0", "p1"):
        policy = algo.get_policy(pid)
        assert policy.num_grad_updates.numpy() == 3
        assert not all(np.array_equal(a, b)
                       for a, b in zip(initial[pid], policy.get_weights()))
        # Replayed rows carry |TD error| + eps (not the insertion priority 1.0).
        assert np.any(state[pid]["priorities"] != 1.0), state[pid]["priorities"]
        # The target was copied at step 8 (after the second round's update), not since.
        target = [w.numpy() for w in policy.target_model.weights]
        assert not same(target, initial[pid]) and not same(target, policy.get_weights())
    algo.stop()


def test_td_errors_match_the_loss_math():
    policy = make_policy(double_q=True, gamma=0.9, dueling=False)
    rng = np.random.default_rng(0)
    batch = {"obs": obs(6, 1), "new_obs": obs(6, 2), "actions": rng.integers(3, size=6),
             "rewards": rng.normal(size=6).astype(np.float32),
             "terminateds": np.array([0, 0, 1, 0, 0, 1], bool),
             "n_step": np.array([1, 2, 3, 1, 1, 2], np.int32)}
    policy.set_weights([w + 0.01 for w in policy.get_weights()])  # online != target
    q = policy.q_values(policy.model, batch["obs"]).numpy()
    q_next = policy.q_values(policy.model, batch["new_obs"]).numpy()
    q_next_target = policy.q_values(policy.target_model, batch["new_obs"]).numpy()
    best = q_next_target[np.arange(6), q_next.argmax(1)]
    target = batch["rewards"] + 0.9 ** batch["n_step"] * (1 - batch["terminateds"]) * best
    np.testing.assert_allclose(policy.td_errors(batch), q[np.arange(6), batch["actions"]]
                               - target, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- CLI

def test_tfrl_train_runs_dqn_and_the_tuned_file_resolves(tmp_path):
    logdir = str(tmp_path / "run")
    out = run_tfrl("train", "--algo=DQN", "--env=CartPole-v1", "--notuned", "--seed=0",
              "--config_override=timesteps_per_iteration=64",
              "--config_override=learning_starts=32", "--config_override=hiddens=[8]",
              "--config_override=model.fcnet_hiddens=[16]", "--stop=training_iteration=2",
              f"--logdir={logdir}", "--checkpoint_every=2")
    lines = out.splitlines()
    assert re.match(r"iter +2  steps +128  reward", lines[1]), lines
    assert lines[2].startswith("Finished (training_iteration=2 >= 2): 2 iterations, 128 env")
    assert "checkpoint_000002" in os.listdir(logdir)
    out = run_tfrl("train", "--algo=DQN", f"--config={tuned('dqn_cartpole.yaml')}",
                   "--dry_run")
    assert "DQN" in out and "training_intensity" in out


def test_tfrl_train_runs_dqn_from_the_tuned_file(tmp_path):
    # `tfrl train --algo=DQN` with tfrl/tuned/dqn_cartpole.yaml as it is, shortened to
    # one 256-step round (the file's rollout_fragment_length) learning from step 128 on,
    # with small nets: training_intensity 32 makes that round one learning phase of
    # 32 * 256 / 64 = 128 gradient steps of 64 rows, in one compiled call.
    logdir = str(tmp_path / "dqn")
    lines = run_tfrl("train", "--algo=DQN", f"--config={tuned('dqn_cartpole.yaml')}",
                     "--config_override=timesteps_per_iteration=256",
                     "--config_override=learning_starts=128",
                     "--config_override=model.fcnet_hiddens=[16]",
                     "--stop=training_iteration=1", f"--logdir={logdir}").splitlines()
    assert re.match(r"iter +1  steps +256  reward", lines[0]), lines
    assert lines[1].startswith("Finished (training_iteration=1 >= 1): 1 iterations, 256 env")
    with open(os.path.join(logdir, "result.json")) as f:
        (result,) = [json.loads(line) for line in f]
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert stats["num_grad_updates"] == 128 and stats["num_traces"] == 1
    assert np.isfinite(stats["total_loss"] if "total_loss" in stats else stats["loss"])
    with open(os.path.join(logdir, "experiment.json")) as f:
        experiment = json.load(f)
    assert experiment["algo"] == "DQN" and experiment["config"]["n_step"] == 3


def test_zoo_file_holds_rl_zoos_cartpole_settings():
    # RL Baselines3 Zoo's CartPole DQN: train_freq 256, gradient_steps 128, batch 64.
    zoo = os.path.join(os.path.dirname(__file__), "..", "tfrl", "tuned",
                       "dqn_cartpole_zoo.yaml")
    config = build_config(resolve_experiment(zoo))
    assert isinstance(config, DQNConfig)
    assert learning_schedule(config.to_dict()) == (1, 128)
    assert (config.lr, config.lr_schedule, config.double_q, config.dueling, config.n_step,
            config.grad_clip, config.target_network_update_freq,
            config.num_steps_sampled_before_learning_starts, config.gamma) == (
        2.3e-3, None, False, False, 1, 10.0, 10, 1000, 0.99)
    assert not config.prioritized_replay and config.replay_buffer_config["capacity"] == 100000
    assert config.exploration_config["epsilon_timesteps"] == int(0.16 * 50000)


def test_image_observations_use_the_catalogs_conv_net():
    image_space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    policy = DQNTFPolicy(image_space, gym.spaces.Discrete(4),
                         DQNConfig.from_dict({"seed": 0, "hiddens": [16]}).to_dict())
    assert type(policy.model).__name__ == "VisionNetwork"
    frames = np.random.default_rng(0).integers(0, 256, (9, 84, 84, 4), dtype=np.uint8)
    actions = policy.compute_actions(frames[:8], explore=False)[0]
    q = policy.q_values(policy.model, frames[:8]).numpy()
    np.testing.assert_array_equal(actions, q.argmax(1))
    batch = {"obs": frames[:8], "new_obs": frames[1:], "actions": actions,
             "rewards": np.ones(8, np.float32), "terminateds": np.zeros(8, bool)}
    assert np.isfinite(policy.learn_on_batch(batch, sgd_minibatch_size=4)["learner_stats"]
                       ["total_loss"])
    assert policy.num_grad_updates.numpy() == 2
    assert policy.td_errors(batch).shape == (8,)
