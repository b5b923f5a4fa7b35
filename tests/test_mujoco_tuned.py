"""The tuned MuJoCo PPO files (RL Baselines3 Zoo's HalfCheetah and Hopper settings) load
and train one iteration: not a learning test (a full run is 1M steps)."""

import os

import numpy as np
import pytest

pytest.importorskip("mujoco")

from tfrl.algorithms.ppo import PPO  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.utils.filter import MeanStdFilter  # noqa: E402

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "examples", "tuned")

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
