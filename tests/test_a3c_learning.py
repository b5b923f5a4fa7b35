"""A3C learns CartPole-v1 with 2 Ray remote workers (mean return >= 100).

Skipped without Ray. The workers ask for half a CPU each (the machine has 2 CPUs; a
whole-CPU actor beyond them would wait forever); every wait has a timeout. Settings as in
tfrl/tuned/a3c_cartpole.yaml.
"""

import pytest

ray = pytest.importorskip("ray")

from learning_helpers import CARTPOLE, train_to_reward  # noqa: E402
from tfrl.algorithms.a3c import A3C  # noqa: E402

pytestmark = [pytest.mark.learning, pytest.mark.ray]

TIMEOUT = 60


def test_a3c_cartpole_two_ray_workers(ray_runtime):
    algo = A3C(config={**CARTPOLE, "num_workers": 2, "num_cpus_per_worker": 0.5,
                       "rollout_fragment_length": 8, "lr": 1e-3, "grad_clip": 0.5,
                       "entropy_coeff": 0.0, "min_iter_time_s": 0,
                       "timesteps_per_iteration": 2000, "sample_timeout_s": TIMEOUT,
                       "worker_health_probe_timeout_s": TIMEOUT})
    result = train_to_reward(algo, 100, max_steps=150_000)
    print(f"A3C: mean return {result['episode_reward_mean']:.1f} after "
          f"{result['timesteps_total']} env steps")
    assert result["episode_reward_mean"] >= 100, result["episode_reward_mean"]
