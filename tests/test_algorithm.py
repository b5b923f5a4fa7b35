"""Algorithm (through PPO, PG, A2C): train results, acting, evaluation, weights, checkpoints."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.a2c import A2C
from tfrl.algorithms.pg import PG
from tfrl.algorithms.ppo import PPO, PPOConfig
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.env.registry import register_env

pytestmark = pytest.mark.slow

SMALL = {"env": "CartPole-v1", "num_workers": 0, "num_envs_per_worker": 2,
         "rollout_fragment_length": 16, "train_batch_size": 64, "sgd_minibatch_size": 32,
         "num_sgd_iter": 2, "model": {"fcnet_hiddens": [16]}, "seed": 1}


class FixedStartCartPole(gym.Wrapper):
    """CartPole whose every episode starts from the same state (reset seed 0), so that
    the env holds no state between episodes."""

    def __init__(self, env_config=None):
        super().__init__(gym.make("CartPole-v1", max_episode_steps=30))

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=0)


register_env("fixed_start_cartpole", lambda ctx: FixedStartCartPole(ctx))


@pytest.fixture
def algo():
    algo = PPO(config=SMALL)
    yield algo
    algo.stop()


def test_train_result(algo):
    result = algo.train()
    result = algo.train()
    assert result["training_iteration"] == 2
    assert result["timesteps_total"] == 128
    for key in ("episode_reward_mean", "episode_len_mean", "time_this_iter_s", "time_total_s",
                "episodes_total", "info"):
        assert key in result, key
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    assert {"policy_loss", "vf_loss", "kl", "entropy", "cur_kl_coeff"} <= set(stats)
    assert algo.get_policy().num_traces["learn_on_batch"] == 1


def test_compute_single_action(algo):
    obs, _ = gym.make("CartPole-v1").reset(seed=0)
    action = algo.compute_single_action(obs, explore=False)
    assert action in (0, 1)
    logits = np.asarray(algo.get_policy().model(obs[None].astype(np.float32))[0])[0]
    assert action == int(np.argmax(logits))
    action, state, extra = algo.compute_single_action(obs, full_fetch=True)
    assert state == [] and "vf_preds" in extra
    with pytest.raises(KeyError, match="no policy 'other'"):
        algo.compute_single_action(obs, policy_id="other")


def test_weights_round_trip(algo):
    weights = algo.get_weights()
    zeros = {pid: [np.zeros_like(w) for w in ws] for pid, ws in weights.items()}
    algo.set_weights(zeros)
    assert all(not np.any(w) for w in algo.get_weights()["default_policy"])


def test_evaluate_runs_episodes_without_exploration():
    algo = PPO(config={**SMALL, "env": "fixed_start_cartpole", "evaluation_duration": 3})
    result = algo.evaluate()["evaluation"]
    assert result["episodes_this_iter"] == 3
    # Deterministic actions from the same start state: every episode is the same.
    assert result["episode_reward_min"] == result["episode_reward_max"]
    algo.stop()


def test_evaluation_interval_adds_evaluation_results():
    algo = PPO(config={**SMALL, "evaluation_interval": 1, "evaluation_duration": 1})
    assert "episode_reward_mean" in algo.train()["evaluation"]
    algo.stop()


def test_save_restore_weights_and_counters(tmp_path):
    algo = PPO(config=SMALL)
    algo.train()
    path = algo.save(str(tmp_path))
    assert path.endswith("checkpoint_000001")
    other = PPO(config=SMALL)
    other.restore(path)
    for a, b in zip(algo.get_weights()["default_policy"], other.get_weights()["default_policy"]):
        np.testing.assert_array_equal(a, b)
    assert other.iteration == 1 and other.train()["timesteps_total"] == 128
    algo.stop()
    other.stop()


def test_restore_into_another_algorithm_is_rejected(tmp_path):
    algo = PPO(config=SMALL)
    path = algo.save(str(tmp_path))
    pg = PG(config={"env": "CartPole-v1", "model": {"fcnet_hiddens": [16]}})
    with pytest.raises(ValueError, match="holds a PPO checkpoint"):
        pg.restore(path)
    algo.stop()
    pg.stop()


def test_missing_env_and_bad_config():
    with pytest.raises(ValueError, match="needs an env"):
        PPO(config={})
    with pytest.raises(TypeError, match="takes a PPOConfig, a dict or None"):
        PPO(config=[1])
    with pytest.raises(ValueError, match="Did you mean 'train_batch_size'"):
        PPO(config={"env": "CartPole-v1", "train_batchsize": 5})


def test_build_from_config_and_registry():
    algo = PPOConfig.from_dict(SMALL).build()
    assert isinstance(algo, get_algorithm_class("PPO"))
    algo.stop()


def test_pg_and_a2c_with_microbatches_train():
    pg = PG(config={"env": "CartPole-v1", "train_batch_size": 50, "seed": 0,
                    "model": {"fcnet_hiddens": [16]}})
    assert pg.train()["timesteps_total"] >= 50
    pg.stop()
    a2c = A2C(config={"env": "CartPole-v1", "train_batch_size": 40, "microbatch_size": 20,
                      "rollout_fragment_length": 20, "min_iter_time_s": 0, "seed": 0,
                      "model": {"fcnet_hiddens": [16]}})
    result = a2c.train()
    assert result["timesteps_total"] == 40
    assert a2c.get_policy().num_grad_updates.numpy() == 1  # two microbatches, one update
    a2c.stop()


def test_thread_backend_remote_workers_get_weights_and_kl_coeff():
    algo = PPO(config={**SMALL, "num_workers": 2, "remote_backend": "thread"})
    result = algo.train()
    assert result["timesteps_total"] == 64  # 2 workers x 2 envs x 16 steps
    local = algo.get_weights()["default_policy"]
    remote = algo.workers.remote_workers()[0]
    remote_weights = remote.apply(lambda w: w.get_weights()).result(timeout=60)
    for a, b in zip(local, remote_weights["default_policy"]):
        np.testing.assert_array_equal(a, b)
    remote_kl = remote.apply(lambda w: w.get_policy().kl_coeff).result(timeout=60)
    assert remote_kl == algo.get_policy().kl_coeff != 0.2  # adapted once, synced
    algo.stop()


def test_observation_filters_of_remote_workers_are_merged_and_synced_every_iteration():
    algo = PPO(config={**SMALL, "num_workers": 2, "remote_backend": "thread",
                       "observation_filter": "MeanStdFilter"})
    for iteration in (1, 2):
        result = algo.train()
        local = algo.workers.local_worker().filters["default_policy"].running_stats
        # The local worker samples nothing: its statistics are all the remotes'
        # observations (every sampled row's, plus the first ones of new episodes), while
        # each remote saw only about half of them.
        assert result["timesteps_total"] == 64 * iteration
        assert 64 * iteration <= local.n < 64 * iteration + 40
        for remote in algo.workers.remote_workers():
            stats = remote.apply(
                lambda w: w.filters["default_policy"].running_stats.get_state()
            ).result(timeout=60)
            assert stats["n"] == local.n
            np.testing.assert_allclose(stats["mean"], local.mean)
    algo.stop()


def test_export_policy_model_serves_actions(algo, tmp_path):
    import tensorflow as tf

    algo.export_policy_model(str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    assert "serving_default" in loaded.signatures


def test_export_of_an_unknown_policy_names_the_known_ones(algo, tmp_path):
    with pytest.raises(KeyError, match=r"export_policy_model\(\): no policy 'other'; this "
                                       r"algorithm has \['default_policy'\]"):
        algo.export_policy_model(str(tmp_path / "model"), policy_id="other")
    with pytest.raises(KeyError, match=r"export_policy_checkpoint\(\): no policy 'other'"):
        algo.export_policy_checkpoint(str(tmp_path / "ckpt"), policy_id="other")
    assert not (tmp_path / "model").exists()
    assert algo.get_policy("other") is None


def test_multi_agent_trains_only_policies_to_train(tmp_path):
    from tfrl.env.multi_agent_env import make_multi_agent
    from tfrl.policy.policy import PolicySpec

    two_cartpoles = make_multi_agent("CartPole-v1")
    register_env("two_cartpoles", lambda ctx: two_cartpoles({"num_agents": 2}))
    config = {**SMALL, "env": "two_cartpoles", "num_envs_per_worker": 1,
              "multiagent": {"policies": {"p0": PolicySpec(), "p1": PolicySpec()},
                             "policy_mapping_fn": lambda aid, episode, worker=None, **kw: f"p{aid}",
                             "policies_to_train": ["p0"]}}
    algo = PPO(config=config)
    before = algo.get_weights()
    result = algo.train()
    after = algo.get_weights()
    assert sorted(result["info"]["learner"]) == ["p0"]
    assert set(result["policy_reward_mean"]) == {"p0", "p1"}
    assert not all(np.array_equal(a, b) for a, b in zip(before["p0"], after["p0"]))
    assert all(np.array_equal(a, b) for a, b in zip(before["p1"], after["p1"]))
    path = algo.save(str(tmp_path))
    restored = PPO(config=config)
    restored.restore(path)
    for pid in ("p0", "p1"):
        for a, b in zip(after[pid], restored.get_weights()[pid]):
            np.testing.assert_array_equal(a, b)
    assert restored.compute_single_action(np.zeros(4, np.float32), policy_id="p1") in (0, 1)
    algo.stop()
    restored.stop()


def test_a_subclass_with_its_own_execution_plan_trains_through_it():
    """RLlib 1.x style: a subclass of PG replacing its `execution_plan` trains through
    that plan (PG's `training_step` does not bypass it); one that replaces
    `training_step` trains through that."""
    from tfrl.algorithms.pg.pg import execution_plan as pg_plan

    built = []

    class PlanPG(PG):
        @staticmethod
        def execution_plan(workers, config):
            built.append(True)
            return pg_plan(workers, config)

    class StepPG(PlanPG):
        def training_step(self):
            built.append("step")
            return super().training_step()

    config = {"env": "CartPole-v1", "train_batch_size": 32, "rollout_fragment_length": 16,
              "model": {"fcnet_hiddens": [8]}, "seed": 0}
    algo = PlanPG(config=config)
    result = algo.train()
    algo.stop()
    assert built == [True] and algo.train_exec_impl is not None
    assert result["timesteps_total"] == result["counters"]["num_env_steps_sampled"] > 0
    del built[:]
    algo = StepPG(config=config)
    algo.train()
    algo.stop()
    assert built == ["step"] and algo.train_exec_impl is None
