"""Atari through tfrl: the DeepMind pipeline (gymnasium's wrappers), ale-py's vector env
with the same observations, and `preprocessor_pref="deepmind"` in the rollout worker."""

import os

import gymnasium as gym
import keras
import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")  # gymnasium's AtariPreprocessing resizes with OpenCV

from tfrl.algorithms.ppo import PPO  # noqa: E402
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.data.sample_batch import SampleBatch  # noqa: E402
from tfrl.env.vector_env import GymnasiumVectorEnv  # noqa: E402
from tfrl.env.wrappers import atari  # noqa: E402
from tfrl.env.wrappers.atari_wrappers import is_atari, wrap_deepmind  # noqa: E402
from tfrl.evaluation.rollout_worker import RolloutWorker  # noqa: E402

FRAMES = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)


def _ale(env_id, **kwargs):
    atari._ensure_ale_registered()
    return gym.make(env_id, **kwargs)


def _steps_until_life_lost(env, action, max_steps):
    env.reset(seed=0)
    for t in range(1, max_steps + 1):
        obs, _, terminated, truncated, _ = env.step(action)
        assert obs.dtype == np.uint8 and obs.shape == (84, 84, 4)
        if terminated or truncated:
            return t
    return None


def test_pipeline_gives_uint8_84x84x4_channels_last_frames():
    env = atari.make_atari("ALE/Breakout-v5")
    assert env.observation_space == FRAMES
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == (84, 84, 4) and obs.flags["C_CONTIGUOUS"]
    assert obs.nbytes == 84 * 84 * 4
    assert info["lives"] == 5
    # ALE underneath skips no frames itself; AtariPreprocessing repeats each action 4 times.
    assert env.unwrapped.spec.kwargs["frameskip"] == 1
    frame_before = info["episode_frame_number"]
    _, _, _, _, info = env.step(0)
    assert info["episode_frame_number"] - frame_before == 4
    # The stack is channels-last: the newest frame is the last channel.
    obs, _, _, _, _ = env.step(0)
    newest = obs[..., -1]
    obs_next, _, _, _, _ = env.step(0)
    np.testing.assert_array_equal(obs_next[..., -2], newest)


def test_fire_reset_starts_the_game_and_episodic_life_ends_episodes():
    # Breakout waits for FIRE: with FireReset the ball is served and a paddle that never
    # moves (action 0, NOOP) loses a life, which ends the episode; without it, nothing
    # happens for as long as we wait.
    with_fire = atari.make_atari("ALE/Breakout-v5", repeat_action_probability=0.0)
    steps = _steps_until_life_lost(with_fire, 0, 300)
    assert steps is not None and steps < 100, steps
    without = atari.make_atari("ALE/Breakout-v5", repeat_action_probability=0.0,
                               fire_reset=False)
    assert _steps_until_life_lost(without, 0, 300) is None
    # After a lost life, reset() starts a new game (as ale-py's vector env does).
    _, info = with_fire.reset()
    assert info["lives"] == 5
    vector = atari.make_atari_vector_env("ALE/Breakout-v5", 1, repeat_action_probability=0.0)
    vector.reset(seed=0)
    for t in range(1, 100):
        _, _, terminated, _, info = vector.step(np.array([0]))
        if terminated[0]:
            break
    assert terminated[0] and abs(t - steps) <= 2, (t, steps)
    _, reward, terminated, _, info = vector.step(np.array([0]))  # the autoreset: a new game
    assert info["lives"][0] == 5 and reward[0] == 0 and not terminated[0]
    vector.close()


def test_vector_env_presses_fire_after_its_noops_as_the_wrappers_do():
    # NOOP policy, no sticky actions: the ball is served by the reset's FIRE, which comes
    # after the random no-ops, so the paddle loses it the same number of agent steps
    # after every reset, as with the wrappers (ale-py's own fire reset pressed FIRE
    # before its no-ops: the no-ops then ate into the agent's time, 18 to 24 steps).
    options = dict(repeat_action_probability=0.0, clip_rewards=False)
    single = atari.make_atari("ALE/Breakout-v5", **options)
    wrapper_steps = {_steps_until_life_lost(single, 0, 300) for _ in range(3)}
    vector = atari.make_atari_vector_env("ALE/Breakout-v5", 4, **options)
    _, info = vector.reset(seed=0)
    starts, lengths, t = [info["episode_frame_number"]], [], np.zeros(4, int)
    ended = np.zeros(4, bool)
    for _ in range(150):
        obs, reward, terminated, truncated, info = vector.step(np.zeros(4, np.int64))
        assert obs.shape == (4, 84, 84, 4) and not truncated.any()
        starts.append(info["episode_frame_number"][ended])
        assert (reward[ended] == 0).all() and not terminated[ended].any()
        t[~ended] += 1
        lengths += t[terminated].tolist()
        t[ended | terminated] = 0
        ended = terminated
    vector.close()
    # 0 to 29 no-op frames, then 4 of FIRE.
    starts = np.concatenate(starts)
    assert len(set(starts.tolist())) >= 5 and starts.min() >= 4 and starts.max() <= 33, starts
    assert len(lengths) >= 16 and set(lengths) == {lengths[0]}, lengths
    # The wrappers also step action 2 after FIRE: one agent step less.
    assert wrapper_steps == {lengths[0] - 1}, (wrapper_steps, lengths[0])


def test_rewards_are_clipped_unless_disabled():
    rewards = {}
    for clip in (True, False):  # Space Invaders scores 5-30 points per alien
        env = atari.make_atari("ALE/SpaceInvaders-v5", clip_rewards=clip, episodic_life=False)
        env.reset(seed=3)
        env.action_space.seed(3)
        rewards[clip] = np.array([env.step(env.action_space.sample())[1] for _ in range(200)])
    assert rewards[False].max() >= 5.0
    np.testing.assert_array_equal(rewards[True], np.clip(rewards[False], -1.0, 1.0))


def test_vector_env_gives_the_same_observations_as_the_wrappers():
    options = dict(noop_max=0, repeat_action_probability=0.0, clip_rewards=False)
    single = atari.make_atari("ALE/Breakout-v5", **options)
    vector = atari.make_atari_vector_env("ALE/Breakout-v5", 2, **options)
    assert vector.single_observation_space == single.observation_space == FRAMES
    obs_s, _ = single.reset(seed=0)
    obs_v, _ = vector.reset(seed=0)
    assert obs_v.dtype == np.uint8 and obs_v.shape == (2, 84, 84, 4)
    for t in range(20):
        obs_s, *_ = single.step(t % 3)
        obs_v, *_ = vector.step(np.array([t % 3, t % 3]))
    # Nearly the same content: the two emulators differ only in the frames the fire-reset
    # took (measured: 99.98 % of the pixels equal after 20 steps). This alone cannot show
    # the channel order (Breakout's frames barely change: reversed channels also match
    # 99.98 % of the pixels); the game without FIRE below does.
    assert np.mean(obs_s == obs_v[0]) > 0.99
    vector.close()
    # Freeway has no FIRE, so neither path fire-resets; without no-ops both run the same
    # frames, and the observations are equal exactly, step by step: frame skip,
    # max-pooling, resizing, stacking and the channels-last order all agree.
    single = atari.make_atari("ALE/Freeway-v5", **options)
    vector = atari.make_atari_vector_env("ALE/Freeway-v5", 2, **options)
    obs_s, _ = single.reset(seed=0)
    obs_v, _ = vector.reset(seed=0)
    np.testing.assert_array_equal(obs_v[0], obs_s)
    for t in range(30):  # NOOP, UP, DOWN; the other sub-env plays another sequence
        obs_s, reward_s, *_ = single.step(t % 3)
        obs_v, reward_v, *_ = vector.step(np.array([t % 3, (t + 1) % 3]))
        np.testing.assert_array_equal(obs_v[0], obs_s, err_msg=f"step {t}")
        assert reward_v[0] == reward_s
    # The stacked frames differ (cars move): a wrong channel order would not be equal.
    assert np.mean(obs_s == obs_s[..., ::-1]) < 0.99
    vector.close()


def test_errors_say_what_was_received():
    with pytest.raises(ValueError, match=r"needs an ALE env \(id 'ALE/...'\). Received"):
        wrap_deepmind(gym.make("CartPole-v1"))
    wrapped = gym.wrappers.RecordEpisodeStatistics(_ale("ALE/Pong-v5"))
    with pytest.raises(ValueError, match=r"frameskip=4\. Make it with gym.make\(env_id, "
                                         r"frameskip=1\)"):
        wrap_deepmind(wrapped)
    with pytest.raises(ValueError, match=r"action 1 is FIRE. Received: action meanings "
                                         r"\['NOOP', 'UP', 'DOWN'\]"):
        atari.make_atari("ALE/Freeway-v5", fire_reset=True)
    with pytest.raises(ValueError, match=r"framestack must be True .*Received: -2"):
        atari.make_atari("ALE/Pong-v5", framestack=-2)
    # A game without FIRE is not fire-reset by default; no stacking gives one channel.
    env = atari.make_atari("ALE/Freeway-v5", framestack=False)
    assert env.observation_space.shape == (84, 84, 1)
    assert is_atari(env) and not is_atari(gym.make("CartPole-v1"))


def _worker(num_envs, **kwargs):
    keras.utils.set_random_seed(0)
    return RolloutWorker(
        env_creator=lambda ctx: _ale("ALE/Breakout-v5"), policy_spec=PPOTFPolicy,
        rollout_fragment_length=64, num_envs=num_envs, seed=0,
        policy_config={"seed": 0, "model": {"vf_share_layers": True}}, **kwargs)


@pytest.mark.parametrize("num_envs", [1, 2])
def test_worker_applies_the_deepmind_pipeline_and_a_fresh_policy_finishes_episodes(num_envs):
    worker = _worker(num_envs)
    # Two sub-envs of a plain ALE env: ale-py's C++ vector env (the fast path).
    native = isinstance(worker.async_env.vector_env, GymnasiumVectorEnv)
    assert native == (num_envs == 2)
    if native:
        assert type(worker.async_env.vector_env.env.unwrapped).__name__ == "AtariVectorEnv"
    assert worker.args.clip_rewards is True
    batch = worker.sample()
    obs = batch[SampleBatch.OBS]
    assert obs.dtype == np.uint8 and obs.shape == (64 * num_envs, 84, 84, 4)
    # A fresh policy is near uniform: it presses FIRE, the game runs, lives are lost.
    actions = batch[SampleBatch.ACTIONS]
    assert len(np.unique(actions)) == 4
    assert batch[SampleBatch.TERMINATEDS].sum() >= 1
    assert len(worker.get_metrics()) >= 1


def test_worker_with_a_wrapped_frame_skipping_ale_env_says_how_to_fix():
    def creator(ctx):
        return gym.wrappers.RecordEpisodeStatistics(_ale("ALE/Pong-v5"))

    with pytest.raises(ValueError, match=r"frameskip=4\. Make it with .*preprocessor_pref='rllib'"):
        RolloutWorker(env_creator=creator, policy_spec=PPOTFPolicy, policy_config={"seed": 0})


def test_rllib_preference_leaves_raw_frames_and_no_vector_env():
    worker = _worker(2, preprocessor_pref="rllib")
    assert worker.get_policy().observation_space.shape == (84, 84, 3)  # GenericPixelPreprocessor
    assert not isinstance(getattr(worker.async_env, "vector_env", None), GymnasiumVectorEnv)
    assert worker.args.clip_rewards is None


TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned")


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_tuned_atari_ppo_files_build_sb3_zoo_settings(game):
    config = build_config(resolve_experiment(os.path.join(TUNED, f"ppo_{game}.yaml")))
    assert config.env == f"ALE/{game.title()}-v5"
    assert (config.num_envs_per_worker, config.rollout_fragment_length,
            config.sgd_minibatch_size, config.num_sgd_iter) == (8, 128, 256, 4)
    assert (config.lr, config.clip_param, config.entropy_coeff) == (2.5e-4, 0.1, 0.01)
    assert config.model.get("conv_filters") is None  # the Nature DQN default for 84x84
    # SB3's PPO update (tests/test_ppo_sb3_parity.py): per-minibatch advantages, torch's Adam.
    assert config.normalize_advantages == "minibatch"
    assert config.optimizer == {"epsilon": 1e-5, "epsilon_form": "torch"}


def test_tuned_breakout_ppo_trains_one_iteration_from_frames():
    config = build_config(resolve_experiment(
        os.path.join(TUNED, "ppo_breakout.yaml"),
        overrides=["rollout_fragment_length=16", "train_batch_size=128",
                   "sgd_minibatch_size=64", "num_sgd_iter=1"]))
    algo = PPO(config=config)
    try:
        result = algo.train()
        policy = algo.get_policy()
        assert policy.observation_space == FRAMES
        assert [tuple(w.shape) for w in policy.model.trainable_weights if "kernel" in w.path][:4] \
            == [(8, 8, 4, 32), (4, 4, 32, 64), (3, 3, 64, 64), (3136, 512)]
        assert result["timesteps_total"] == 128
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert np.isfinite(stats["total_loss"])
    finally:
        algo.stop()


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_tuned_atari_dqn_files_build_sb3_zoo_settings(game):
    config = build_config(resolve_experiment(os.path.join(TUNED, f"dqn_{game}.yaml")))
    assert config.env == f"ALE/{game.title()}-v5"
    assert (config.lr, config.train_batch_size, config.rollout_fragment_length,
            config.training_intensity) == (1e-4, 32, 4, 8)  # a 32-row step per 4 env steps
    assert (config.num_steps_sampled_before_learning_starts,
            config.target_network_update_freq) == (100_000, 1000)
    assert config.exploration_config["final_epsilon"] == 0.01
    assert config.exploration_config["epsilon_timesteps"] == 1_000_000
    assert (config.double_q, config.dueling, config.n_step, config.hiddens) == (
        False, False, 1, [])
    assert config.model.get("conv_filters") is None  # the Nature DQN default for 84x84


@pytest.mark.slow
def test_tuned_breakout_dqn_trains_one_iteration_from_frames():
    from tfrl.algorithms.dqn import DQN

    config = build_config(resolve_experiment(
        os.path.join(TUNED, "dqn_breakout.yaml"),
        overrides=["num_steps_sampled_before_learning_starts=64",
                   "timesteps_per_iteration=128", "replay_buffer_config.capacity=1000"]))
    algo = DQN(config=config)
    try:
        result = algo.train()
        policy = algo.get_policy()
        assert policy.observation_space == FRAMES
        # The Nature network, then one linear Q layer (512 -> 4 Breakout actions); the
        # catalog model's value head (unused without dueling) comes last.
        assert [tuple(w.shape) for w in policy.model.trainable_weights if "kernel" in w.path] \
            == [(8, 8, 4, 32), (4, 4, 32, 64), (3, 3, 64, 64), (3136, 512), (512, 4), (512, 1)]
        assert result["timesteps_total"] == 128
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert np.isfinite(stats["total_loss"] if "total_loss" in stats else stats["loss"])
        # One 32-row step per 4-step round once 64 steps are stored: the rounds ending at
        # steps 64, 68, ..., 128.
        assert result["info"]["num_agent_steps_trained"] == 17 * 32
    finally:
        algo.stop()


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_tuned_atari_impala_files_build_rllib_settings(game):
    config = build_config(resolve_experiment(os.path.join(TUNED, f"impala_{game}.yaml")))
    assert config.env == f"ALE/{game.title()}-v5"
    # RLlib's tuned IMPALA Atari file: fragments of 50 per env, 5 envs per worker,
    # batches of 500, lr 5e-4 -> ~0 over 20M steps, clipped rewards.
    assert (config.rollout_fragment_length, config.num_envs_per_worker,
            config.train_batch_size) == (50, 5, 500)
    assert config.lr == 5e-4 and config.lr_schedule == [[0, 5e-4], [20_000_000, 1e-12]]
    assert config.clip_rewards is True and config.vtrace
    assert (config.vf_loss_coeff, config.entropy_coeff, config.grad_clip) == (0.5, 0.01, 40.0)
    assert config.model.get("conv_filters") is None  # the Nature DQN default for 84x84


@pytest.mark.slow
def test_tuned_breakout_impala_trains_one_iteration_from_frames():
    from tfrl.algorithms.impala import Impala

    config = build_config(resolve_experiment(
        os.path.join(TUNED, "impala_breakout.yaml"),
        overrides=["num_workers=0", "rollout_fragment_length=20", "train_batch_size=100",
                   "min_iter_time_s=0"]))
    algo = Impala(config=config)
    try:
        result = algo.train()
        policy = algo.get_policy()
        assert policy.observation_space == FRAMES
        # The Nature network shared by the policy (4 Breakout actions) and value heads.
        assert [tuple(w.shape) for w in policy.model.trainable_weights if "kernel" in w.path] \
            == [(8, 8, 4, 32), (4, 4, 32, 64), (3, 3, 64, 64), (3136, 512), (512, 4), (512, 1)]
        assert result["timesteps_total"] >= 100
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert np.isfinite(stats["total_loss"]) and stats["cur_lr"] == pytest.approx(5e-4, rel=1e-3)
        # V-trace bootstraps from new_obs: the IMPALA policy keeps it in its batches.
        assert policy.view_requirements["new_obs"].used_for_training
    finally:
        algo.stop()
