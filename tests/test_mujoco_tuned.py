"""The tuned MuJoCo PPO, SAC and TD3 files (RL Baselines3 Zoo's HalfCheetah and Hopper
settings) load and train one (shortened) iteration: not learning tests (a full run is 1M
steps)."""

import os

import numpy as np
import pytest

pytest.importorskip("mujoco")

from tfrl.algorithms.ppo import PPO  # noqa: E402
from tfrl.algorithms.registry import get_algorithm_class  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.utils.filter import MeanStdFilter  # noqa: E402

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned")

# file -> (env, obs size, action size, (minibatch, epochs, gamma, lambda, lr, clip)):
# the zoo's hyperparams/ppo.yml entries for HalfCheetah and Hopper.
ZOO = {
    "ppo_halfcheetah.yaml": ("HalfCheetah-v5", 17, 6, (64, 20, 0.98, 0.92, 2.0633e-5, 0.1)),
    "ppo_hopper.yaml": ("Hopper-v5", 11, 3, (32, 5, 0.999, 0.99, 9.80828e-5, 0.2)),
}


@pytest.mark.slow  # 15-18 s each on the loaded 2-core VM
@pytest.mark.parametrize("name", sorted(ZOO))
def test_tuned_mujoco_ppo_file_loads_and_trains_one_iteration(name):
    env_id, obs_size, act_size, settings = ZOO[name]
    config = build_config(resolve_experiment(os.path.join(TUNED, name)))
    assert config.env == env_id
    assert (config.sgd_minibatch_size, config.num_sgd_iter, config.gamma, config.lambda_,
            config.lr, config.clip_param) == settings
    assert config.observation_filter == "MeanStdFilter"
    assert (config.num_envs_per_worker, config.rollout_fragment_length,
            config.train_batch_size) == (1, 512, 512)
    algo = PPO(config=config)
    try:
        result = algo.train()
        assert result["timesteps_total"] == 512
        policy = algo.get_policy()
        assert policy.observation_space.shape == (obs_size,)
        assert policy.action_space.shape == (act_size,)
        # Separate 256x256 policy and value networks, and a free log std per action.
        kernels = [tuple(w.shape) for w in policy.model.trainable_weights if "kernel" in w.path]
        assert kernels.count((obs_size, 256)) == 2 and kernels.count((256, 256)) == 2
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert np.isfinite(stats["total_loss"])
        # The observation filter saw every observation: 512 steps' and each reset's.
        obs_filter = algo.workers.local_worker().filters["default_policy"]
        assert isinstance(obs_filter, MeanStdFilter)
        assert obs_filter.running_stats.n == 512 + 1 + result["episodes_this_iter"]
        assert np.all(obs_filter.running_stats.std > 0)
    finally:
        algo.stop()


# file -> (algo, env, obs size, action size, hidden sizes): the zoo's hyperparams/sac.yml
# and td3.yml MuJoCo entries (SB3's defaults plus learning_starts 10000; TD3: lr 1e-3,
# [400, 300], N(0, 0.1) noise).
OFF_POLICY = {
    "sac_halfcheetah.yaml": ("SAC", "HalfCheetah-v5", 17, 6, 256),
    "sac_hopper.yaml": ("SAC", "Hopper-v5", 11, 3, 256),
    "td3_halfcheetah.yaml": ("TD3", "HalfCheetah-v5", 17, 6, 400),
    "td3_hopper.yaml": ("TD3", "Hopper-v5", 11, 3, 400),
}
# One iteration of 128 env steps: two 64-step rounds, learning after each (64 gradient
# steps of 256 rows per round, in the file's proportions) once 64 steps are sampled.
SHORT = ["num_steps_sampled_before_learning_starts=64", "timesteps_per_iteration=128"]


def _zoo_settings(algo_name, config):
    """The zoo's values as the file states them in tfrl's keys."""
    replay = config.replay_buffer_config
    assert (replay["type"], replay["capacity"]) == ("MultiAgentReplayBuffer", 1_000_000)
    assert (config.gamma, config.tau, config.train_batch_size, config.twin_q) == (
        0.99, 0.005, 256, True)
    # One gradient step per sampled step (the zoo's train_freq 1, gradient_steps 1).
    assert config.training_intensity == config.train_batch_size
    assert config.num_steps_sampled_before_learning_starts == 10_000
    assert config.observation_filter == "NoFilter"  # the zoo normalizes nothing here
    if algo_name == "SAC":
        assert set(config.optimization.values()) == {3e-4}
        assert (config.initial_alpha, config.target_entropy) == (1.0, "auto")
    else:
        assert (config.actor_lr, config.critic_lr, config.policy_delay) == (1e-3, 1e-3, 2)
        assert (config.target_noise, config.target_noise_clip, config.l2_reg) == (0.2, 0.5, 0.0)
        noise = config.exploration_config
        assert (noise["type"], noise["random_timesteps"], noise["stddev"]) == (
            "GaussianNoise", 10_000, 0.1)


@pytest.mark.slow  # 15-35 s each on the loaded 2-core VM
@pytest.mark.parametrize("name", sorted(OFF_POLICY))
def test_tuned_mujoco_off_policy_file_loads_and_learns_one_short_iteration(name):
    algo_name, env_id, obs_size, act_size, hidden = OFF_POLICY[name]
    path = os.path.join(TUNED, name)
    config = build_config(resolve_experiment(path))
    assert (config.env, type(config).__name__) == (env_id, f"{algo_name}Config")
    _zoo_settings(algo_name, config)
    overrides = SHORT + (["exploration_config.random_timesteps=64"] if algo_name == "TD3"
                         else [])
    config = build_config(resolve_experiment(path, overrides=overrides))
    algo = get_algorithm_class(algo_name)(config=config)
    try:
        policy = algo.get_policy()
        assert policy.observation_space.shape == (obs_size,)
        assert policy.action_space.shape == (act_size,)
        # Actor and twin critics: first layers from the observation (actor) and from the
        # observation with the action (critics).
        kernels = [tuple(w.shape) for w in policy.model.trainable_weights if "kernel" in w.path]
        assert kernels.count((obs_size, hidden)) == 1
        assert kernels.count((obs_size + act_size, hidden)) == 2
        before = [w.numpy().copy() for w in policy.model.trainable_weights]
        result = algo.train()
        assert result["timesteps_total"] == 128
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        # Learning after both rounds: 128 gradient steps, none skipped as non-finite.
        assert stats["num_grad_updates"] == 128
        assert stats["num_nonfinite_updates_skipped"] == 0
        assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["actor_loss"])
        after = policy.model.trainable_weights
        assert all(np.all(np.isfinite(w.numpy())) for w in after)
        assert all(not np.array_equal(w.numpy(), b) for w, b in zip(after, before))
        # Actions on a fresh observation are finite and inside the Box.
        rng = np.random.default_rng(0)
        actions = policy.compute_actions(rng.normal(size=(4, obs_size)), explore=False)[0]
        assert actions.shape == (4, act_size)
        assert np.all(np.isfinite(actions)) and np.all(np.abs(actions) <= 1.0)
    finally:
        algo.stop()
