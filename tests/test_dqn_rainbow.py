"""Rainbow's parts in DQN (`num_atoms`, `distributional`, `noisy`): the Q network's
outputs checked in numpy, acting (greedy on expected Q; noise instead of epsilon), the
priorities, state and checkpoint round trips, and a short run of each option with double
Q, dueling, n-step and prioritized replay (the loss math: test_dqn_distributional_loss.py;
the layer: test_noisy_layer.py)."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.cql_dqn.cql_dqn_config import CQLDQNConfig
from tfrl.algorithms.dqn import DQN, DQNConfig, DQNTFPolicy
from tfrl.algorithms.dqn.distributional_q_tf_model import DistributionalQTFModel
from tfrl.algorithms.dqn.dqn_loss import c51_targets, categorical_td_error
from tfrl.env.registry import register_env
from graph_options import without_graph_optimizer  # noqa: F401 (autouse)

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
SMALL = {"model": {"fcnet_hiddens": [16]}, "hiddens": [8], "seed": 0}
C51 = {"num_atoms": 11, "v_min": -5.0, "v_max": 5.0}
QR = {"num_atoms": 8, "distributional": "quantile"}
NOISY = {"noisy": True}
RAINBOW = {**C51, **NOISY, "n_step": 3, "double_q": True, "dueling": True,
           "replay_buffer_config": {"type": "MultiAgentPrioritizedReplayBuffer"}}


def make_policy(**config):
    return DQNTFPolicy(OBS_SPACE, gym.spaces.Discrete(3),
                       DQNConfig.from_dict({**SMALL, **config}).to_dict())


def make_dqn(**config):
    return DQN(config={**SMALL, "env": "CartPole-v1", "rollout_fragment_length": 8,
                       "train_batch_size": 16, "timesteps_per_iteration": 0,
                       "num_steps_sampled_before_learning_starts": 16,
                       "target_network_update_freq": 16, **config})


def obs(rows, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (rows, 4)).astype(np.float32)


def batch(rows=8, seed=0):
    rng = np.random.default_rng(seed)
    return {"obs": obs(rows, seed), "new_obs": obs(rows, seed + 1),
            "actions": rng.integers(3, size=rows),
            "rewards": rng.normal(size=rows).astype(np.float32),
            "terminateds": rng.random(rows) < 0.25,
            "n_step": rng.integers(1, 4, rows).astype(np.int32)}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_q_distribution(model, x):
    """The DistributionalQTFModel's forward pass in numpy (noise off), for dueling heads
    with one hidden layer per stream: `(q [B, A], atoms [B, A, N])`."""
    (kernel, bias), = [(layer.kernel.numpy(), layer.bias.numpy()) for layer in model.trunk[1:]]
    features = np.tanh(x @ kernel + bias)  # fcnet_activation "tanh"

    def stream(layers):
        h = features
        for i, layer in enumerate(layers):
            h = h @ layer.kernel.numpy() + layer.bias.numpy()
            h = np.maximum(h, 0.0) if i < len(layers) - 1 else h
        return h

    advantages = stream(model.advantage_stream).reshape(len(x), model.num_actions, -1)
    value = stream(model.value_stream)[:, None, :]
    atoms = value + advantages - advantages.mean(axis=1, keepdims=True)
    if model.distributional == "c51":
        z = np.linspace(model.v_min, model.v_max, model.num_atoms)
        return (softmax(atoms) * z).sum(-1), atoms
    return atoms.mean(-1), atoms


# ------------------------------------------------------------------ config

@pytest.mark.parametrize("make, match", [
    (lambda: CQLDQNConfig.from_dict({"num_atoms": 51}),
     r"CQLDQNConfig: .*num_atoms must be 1 and noisy False; received num_atoms=51"),
    (lambda: make_policy(num_atoms=5, model={"custom_model": "nope"}),
     r"received model\['custom_model'\]='nope'"),
    (lambda: DQNTFPolicy(gym.spaces.Dict({"obs": OBS_SPACE,
                                          "action_mask": gym.spaces.Box(0, 1, (3,))}),
                         gym.spaces.Discrete(3),
                         DQNConfig.from_dict({**SMALL, "noisy": True}).to_dict()),
     r"num_atoms > 1 and noisy=True do not support built-in action masking yet"),
])
def test_unsupported_combinations_are_rejected_clearly(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------------ acting

@pytest.mark.parametrize("options", [C51, QR], ids=["c51", "quantile"])
def test_greedy_actions_are_the_argmax_of_the_expected_q_computed_in_numpy(options):
    policy = make_policy(dueling=True, **options)
    assert isinstance(policy.model, DistributionalQTFModel)
    x = obs(12)
    q, atoms = numpy_q_distribution(policy.model, x)
    assert atoms.shape == (12, 3, options["num_atoms"])
    got_q, got_atoms = policy.model.q_distribution(x)
    np.testing.assert_allclose(got_atoms, atoms, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_q, q, rtol=1e-5, atol=1e-5)
    actions, _, extras = policy.compute_actions(x, explore=False)
    np.testing.assert_array_equal(actions, q.argmax(axis=1))
    np.testing.assert_allclose(extras["action_dist_inputs"], q, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(extras["vf_preds"], q.max(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(policy.value(x), q.max(axis=1), rtol=1e-5, atol=1e-5)
    # A dense trunk acts in numpy; the same model acting in TF agrees.
    assert policy.inference == "numpy"
    twin = make_policy(dueling=True, inference="tf", **options)
    assert twin.inference == "tf"
    twin.set_weights(policy.get_weights())
    tf_actions, _, tf_extras = twin.compute_actions(x, explore=False)
    np.testing.assert_array_equal(tf_actions, actions)
    for key in ("action_dist_inputs", "vf_preds"):
        np.testing.assert_allclose(tf_extras[key], extras[key], rtol=1e-5, atol=1e-6)
    # After a learning step the numpy copy of the weights follows.
    policy.learn_on_batch(batch(16, seed=3))
    twin.set_weights(policy.get_weights())
    np.testing.assert_allclose(policy.value(x), twin.value(x), rtol=1e-5, atol=1e-6)
    assert np.abs(policy.value(x) - q.max(axis=1)).max() > 1e-6


def test_a_small_conv_trunk_acts_in_numpy_as_in_tf_and_noisy_or_large_ones_in_tf():
    # MinAtar's encoder (10x10 boolean frames) acts in numpy, as the same model in TF.
    minatar = gym.spaces.Box(0, 1, (10, 10, 4), bool)
    policies = [DQNTFPolicy(minatar, gym.spaces.Discrete(3), DQNConfig.from_dict(
        {"model": {"conv_filters": None, "post_fcnet_hiddens": [16]}, "hiddens": [],
         "seed": 0, "inference": mode, **QR}).to_dict()) for mode in ("auto", "tf")]
    assert [p.inference for p in policies] == ["numpy", "tf"]
    policies[1].set_weights(policies[0].get_weights())
    frames = np.random.default_rng(1).random((9, 10, 10, 4)) < 0.2
    (a, _, ea), (b, _, eb) = [p.compute_actions(frames, explore=False) for p in policies]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ea["action_dist_inputs"], eb["action_dist_inputs"],
                               rtol=1e-5, atol=1e-6)
    # Noisy layers draw their noise in TF; Nature DQN's encoder is faster in TF.
    policy = make_policy(**NOISY, **QR)
    assert policy.inference == "tf"
    with pytest.raises(ValueError, match=r"inference'\]='numpy' is not supported for "
                                         r"DQNTFPolicy: the model has noisy layers"):
        make_policy(inference="numpy", **NOISY, **QR)
    atari = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    with pytest.raises(ValueError, match=r"multiply-adds per observation"):
        DQNTFPolicy(atari, gym.spaces.Discrete(3), DQNConfig.from_dict(
            {"hiddens": [], "seed": 0, "inference": "numpy", **QR}).to_dict())


def test_noisy_nets_explore_with_fresh_noise_instead_of_epsilon():
    # epsilon 1 would replace every greedy action: with noisy nets it is not applied.
    policy = make_policy(exploration_config={"initial_epsilon": 1.0, "final_epsilon": 1.0},
                         sigma0=2.0, **NOISY)
    x = obs(64)
    greedy, _, greedy_extras = policy.compute_actions(x, explore=False)
    again, _, _ = policy.compute_actions(x, explore=False)
    np.testing.assert_array_equal(greedy, again)  # the means: deterministic
    mean_q = policy.q_values(policy.model, x).numpy()
    np.testing.assert_array_equal(greedy, mean_q.argmax(1))
    first, _, extras = policy.compute_actions(x, explore=True)
    second, _, second_extras = policy.compute_actions(x, explore=True)
    for actions, ex in ((first, extras), (second, second_extras)):
        np.testing.assert_array_equal(actions, ex["action_dist_inputs"].argmax(1))
        assert actions.dtype == greedy.dtype and ex["action_logp"].tolist() == [0.0] * 64
    # Each call draws new noise; the noisy greedy actions differ from the mean's.
    assert not np.allclose(extras["action_dist_inputs"], second_extras["action_dist_inputs"])
    assert 0 < np.sum(first != greedy) < 64
    assert policy.global_timestep == 4 * 64
    assert policy.num_traces["noisy_actions"] == 1
    # Seeded: another policy with the seed draws the same noise.
    twin = make_policy(exploration_config={"initial_epsilon": 1.0, "final_epsilon": 1.0},
                       sigma0=2.0, **NOISY)
    np.testing.assert_array_equal(twin.compute_actions(x, explore=True)[0], first)


# ------------------------------------------------------------------ learning

def test_c51_priorities_are_the_cross_entropies():
    policy = make_policy(double_q=True, gamma=0.9, **C51)
    policy.set_weights([w + 0.01 for w in policy.get_weights()])  # online != target
    b = batch(6)
    _, logits_t = policy.model.q_distribution(b["obs"])
    q_next = policy.q_values(policy.model, b["new_obs"])
    _, logits_next = policy.target_model.q_distribution(b["new_obs"])
    targets = c51_targets(tf.constant(b["rewards"]), tf.constant(b["terminateds"]),
                          logits_next, q_next, gamma=0.9, n_step=tf.constant(b["n_step"]),
                          v_min=-5.0, v_max=5.0)
    want = categorical_td_error(logits_t, tf.constant(b["actions"]), targets).numpy()
    assert np.all(want > 0)
    np.testing.assert_allclose(policy.td_errors(b), want, rtol=1e-5)


@pytest.mark.parametrize("options", [C51, QR, NOISY], ids=["c51", "quantile", "noisy"])
def test_each_option_trains_a_few_steps(options):
    # All of them together, with n-step, double Q, dueling and prioritized replay: the
    # checkpoint test below.
    algo = make_dqn(**options)
    initial = algo.get_policy().get_weights()
    for _ in range(3):
        result = algo.train()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    algo.stop()
    assert stats["num_grad_updates"] > 0
    assert np.isfinite(stats["total_loss"]) and stats["total_loss"] > 0
    assert np.isfinite(stats["mean_q"])
    changed = [not np.array_equal(a, b)
               for a, b in zip(initial, algo.get_policy().get_weights())]
    assert all(changed), changed  # every variable learned, sigma included


class FixedStart(gym.Wrapper):
    """Every episode starts from the same state: with whole episodes per sampling round
    the env then holds no state a checkpoint would have to carry."""

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=0, options=options)


register_env("rainbow_fixed_start_cartpole",
             lambda ctx: FixedStart(gym.make("CartPole-v1", max_episode_steps=12)))


def test_rainbow_restores_from_a_checkpoint_and_continues_exactly(tmp_path):
    # ~13 s: two algorithms, each tracing noisy acting, the C51 learning step and the
    # priorities; the one exact-restore check of these options (the noise key and the
    # RNGs that draw the noise are part of the state: the restored run uses another seed).
    checkpointed = dict(store_buffer_in_checkpoints=True, env="rainbow_fixed_start_cartpole",
                        batch_mode="complete_episodes", **RAINBOW)
    algo = make_dqn(**checkpointed)
    initial = algo.get_policy().get_weights()
    algo.train()
    path = algo.save(str(tmp_path))
    uninterrupted = [algo.train()["info"]["learner"] for _ in range(2)]
    weights = algo.get_policy().get_weights()
    algo.stop()
    stats = uninterrupted[-1]["default_policy"]["learner_stats"]
    assert stats["num_grad_updates"] > 0 and np.isfinite(stats["total_loss"])
    assert all(not np.array_equal(a, b) for a, b in zip(initial, weights))
    # Prioritized replay: the replayed rows' priorities came from the cross-entropies.
    priorities = algo.local_replay_buffer.get_state()["buffers"]["default_policy"][
        "priorities"]
    assert np.any(priorities != 1.0)
    # Another seed: other initial weights, noise key and RNGs, all replaced by the restore.
    restored = make_dqn(**{**checkpointed, "seed": 7})
    restored.restore(path)
    assert [restored.train()["info"]["learner"] for _ in range(2)] == uninterrupted
    for a, b in zip(restored.get_policy().get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    restored.stop()
