"""MAPPO: the critic input holds the other agents' observations (or the global state)
row-aligned with the agent's trajectory, the central values drive GAE and its bootstrap,
acting needs the agent's own observation only, and bad input gets clear errors."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.mappo import MAPPO, MAPPOConfig, MAPPOTFPolicy
from tfrl.algorithms.mappo.critic_input import (CRITIC_INPUT, critic_input_rows,
                                                global_state_rows)
from tfrl.algorithms.mappo.global_state import GlobalStateInfos
from tfrl.algorithms.mappo.mappo import critic_settings
from tfrl.env.multi_agent_env import make_multi_agent
from tfrl.evaluation.postprocessing import compute_advantages
from tfrl.examples.envs.hidden_bonus_game import HiddenBonusGame
from tfrl.policy.sample_batch import SampleBatch

SMALL = {"seed": 0, "model": {"fcnet_hiddens": [8]}, "train_batch_size": 32,
         "sgd_minibatch_size": 16, "num_sgd_iter": 1, "gamma": 0.9, "lambda": 0.8}


def box(n):
    return gym.spaces.Box(-10.0, 10.0, (n,), np.float32)


def trajectory(obs, new_obs, t, terminated_last=False, rewards=None, infos=None):
    n = len(obs)
    terminateds = np.zeros(n, bool)
    terminateds[-1] = terminated_last
    columns = dict(obs=np.asarray(obs, np.float32), new_obs=np.asarray(new_obs, np.float32),
                   t=np.asarray(t, np.int64), actions=np.zeros(n, np.int64),
                   rewards=np.asarray(rewards if rewards is not None else np.arange(n),
                                      np.float32),
                   terminateds=terminateds, truncateds=np.zeros(n, bool),
                   agent_index=np.zeros(n, np.int64), eps_id=np.zeros(n, np.int64))
    if infos is not None:
        infos_column = np.empty(n, dtype=object)
        infos_column[:] = infos
        columns["infos"] = infos_column
    return SampleBatch(columns)


# --------------------------------------------------------- critic input rows

def test_all_obs_rows_put_the_other_agents_observations_at_the_same_env_step():
    own = {"obs": np.array([[1.0], [2.0], [3.0]]), "t": np.array([4, 5, 6])}
    # b acted at steps 4 and 6 only; c (3 values) at 5 and 6; d has no batch at all.
    b = {"obs": np.array([[40.0, 41.0], [60.0, 61.0]]), "t": np.array([4, 6])}
    c = {"obs": np.array([[5.0, 5.1, 5.2], [6.0, 6.1, 6.2]]), "t": np.array([5, 6])}
    rows = critic_input_rows(own, {"b": b, "c": c}, ["c", "b", "d"], [3, 2, 1])
    np.testing.assert_array_equal(rows, np.array([
        [1.0, 0.0, 0.0, 0.0, 40.0, 41.0, 0.0],
        [2.0, 5.0, 5.1, 5.2, 0.0, 0.0, 0.0],
        [3.0, 6.0, 6.1, 6.2, 60.0, 61.0, 0.0]], np.float32))
    assert rows.dtype == np.float32


def test_all_obs_rows_refuse_another_agent_of_the_wrong_size():
    own = {"obs": np.zeros((1, 1)), "t": np.array([0])}
    other = {"obs": np.zeros((1, 3)), "t": np.array([0])}
    with pytest.raises(ValueError, match="have 3 values; expected 2"):
        critic_input_rows(own, {"b": other}, ["b"], [2])


def test_global_state_rows_read_the_state_from_the_infos():
    batch = {"obs": np.array([[1.0], [2.0]]), "new_obs": np.array([[2.0], [3.0]]),
             "infos": [{"state": [0.0, 1.0], "next_state": [1.0, 2.0]},
                       {"state": [1.0, 2.0], "next_state": [2.0, 3.0]}]}
    np.testing.assert_array_equal(global_state_rows(batch, 2),
                                  [[1.0, 0.0, 1.0], [2.0, 1.0, 2.0]])
    np.testing.assert_array_equal(global_state_rows(batch, 2, "next_state"),
                                  [[2.0, 1.0, 2.0], [3.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="has 2 values; expected 3"):
        global_state_rows(batch, 3)
    batch["infos"] = [{}, {}]
    with pytest.raises(ValueError, match="under 'state'; row 0 has info {}"):
        global_state_rows(batch, 2)


def test_global_state_infos_wrapper_aligns_the_state_with_the_observations():
    class Counter(HiddenBonusGame):
        def reset(self, *, seed=None, options=None):
            self.n = 0
            return super().reset(seed=seed, options=options)

        def step(self, action_dict):
            self.n += 1
            return super().step(action_dict)

        def state(self):
            return np.array([float(self.n)], np.float32)

    env = GlobalStateInfos(Counter({"episode_len": 3}))
    env.reset(seed=0)
    for step in range(3):
        infos = env.step({"agent_0": 0, "agent_1": 0})[4]
        for agent in ("agent_0", "agent_1"):
            assert infos[agent]["state"].tolist() == [step]
            assert infos[agent]["next_state"].tolist() == [step + 1]
    assert env.get_agent_ids() == {"agent_0", "agent_1"}


# ------------------------------------------------------------ the policy

@pytest.fixture(scope="module")
def policy():
    """Agent "a" (2 values) of agents a, b (3 values), c (1 value)."""
    return MAPPOTFPolicy(box(2), gym.spaces.Discrete(2), {
        **SMALL, "critic_input": "all_obs", "critic_agents": ["a", "b", "c"],
        "critic_obs_sizes": [2, 3, 1]})


def test_postprocessing_fills_the_critic_input_and_bootstraps_with_the_central_value(
        policy):
    own = trajectory(obs=[[1, 1], [2, 2], [3, 3]], new_obs=[[2, 2], [3, 3], [4, 4]],
                     t=[0, 1, 2])
    b = trajectory(obs=[[10, 11, 12], [20, 21, 22], [30, 31, 32]],
                   new_obs=[[20, 21, 22], [30, 31, 32], [40, 41, 42]], t=[0, 1, 2])
    c = trajectory(obs=[[5]], new_obs=[[6]], t=[1])  # c acted at step 1 only
    post = policy.postprocess_trajectory(own.copy(), {"b": (policy, b), "c": (policy, c)})
    want = np.array([[1, 1, 10, 11, 12, 0], [2, 2, 20, 21, 22, 5], [3, 3, 30, 31, 32, 0]],
                    np.float32)
    np.testing.assert_array_equal(post[CRITIC_INPUT], want)
    assert post[CRITIC_INPUT].shape == (3, 6)
    values = policy.central_value(want)
    np.testing.assert_allclose(post["vf_preds"], values, rtol=1e-6)
    # The trajectory was cut (not terminated): GAE bootstraps from the central value of
    # the state after its last step, [own new_obs, b's new_obs, zeros for c].
    last_r = float(policy.central_value(np.array([[4, 4, 40, 41, 42, 0]], np.float32))[0])
    ref = own.copy()
    ref["vf_preds"] = values
    ref = compute_advantages(ref, last_r, 0.9, 0.8, use_gae=True, use_critic=True)
    np.testing.assert_allclose(post["advantages"], ref["advantages"], rtol=1e-5)
    np.testing.assert_allclose(post["value_targets"], ref["value_targets"], rtol=1e-5)
    # A terminated trajectory bootstraps with 0.
    ended = policy.postprocess_trajectory(
        trajectory(obs=[[1, 1]], new_obs=[[2, 2]], t=[0], terminated_last=True,
                   rewards=[1.0]), {"b": (policy, b), "c": (policy, c)})
    np.testing.assert_allclose(ended["value_targets"], [1.0])


class FakeEpisode:
    def __init__(self, agents):
        self.agents = agents

    def get_agents(self):
        return list(self.agents)


def test_the_own_agent_comes_from_the_episode_or_is_the_one_without_a_batch(policy):
    b = trajectory(obs=[[10, 11, 12]], new_obs=[[20, 21, 22]], t=[0])
    own = trajectory(obs=[[1, 1]], new_obs=[[2, 2]], t=[0])
    with pytest.raises(ValueError, match="cannot tell which agent of critic_agents"):
        policy.postprocess_trajectory(own.copy(), {"b": (policy, b)})
    # agent_index 0 is the episode's first agent: "a" (c has left the episode).
    post = policy.postprocess_trajectory(own.copy(), {"b": (policy, b)},
                                         FakeEpisode(["a", "b", "c"]))
    np.testing.assert_array_equal(post[CRITIC_INPUT], [[1, 1, 10, 11, 12, 0]])


def test_the_loss_learns_the_central_value_from_the_critic_input(policy):
    rng = np.random.default_rng(0)
    batch = trajectory(obs=rng.normal(size=(32, 2)), new_obs=rng.normal(size=(32, 2)),
                       t=np.arange(32))
    others = {"b": (policy, trajectory(obs=rng.normal(size=(32, 3)),
                                       new_obs=rng.normal(size=(32, 3)), t=np.arange(32))),
              "c": (policy, trajectory(obs=rng.normal(size=(32, 1)),
                                       new_obs=rng.normal(size=(32, 1)), t=np.arange(32)))}
    actions, _, extras = policy.compute_actions(batch["obs"])
    batch["actions"] = actions
    for key, value in extras.items():
        batch[key] = value
    post = policy.postprocess_trajectory(batch, others)
    before = [w.copy() for w in policy.get_weights()]
    stats = policy.learn_on_batch(post)["learner_stats"]
    assert np.isfinite(stats["vf_loss"]) and stats["vf_loss"] > 0
    changed = [not np.array_equal(a, b) for a, b in zip(before, policy.get_weights())]
    critic = policy.model.critic_out.kernel
    index = [id(v) for v in policy.model.weights].index(id(critic))
    assert changed[index], "the central critic's output layer did not learn"


def test_acting_needs_only_the_agents_own_observation(policy, tmp_path):
    obs = np.array([0.5, -0.5], np.float32)
    action, state, extras = policy.compute_single_action(obs, explore=False)
    assert state == [] and int(action) in (0, 1)
    assert extras["vf_preds"] == 0.0  # the actor's own value head is held at zero
    policy.export_model(str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    signature = loaded.signatures["deterministic_action"]
    assert signature.structured_input_signature[1]["obs"].shape.as_list() == [None, 2]
    out = signature(obs=tf.constant(obs[None]))
    assert int(out["actions"].numpy()[0]) == int(action)
    with pytest.raises(ValueError):
        policy.compute_single_action(np.zeros(6, np.float32))  # a critic input: refused


def test_central_value_refuses_inputs_of_another_width(policy):
    with pytest.raises(ValueError, match=r"shape \[B, 6\]; received shape \(2, 2\)"):
        policy.central_value(np.zeros((2, 2)))


def test_a_policy_built_by_hand_without_agents_sees_its_own_observation():
    alone = MAPPOTFPolicy(box(3), gym.spaces.Discrete(2), SMALL)
    assert alone.critic_input_size == 3
    post = alone.postprocess_trajectory(trajectory([[1, 2, 3]], [[2, 3, 4]], [0]))
    np.testing.assert_array_equal(post[CRITIC_INPUT], [[1, 2, 3]])


# ----------------------------------------------------------------- errors

@pytest.mark.parametrize("overrides, message", [
    ({"critic_input": "state"}, "critic_input must be one of"),
    ({"critic_agents": []}, "critic_agents must be a non-empty list"),
    ({"critic_agents": ["a", "b"], "critic_obs_sizes": [2]}, "one int >= 1 per agent"),
    ({"critic_state_size": 0}, "critic_state_size must be an int >= 1"),
    ({"use_critic": False, "use_gae": False}, "use_critic must be True"),
])
def test_config_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        MAPPOConfig.from_dict(overrides)


def test_unknown_keys_are_refused_with_the_closest_name():
    with pytest.raises(ValueError, match="critic_input"):
        MAPPOConfig.from_dict({"critic_inputs": "all_obs"})


def test_policy_errors():
    with pytest.raises(ValueError, match="critic_state_size"):
        MAPPOTFPolicy(box(2), gym.spaces.Discrete(2), {**SMALL,
                                                       "critic_input": "global_state"})
    with pytest.raises(ValueError, match="does not support recurrent models"):
        MAPPOTFPolicy(box(2), gym.spaces.Discrete(2),
                      {**SMALL, "model": {"use_lstm": True}})


def test_mappo_on_a_single_agent_env_is_a_clear_error():
    with pytest.raises(ValueError, match="received env='CartPole-v1'.*Use PPO"):
        MAPPO(config={"env": "CartPole-v1"})


def test_global_state_that_the_env_cannot_give_is_a_clear_error():
    config = MAPPOConfig().environment(HiddenBonusGame).training(critic_input="global_state")
    with pytest.raises(ValueError, match="no working state\\(\\) method"):
        critic_settings(config)


def test_critic_settings_read_the_agents_and_sizes_from_the_env():
    settings = critic_settings(MAPPOConfig().environment(HiddenBonusGame))
    assert settings == {"critic_agents": ["agent_0", "agent_1"], "critic_obs_sizes": [2, 2],
                        "critic_input": "all_obs"}
    two_carts = make_multi_agent("CartPole-v1")
    settings = critic_settings(MAPPOConfig().environment(
        two_carts, env_config={"num_agents": 2}).training(critic_input="all_obs"))
    assert settings["critic_agents"] == [0, 1] and settings["critic_obs_sizes"] == [4, 4]


def test_a_pettingzoo_env_with_state_gives_the_global_state():
    pytest.importorskip("pettingzoo")
    simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")
    from tfrl.algorithms.mappo.global_state import GlobalStateEnvCreator
    from tfrl.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    def make(ctx=None):
        return ParallelPettingZooEnv(simple_spread_v3.parallel_env(N=2, max_cycles=5))

    env = make()
    env.reset(seed=0)
    np.testing.assert_array_equal(env.state(), env.par_env.state())
    settings = critic_settings(MAPPOConfig().environment(make))
    assert settings["critic_input"] == "global_state"
    assert settings["critic_state_size"] == env.state().size == 24
    assert isinstance(settings["env"], GlobalStateEnvCreator)
    wrapped = settings["env"]({})
    obs, _ = wrapped.reset(seed=0)
    state = wrapped.state()
    infos = wrapped.step({a: 0 for a in obs})[4]
    np.testing.assert_array_equal(infos["agent_0"]["state"], state)
    np.testing.assert_array_equal(infos["agent_1"]["next_state"], wrapped.state())
