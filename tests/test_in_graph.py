"""The in-graph training path (`.rollouts(in_graph=True)`, tfrl.execution.in_graph).

- `time_major_advantages` equals `postprocessing.compute_advantages` on every trajectory
  cut out of a `[T, N]` batch (hand-made numbers; GAE, returns with and without a critic).
- A compiled rollout of PPO's policy: its advantages equal `compute_advantages` on the
  rollout's numpy output, its bootstrap values are 0 after a termination and the
  policy's value of the reached observation after a truncation or the rollout's end,
  its values are the policy's, and its running episode returns are the sums of the
  rewards (episodes spanning calls).
- Aligned with the Python path (greedy actions from gymnasium's start states, the same
  weights): the same batch, advantages, learner stats and updated weights.
- Pendulum (Box actions, unsquashed into the torque bounds; episodes truncated inside the
  rollout and bootstrapped) against the Python path: the same rollout and advantages.
- `algo.train()`: PPO's learner stats (the names the Python path reports: the same
  policy code makes them), steps and episodes counted exactly, one trace; A2C and PG.
- Checkpoints continue bit-identically; weights and compute_single_action work.
- Every refused configuration raises naming what was received and how to fix it.
"""

import numpy as np
import pytest

from tfrl.algorithms.a2c import A2CConfig
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.dqn import DQNConfig
from tfrl.algorithms.pg import PGConfig
from tfrl.algorithms.ppo import PPOConfig
from tfrl.data.sample_batch import SampleBatch
from tfrl.evaluation.postprocessing import compute_advantages
from tfrl.execution.in_graph import time_major_advantages

TINY = {"fcnet_hiddens": [8]}


def ppo_config(env="tfrl/CartPole-v1", num_envs=4, fragment=16, **training):
    training = {"train_batch_size": num_envs * fragment, "sgd_minibatch_size": 16,
                "num_sgd_iter": 2, "model": TINY, "lr": 1e-3, **training}
    return (PPOConfig().environment(env)
            .rollouts(in_graph=True, num_envs_per_worker=num_envs,
                      rollout_fragment_length=fragment)
            .training(**training).debugging(seed=0))


def trajectories(cut):
    """[(env, start, end)] of the trajectories of a [T, N] `cut` mask."""
    T, N = cut.shape
    out = []
    for n in range(N):
        start = 0
        for t in range(T):
            if cut[t, n]:
                out.append((n, start, t + 1))
                start = t + 1
    return out


def reference_advantages(rewards, vf_preds, last_r, cut, **kwargs):
    """`compute_advantages` on each trajectory of the [T, N] batch."""
    advantages, targets = np.zeros_like(rewards), np.zeros_like(rewards)
    for n, start, end in trajectories(cut):
        batch = SampleBatch({"rewards": rewards[start:end, n],
                             "vf_preds": vf_preds[start:end, n]})
        compute_advantages(batch, last_r[end - 1, n], **kwargs)
        advantages[start:end, n] = batch["advantages"]
        targets[start:end, n] = batch["value_targets"]
    return advantages, targets


@pytest.mark.parametrize("use_gae,use_critic", [(True, True), (False, True), (False, False)])
def test_time_major_advantages_equal_compute_advantages(use_gae, use_critic):
    rng = np.random.default_rng(0)
    T, N = 12, 3
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    vf_preds = rng.normal(size=(T, N)).astype(np.float32)
    last_r = rng.normal(size=(T, N)).astype(np.float32)
    cut = rng.random((T, N)) < 0.25
    cut[-1] = True  # the rollout's end
    kwargs = dict(gamma=0.9, lambda_=0.8, use_gae=use_gae, use_critic=use_critic)
    expected = reference_advantages(rewards, vf_preds, last_r, cut, **kwargs)
    got = time_major_advantages(rewards, vf_preds, last_r, cut, **kwargs)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-5)


def test_time_major_advantages_hand_computed():
    # One env, T=3, episode ends after step 1 (terminated: last_r 0); the rollout's end
    # bootstraps with 2.0. gamma=0.5, lambda=1, V = 0: plain discounted sums.
    rewards = np.array([[1.0], [2.0], [4.0]], np.float32)
    last_r = np.array([[9.0], [0.0], [2.0]], np.float32)
    cut = np.array([[False], [True], [True]])
    adv, targets = time_major_advantages(rewards, np.zeros_like(rewards), last_r, cut,
                                         gamma=0.5, lambda_=1.0)
    np.testing.assert_allclose(adv.numpy()[:, 0], [1.0 + 0.5 * 2.0, 2.0, 4.0 + 0.5 * 2.0])
    np.testing.assert_allclose(targets.numpy()[:, 0], adv.numpy()[:, 0])


def test_time_major_advantages_rejects_bad_input():
    with pytest.raises(ValueError, match="use_gae=True needs use_critic=True"):
        time_major_advantages(np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)),
                              np.ones((2, 1), bool), gamma=0.9, lambda_=1.0,
                              use_critic=False)
    with pytest.raises(ValueError, match=r"cut_t must be \[T, N\].*received \[2\]"):
        time_major_advantages(np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)),
                              np.ones(2, bool), gamma=0.9, lambda_=1.0)


@pytest.fixture(scope="module")
def cartpole_algo():
    # Episodes of at most 12 steps: truncations within a 16-step rollout.
    algo = ppo_config(env_config={"max_episode_steps": 12}).build()
    yield algo
    algo.stop()


def test_rollout_advantages_equal_compute_advantages_on_its_output(cartpole_algo):
    algo = cartpole_algo
    policy = algo.get_policy()
    out = algo.in_graph_iteration.sample()  # [T, N, ...] numpy
    T, N = out["rewards"].shape
    assert (T, N) == (16, 4)
    terminated, truncated = out["terminateds"], out["truncateds"]
    assert truncated.any() and terminated.any()
    # Acting with the policy's model: vf_preds are its values of the observations.
    values = policy.value(out["obs"].reshape(T * N, 4)).reshape(T, N)
    np.testing.assert_allclose(out["vf_preds"], values, rtol=1e-5, atol=1e-6)
    # Bootstrap values: 0 after a termination, else V(the observation the step reached).
    reached = policy.value(out["new_obs"].reshape(T * N, 4)).reshape(T, N)
    np.testing.assert_allclose(out["last_r"], np.where(terminated, 0.0, reached),
                               rtol=1e-5, atol=1e-6)
    # Within an episode the next step starts where this one ended.
    done = terminated | truncated
    np.testing.assert_array_equal(out["obs"][1:][~done[:-1]], out["new_obs"][:-1][~done[:-1]])
    cut = done.copy()
    cut[-1] = True
    config = policy.config
    expected = reference_advantages(out["rewards"], out["vf_preds"], out["last_r"], cut,
                                    gamma=config["gamma"], lambda_=config["lambda"])
    np.testing.assert_allclose(out["advantages"], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["value_targets"], expected[1], rtol=1e-5, atol=1e-5)


def test_running_episode_returns_are_sums_of_rewards_across_calls():
    algo = ppo_config(env="tfrl/Pendulum-v1", num_envs=2, fragment=5, sgd_minibatch_size=10,
                      env_config={"max_episode_steps": 7}).build()
    outs = [algo.in_graph_iteration.sample() for _ in range(3)]  # 15 steps: episodes 7+7+1
    rewards = np.concatenate([o["rewards"] for o in outs])  # [15, 2]
    returns = np.concatenate([o["episode_return"] for o in outs])
    lengths = np.concatenate([o["episode_length"] for o in outs])
    truncated = np.concatenate([o["truncateds"] for o in outs])
    np.testing.assert_array_equal(np.nonzero(truncated[:, 0])[0], [6, 13])
    np.testing.assert_array_equal(lengths[:, 0], [1, 2, 3, 4, 5, 6, 7] * 2 + [1])
    expected = np.concatenate([np.cumsum(rewards[:7], 0), np.cumsum(rewards[7:14], 0),
                               rewards[14:]])
    np.testing.assert_allclose(returns, expected, rtol=1e-5)
    # Box actions: stored as sampled, sent to the env unsquashed into [-2, 2].
    assert outs[0]["actions"].shape == (5, 2, 1)
    algo.stop()


def test_train_counts_steps_and_episodes_and_reports_the_python_paths_keys():
    algo = ppo_config(env="tfrl/Pendulum-v1", num_envs=4, fragment=10,
                      env_config={"max_episode_steps": 7}).build()
    results = [algo.train() for _ in range(3)]
    # 4 envs x 10 steps per iteration; episodes of 7 steps end at steps 7, 14, 21, 28.
    assert [r["timesteps_total"] for r in results] == [40, 80, 120]
    assert [r["episodes_this_iter"] for r in results] == [4, 4, 8]
    last = results[-1]
    assert last["num_env_steps_sampled"] == last["num_env_steps_trained"] == 120
    assert last["info"]["num_agent_steps_trained"] == 120
    assert last["hist_stats"]["episode_lengths"] == [7] * 16
    assert len(set(last["hist_stats"]["episode_reward"])) == 16  # real returns
    assert last["episode_len_mean"] == 7.0
    stats = last["info"]["learner"]["default_policy"]["learner_stats"]
    # PPO's Python-path learner stats, by name (2 epochs x 40 // 16 minibatches each).
    assert set(stats) == {
        "total_loss", "policy_loss", "vf_loss", "vf_explained_var", "kl", "entropy",
        "clip_fraction", "cur_kl_coeff", "cur_lr", "entropy_coeff", "num_grad_updates",
        "num_nonfinite_updates_skipped", "num_traces"}
    assert stats["num_grad_updates"] == 3 * 2 * (40 // 16)
    assert algo.in_graph_iteration.num_traces == 1
    assert algo.get_policy().num_traces["learn_on_batch"] == 1
    algo.stop()


@pytest.mark.parametrize("config_class", [A2CConfig, PGConfig])
def test_a2c_and_pg_train_in_graph(config_class):
    config = (config_class().environment("tfrl/CartPole-v1")
              .rollouts(in_graph=True, num_envs_per_worker=4, rollout_fragment_length=8,
                        batch_mode="truncate_episodes")
              .training(train_batch_size=32, model=TINY)
              .reporting(min_time_s_per_iteration=0).debugging(seed=0))
    algo = config.build()
    result = algo.train()
    assert result["timesteps_total"] == 32
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert stats["num_grad_updates"] == 1 and np.isfinite(stats["policy_loss"])
    algo.stop()


def test_checkpoint_round_trip_continues_bit_identically(cartpole_algo, tmp_path):
    algo = cartpole_algo
    algo.train()
    path = algo.save(str(tmp_path))
    continued = [algo.train()["hist_stats"]["episode_reward"] for _ in range(2)]
    weights = algo.get_policy().get_weights()
    restored = ppo_config(env_config={"max_episode_steps": 12}).build()
    restored.restore(path)
    again = [restored.train()["hist_stats"]["episode_reward"] for _ in range(2)]
    assert again == continued
    for a, b in zip(restored.get_policy().get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(restored.in_graph_iteration.get_state().values(),
                    algo.in_graph_iteration.get_state().values()):
        np.testing.assert_array_equal(a, b)
    # The algorithm's policy is the one that learns in the graph: acting and weights
    # work as on the Python path (export too: the same policy object).
    action = restored.compute_single_action(np.zeros(4, np.float32), explore=False)
    assert action in (0, 1)
    restored.set_weights(algo.get_weights())
    np.testing.assert_array_equal(restored.compute_single_action(
        np.full(4, 0.1, np.float32), explore=False, full_fetch=True)[2]["vf_preds"],
        algo.compute_single_action(np.full(4, 0.1, np.float32), explore=False,
                                   full_fetch=True)[2]["vf_preds"])
    restored.stop()


class EpisodeEndCallbacks(DefaultCallbacks):
    def on_episode_end(self, **kwargs):
        pass


@pytest.mark.parametrize("change,match", [
    ({"env": "CartPole-v1"}, r"received env='CartPole-v1'. Expected one of \[.*'tfrl/CartPole-v1'"),
    ({"num_workers": 2}, r"num_workers=2; expected 0"),
    ({"model": {"use_lstm": True}}, r"model=\{'use_lstm': True.*expected a feed-forward model"),
    ({"observation_filter": "MeanStdFilter"}, r"observation_filter='MeanStdFilter'"),
    ({"batch_mode": "complete_episodes"}, r"batch_mode='complete_episodes'"),
    ({"callbacks": EpisodeEndCallbacks}, r"overriding \['on_episode_end'\]"),
    ({"env_config": {"gravity": 3.0}}, r"env_config for tfrl/CartPole-v1 takes max_episode_steps"),
])
def test_refused_configs_say_what_and_how_to_fix(change, match):
    config = ppo_config().replace(**change)
    with pytest.raises(ValueError, match=match) as info:
        config.build()
    assert "in_graph" in str(info.value)


def test_refused_algorithms_and_a2c_microbatches():
    config = (DQNConfig().environment("tfrl/CartPole-v1").rollouts(in_graph=True))
    with pytest.raises(ValueError, match=r"DQN does not train on the in-graph path.*"
                                         r"\(PPO, A2C, PG\)"):
        config.build()
    config = (A2CConfig().environment("tfrl/CartPole-v1").rollouts(in_graph=True)
              .training(microbatch_size=10))
    with pytest.raises(ValueError, match=r"microbatch_size=10. Expected None"):
        config.build()
    # PG's default batch_mode ("complete_episodes") needs the Python path.
    with pytest.raises(ValueError, match=r"batch_mode='complete_episodes'"):
        PGConfig().environment("tfrl/CartPole-v1").rollouts(in_graph=True).build()


def test_two_replicas_learn_what_one_does():
    # MirroredStrategy over the conftest's two logical CPUs: acting runs once for all
    # envs; each minibatch is split over the replicas, whose gradients are summed.
    one = ppo_config().build()
    two = ppo_config(num_gpus=2, _fake_gpus=True).build()
    assert two.get_policy().strategy.num_replicas_in_sync == 2
    r1, r2 = one.train(), two.train()
    assert r1["hist_stats"]["episode_reward"] == r2["hist_stats"]["episode_reward"]
    s1 = r1["info"]["learner"]["default_policy"]["learner_stats"]
    s2 = r2["info"]["learner"]["default_policy"]["learner_stats"]
    np.testing.assert_allclose(s2["total_loss"], s1["total_loss"], rtol=1e-5)
    for w1, w2 in zip(one.get_policy().get_weights(), two.get_policy().get_weights()):
        np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)
    assert two.in_graph_iteration.num_traces == 1
    with pytest.raises(ValueError, match=r"2 replicas.*sgd_minibatch_size=15. Expected a "
                                         r"multiple of 2"):
        ppo_config(num_gpus=2, _fake_gpus=True, sgd_minibatch_size=15).build()
    one.stop()
    two.stop()


def test_tf_env_names_outside_the_in_graph_path_say_to_set_in_graph():
    from tfrl.env.registry import get_env_creator
    with pytest.raises(ValueError, match=r"TF-native envs .* set \.rollouts\(in_graph=True\)"):
        get_env_creator("tfrl/CartPole-v1")
    with pytest.raises(ValueError, match=r"set \.rollouts\(in_graph=True\)"):
        ppo_config().rollouts(in_graph=False).build()


def test_the_cli_takes_a_tf_env_name():
    from tfrl.cli.experiment import check_names, resolve_experiment
    exp = resolve_experiment(algo="ppo", env="tfrl/CartPole-v1", overrides=["in_graph=true"])
    check_names(exp)  # no "Unknown env": the algorithm checks TF-native names
    assert exp.algo == "PPO" and exp.config["in_graph"] is True


def test_evaluation_runs_gymnasiums_env_of_the_same_id(cartpole_algo):
    result = cartpole_algo.evaluate()["evaluation"]  # evaluation_duration: 10 episodes
    assert result["episodes_this_iter"] == 10
    assert result["episode_len_mean"] <= 12  # env_config is passed on
    assert "CartPole" in str(cartpole_algo.evaluation_workers.local_worker().env)


def test_same_batch_and_update_as_the_python_path_from_the_same_states():
    # The RNG streams align with greedy actions (explore=False) from the same start
    # states: the Python path samples gymnasium's CartPole (2 envs x 8 steps, no episode
    # ends), the in-graph path starts its TF CartPole from those states with the same
    # weights; both batches, advantages and one update (one unshuffled minibatch of all
    # 16 rows) agree.
    from tfrl.execution.iter import SharedMetrics
    from tfrl.execution.rollout_ops import standardize_fields

    def config(env, in_graph):
        return (PPOConfig().environment(env)
                .rollouts(in_graph=in_graph, num_envs_per_worker=2, rollout_fragment_length=8)
                .training(train_batch_size=16, sgd_minibatch_size=16, num_sgd_iter=1,
                          model=TINY, lr=1e-3, shuffle_sequences=False)
                .debugging(seed=0).replace(explore=False))

    python_algo = config("CartPole-v1", False).build()
    batch = python_algo.workers.local_worker().sample()  # env 0's 8 rows, then env 1's
    assert batch["env_id"].tolist() == [0] * 8 + [1] * 8
    algo = config("tfrl/CartPole-v1", True).build()
    algo.set_weights(python_algo.get_weights())
    iteration = algo.in_graph_iteration
    start = batch["obs"][[0, 8]]  # CartPole observes its state (as float32)
    state = {**iteration.get_state(), "physics": start.astype(np.float64),
             "elapsed_steps": np.zeros(2, np.int32), "obs": start,
             "episode_return": np.zeros(2, np.float32),
             "episode_length": np.zeros(2, np.int32)}
    iteration.set_state(state)
    out = iteration.sample()

    def env_major(x):  # [T, N, ...] -> [N * T, ...], the Python batch's order
        return np.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:])

    np.testing.assert_array_equal(env_major(out["actions"]), batch["actions"])
    for column in ("obs", "rewards", "vf_preds", "advantages", "value_targets"):
        np.testing.assert_allclose(env_major(out[column]), batch[column], rtol=1e-5,
                                   atol=1e-5, err_msg=column)
    # One update each on that batch.
    iteration.set_state(state)
    info, _ = iteration.step(SharedMetrics())
    in_graph_stats = info["default_policy"]["learner_stats"]
    python_stats = python_algo.get_policy().learn_on_batch(
        standardize_fields(batch, ["advantages"]))["learner_stats"]
    for key in ("total_loss", "policy_loss", "vf_loss", "kl", "entropy"):
        np.testing.assert_allclose(in_graph_stats[key], python_stats[key], rtol=1e-4,
                                   atol=1e-6, err_msg=key)
    for a, b in zip(algo.get_policy().get_weights(), python_algo.get_policy().get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    algo.stop()
    python_algo.stop()


def test_pendulum_box_actions_and_truncation_bootstrap_match_the_python_path():
    # Box actions and a truncation inside the rollout: the Python path samples gymnasium's
    # Pendulum (2 envs x 8 steps, episodes truncated after 5 steps) with greedy actions
    # around 0.6 (the mean's bias raised: unsquashed to a torque of 1.2, so a path that
    # did not unsquash would move the pendulum differently); the in-graph path starts
    # its TF Pendulum from those states with the same weights. The first episodes agree:
    # actions, observations, rewards, values, and the advantages of trajectories cut by
    # a truncation and bootstrapped with V(the observation reached).
    def config(env, in_graph):
        return (PPOConfig().environment(env, env_config={"max_episode_steps": 5})
                .rollouts(in_graph=in_graph, num_envs_per_worker=2, rollout_fragment_length=8)
                .training(train_batch_size=16, sgd_minibatch_size=16, num_sgd_iter=1,
                          model=TINY, lr=1e-3)
                .debugging(seed=0).replace(explore=False))

    python_algo = config("Pendulum-v1", False).build()
    weights = python_algo.get_policy().get_weights()
    weights[3] = weights[3] + np.array([0.6, 0.0], np.float32)  # [mean, log std] bias
    python_algo.get_policy().set_weights(weights)
    batch = python_algo.workers.local_worker().sample()
    # Env 0's first episode (5 rows), env 1's, then the second episodes' 3 rows each.
    assert batch["env_id"].tolist() == [0] * 5 + [1] * 5 + [0] * 3 + [1] * 3
    assert batch["truncateds"][:10].tolist() == ([False] * 4 + [True]) * 2
    algo = config("tfrl/Pendulum-v1", True).build()
    algo.get_policy().set_weights(weights)
    iteration = algo.in_graph_iteration
    start = batch["obs"][[0, 5]]  # [cos, sin, theta_dot] of gymnasium's start states
    physics = np.stack([np.arctan2(start[:, 1], start[:, 0]), start[:, 2]], axis=1)
    iteration.set_state({**iteration.get_state(), "physics": physics.astype(np.float64),
                         "elapsed_steps": np.zeros(2, np.int32), "obs": start,
                         "episode_return": np.zeros(2, np.float32),
                         "episode_length": np.zeros(2, np.int32)})
    out = iteration.sample()
    assert out["truncateds"][:, 0].tolist() == [False] * 4 + [True] + [False] * 3
    # The truncated step is bootstrapped with the value of the observation it reached.
    policy = algo.get_policy()
    np.testing.assert_allclose(out["last_r"][4], policy.value(out["new_obs"][4]), rtol=1e-5)
    assert np.all(np.abs(out["last_r"][4]) > 1e-3)

    def first_episodes(x):  # [T, N, ...] -> env 0's first 5 rows, then env 1's
        return np.swapaxes(x[:5], 0, 1).reshape((-1,) + x.shape[2:])

    np.testing.assert_allclose(batch["actions"][:10], 0.6, atol=0.02)
    for column in ("actions", "obs", "rewards", "vf_preds", "advantages", "value_targets"):
        np.testing.assert_allclose(first_episodes(out[column]), batch[column][:10],
                                   rtol=1e-5, atol=2e-5, err_msg=column)
    np.testing.assert_allclose(out["episode_return"][4],
                               [batch["rewards"][:5].sum(), batch["rewards"][5:10].sum()],
                               rtol=1e-5)
    algo.stop()
    python_algo.stop()
