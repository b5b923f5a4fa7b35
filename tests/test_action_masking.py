"""Built-in action masking (tfrl.models.action_mask): a Dict observation's `action_mask`
masks logits / Q-values for every discrete algorithm, in the compiled path, the numpy
inference path and the exported SavedModel, with finite gradients; bad masks are refused.

The env: `MaskedActions` with 100 actions of which 80 are invalid at each step."""


import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.dqn import DQN
from tfrl.algorithms.ppo import PPO
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
from tfrl.algorithms.registry import get_algorithm_class
from tfrl.env.wrappers.pettingzoo_env import PettingZooEnv
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.examples.envs.masked_actions import MaskedActions
from tfrl.models.action_mask import (MASKED_VALUE, ActionMaskModel, apply_action_mask,
                                     apply_action_mask_np)
from tfrl.models.catalog import ModelCatalog
from tfrl.models.tf.tf_action_dist import Categorical
from tfrl.policy.policy import PolicySpec
from tfrl.policy.sample_batch import SampleBatch

ENV_ID = "tfrl.examples.envs:MaskedActions-v0"
N = 100
RAW_SPACE = MaskedActions().observation_space
PREP = ModelCatalog.get_preprocessor_for_space(RAW_SPACE)
OBS_SPACE = PREP.observation_space  # what a worker's policy sees: flat, .original_space
ACT_SPACE = gym.spaces.Discrete(N)
TINY = {"fcnet_hiddens": [8]}
MASK = slice(0, N)  # "action_mask" sorts before "observation"


def masked_observations(rows, seed=0):
    """`rows` preprocessed observations of MaskedActions (80 of 100 actions invalid)."""
    env = MaskedActions()
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(rows):
        out.append(obs)
        obs = env._draw()
    return PREP.transform_batch({k: np.stack([o[k] for o in out]) for k in out[0]})


def invalid(obs, actions):
    """How many `actions` the masks of `obs` forbid."""
    return int((obs[np.arange(len(obs)), actions.astype(np.int64)] < 0.5).sum())


def make_policy(name, **overrides):
    keras.utils.set_random_seed(0)
    _, config_class = get_algorithm_class(name, return_config=True)
    config = config_class.from_dict({"model": TINY, "seed": 0, **overrides}).to_dict()
    return get_algorithm_class(name).default_policy_class(OBS_SPACE, ACT_SPACE, config)


def all_finite(arrays):
    return all(np.isfinite(np.asarray(a)).all() for a in arrays)


# ------------------------------------------------------------------ model and math

def test_catalog_wraps_the_default_model_and_masks_its_outputs():
    dist_class, n = ModelCatalog.get_action_dist(ACT_SPACE)
    model = ModelCatalog.get_model(OBS_SPACE, ACT_SPACE, n, TINY)
    assert isinstance(model, ActionMaskModel) and (model.mask_start, model.mask_stop) == (0, N)
    assert model.inner.hidden_layers[0].kernel.shape == (N, 8)  # the rest: 100 values
    obs = masked_observations(4)
    logits, value = model(obs)
    mask = obs[:, MASK] > 0.5
    assert (logits.numpy()[~mask] == np.float32(MASKED_VALUE)).all()
    assert (logits.numpy()[mask] > -1.0).all() and value.shape == (4,)
    # The same model on the Dict without the mask gives the unmasked logits.
    inner_logits, _ = model.inner(obs[:, N:])
    np.testing.assert_array_equal(logits.numpy()[mask], inner_logits.numpy()[mask])
    # Turning masking off hands the mask to the model as features (the old behaviour).
    plain = ModelCatalog.get_model(OBS_SPACE, ACT_SPACE, n, {**TINY, "action_mask_key": None})
    assert not isinstance(plain, ActionMaskModel)
    assert plain.hidden_layers[0].kernel.shape == (2 * N, 8)
    # A custom model key: the mask under "legal".
    space = gym.spaces.Dict({"legal": gym.spaces.MultiBinary(3), "x": gym.spaces.Box(-1, 1, (2,))})
    keyed = ModelCatalog.get_model(space, gym.spaces.Discrete(3), 3,
                                   {**TINY, "action_mask_key": "legal"})
    assert isinstance(keyed, ActionMaskModel) and (keyed.mask_start, keyed.mask_stop) == (0, 3)


def test_masked_categorical_has_finite_values_and_gradients():
    logits = tf.Variable([[0.5, 3.0, -2.0, 1.0], [10.0, -10.0, 0.0, 2.0]])
    mask = tf.constant([[1, 0, 1, 0], [0, 0, 1, 1]], tf.int8)
    old = tf.constant([[0.1, 0.0, 0.2, 0.0], [0.0, 1.0, 0.5, -1.0]])
    with tf.GradientTape() as tape:
        masked = apply_action_mask(logits, mask)
        dist = Categorical(masked, None)
        old_dist = Categorical(apply_action_mask(old, mask), None)
        actions = tf.constant([2, 3])
        loss = tf.reduce_sum(-dist.logp(actions) - dist.entropy() + dist.kl(old_dist)
                             + old_dist.kl(dist))
    grads = tape.gradient(loss, logits).numpy()
    assert np.isfinite(loss.numpy()) and np.isfinite(grads).all()
    np.testing.assert_array_equal(grads[mask.numpy() == 0], 0.0)  # masked: no gradient
    probs = tf.nn.softmax(masked).numpy()
    np.testing.assert_array_equal(probs[mask.numpy() == 0], 0.0)
    np.testing.assert_allclose(dist.entropy().numpy(),
                               [-np.sum(p[p > 0] * np.log(p[p > 0])) for p in probs], rtol=1e-6)
    # Greedy ignores a larger masked logit; numpy masks bit for bit as TF does.
    assert dist.deterministic_sample().numpy().tolist() == [0, 3]
    np.testing.assert_array_equal(apply_action_mask_np(logits.numpy(), mask.numpy()),
                                  masked.numpy())


@pytest.mark.parametrize("mask_space, message", [
    (gym.spaces.Box(0, 1, (7,), np.int8), r"one entry per action. Received: shape \(7,\)"),
    (gym.spaces.Discrete(5), "must be a Box or a MultiBinary. Received: Discrete"),
    (gym.spaces.Box(-1.0, 2.0, (5,)), "must hold 0/1 values"),
])
def test_a_wrong_mask_space_is_refused_when_the_model_is_built(mask_space, message):
    space = gym.spaces.Dict({"action_mask": mask_space, "obs": gym.spaces.Box(-1, 1, (2,))})
    with pytest.raises(ValueError, match=message):
        ModelCatalog.get_model(space, gym.spaces.Discrete(5), 5, TINY)


def test_masking_with_lstm_or_a_mismatched_output_size_is_refused():
    with pytest.raises(ValueError, match="does not support use_lstm=True yet"):
        ModelCatalog.get_model(OBS_SPACE, ACT_SPACE, N, {**TINY, "use_lstm": True})
    with pytest.raises(ValueError, match="one model output per action. Received: num_outputs=7"):
        ModelCatalog.get_model(OBS_SPACE, ACT_SPACE, 7, TINY)


def test_a_wrong_observation_shape_is_refused_at_compute_actions():
    policy = make_policy("PPO")
    with pytest.raises(ValueError, match="obs_batch"):
        policy.compute_actions(np.zeros((3, N), np.float32))  # the mask missing


# ------------------------------------------------------------------ acting and export

def test_no_invalid_action_from_the_numpy_and_the_tf_path():
    obs = masked_observations(10_000, seed=1)
    numpy_policy = make_policy("PPO")
    tf_policy = make_policy("PPO", inference="tf")
    assert (numpy_policy.inference, tf_policy.inference) == ("numpy", "tf")
    for policy in (numpy_policy, tf_policy):
        for explore in (True, False):
            actions, _, extras = policy.compute_actions(obs, explore=explore)
            assert invalid(obs, actions) == 0, (policy.inference, explore)
        assert np.isfinite(extras["action_logp"]).all()
    # The two paths honour the mask identically (same weights: same seed).
    greedy = [p.compute_actions(obs[:500], explore=False) for p in (numpy_policy, tf_policy)]
    np.testing.assert_array_equal(greedy[0][0], greedy[1][0])
    np.testing.assert_allclose(greedy[0][2]["action_dist_inputs"],
                               greedy[1][2]["action_dist_inputs"], rtol=1e-5, atol=1e-5)


def test_multi_discrete_actions_are_masked_per_sub_action():
    space = gym.spaces.Dict({"action_mask": gym.spaces.MultiBinary(7),
                             "observation": gym.spaces.Box(-1, 1, (2,))})
    prep = ModelCatalog.get_preprocessor_for_space(space)
    rng = np.random.default_rng(4)
    mask = np.zeros((3000, 7), np.int8)
    mask[np.arange(3000), rng.integers(0, 3, 3000)] = 1  # one allowed value of 3 ...
    mask[np.arange(3000), 3 + rng.integers(0, 4, 3000)] = 1  # ... and one of 4
    obs = prep.transform_batch({"action_mask": mask,
                                "observation": rng.uniform(-1, 1, (3000, 2)).astype(np.float32)})
    for inference in ("numpy", "tf"):
        keras.utils.set_random_seed(0)
        policy = get_algorithm_class("PPO").default_policy_class(
            prep.observation_space, gym.spaces.MultiDiscrete([3, 4]),
            {"model": TINY, "seed": 0, "inference": inference})
        for explore in (True, False):
            actions, _, _ = policy.compute_actions(obs, explore=explore)
            assert (obs[np.arange(3000), actions[:, 0]] == 1).all(), inference
            assert (obs[np.arange(3000), 3 + actions[:, 1]] == 1).all(), inference


def test_dqn_acts_validly_including_epsilon_random_actions():
    policy = make_policy("DQN", hiddens=[8])
    obs = masked_observations(5000, seed=2)
    for explore in (True, False):
        actions, _, _ = policy.compute_actions(obs, explore=explore, timestep=0)  # epsilon 1
        assert invalid(obs, actions) == 0
    # Epsilon-random actions cover the allowed actions, not only the greedy one.
    actions, _, _ = policy.compute_actions(np.repeat(obs[:1], 2000, 0), explore=True, timestep=0)
    assert set(actions.tolist()) == set(np.flatnonzero(obs[0, MASK]).tolist())


# ------------------------------------------------------------------ learning

@pytest.mark.parametrize("algo_class, config", [
    (PPO, {"train_batch_size": 64, "sgd_minibatch_size": 32, "num_sgd_iter": 2,
           "rollout_fragment_length": 64}),
    (DQN, {"hiddens": [8], "rollout_fragment_length": 16, "train_batch_size": 32,
           "timesteps_per_iteration": 0, "num_steps_sampled_before_learning_starts": 0,
           "target_network_update_freq": 32}),
])
def test_short_runs_sample_no_invalid_action_and_keep_gradients_finite(algo_class, config,
                                                                       tmp_path):
    algo = algo_class(config={"env": ENV_ID, "model": TINY, "seed": 0, "num_workers": 0,
                              **config})
    try:
        for _ in range(2):
            result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert all(np.isfinite(v) for v in stats.values() if np.ndim(v) == 0), stats
        policy = algo.get_policy()
        assert all_finite(policy.get_weights())
        batch = algo.workers.local_worker().sample()
        assert invalid(batch["obs"], batch["actions"]) == 0
        assert (batch["rewards"] >= 0).all()  # an invalid action would pay -1
        if algo_class is DQN:
            batch["weights"] = np.ones(batch.count, np.float32)  # replay's column
        grads, _ = policy.compute_gradients(batch)  # sample() postprocessed it
        assert all_finite(grads) and any(np.abs(g).sum() > 0 for g in grads)
        if algo_class is DQN:
            return  # its SavedModel acts through the same masked model as PPO's
        # The trained policy's SavedModel (what `tfrl export` writes) takes the env's
        # Dict entries by name (`obs_action_mask`, `obs_observation`: flattened in the
        # graph) and honours the mask as the live policy does.
        algo.export_policy_model(str(tmp_path / "model"))
        loaded = tf.saved_model.load(str(tmp_path / "model"))
        obs = masked_observations(5000, seed=5)
        raw = {"obs_action_mask": tf.constant(obs[:, MASK].astype(np.int8)),
               "obs_observation": tf.constant(obs[:, N:])}
        for signature in ("deterministic_action", "stochastic_action"):
            actions = loaded.signatures[signature](**raw)["actions"].numpy()
            assert invalid(obs, actions) == 0, signature
        served = loaded.signatures["deterministic_action"](**raw)["actions"].numpy()[:500]
        live, _, _ = policy.compute_actions(obs[:500], explore=False)
        np.testing.assert_array_equal(served, live)
    finally:
        algo.stop()


# ------------------------------------------------------------------ PettingZoo

def test_pettingzoo_masks_reach_the_builtin_masking_in_tictactoe():
    pettingzoo = pytest.importorskip("pettingzoo")
    w = RolloutWorker(
        env_creator=lambda ctx: PettingZooEnv(pettingzoo.make("aec", "classic/tictactoe-v3")),
        policy_spec={"p": PolicySpec(PGTFPolicy)},
        policy_mapping_fn=lambda agent_id, episode, worker=None, **kw: "p",
        policy_config={"model": TINY}, rollout_fragment_length=60,
        batch_mode="complete_episodes", seed=1)
    try:
        assert isinstance(w.get_policy("p").model, ActionMaskModel)
        batch = w.sample().policy_batches["p"]
        assert batch.count >= 60 and batch["obs"].shape[1] == 9 + 18  # mask, then the board
        assert invalid(batch["obs"], batch["actions"]) == 0
    finally:
        w.stop()


def test_an_observation_filter_is_refused_for_a_masking_policy():
    with pytest.raises(ValueError, match="would normalize the mask.*observation_filter='NoFilter'"):
        RolloutWorker(env_creator=lambda ctx: MaskedActions(), policy_spec=PGTFPolicy,
                      policy_config={"model": TINY}, observation_filter="MeanStdFilter")


def test_the_example_env_counts_invalid_actions():
    env = MaskedActions()
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"].sum() == 20 and obs["action_mask"].shape == (N,)
    with pytest.raises(ValueError, match="num_valid must be between 1 and num_actions"):
        MaskedActions(num_actions=5, num_valid=6)
