"""tfrl's PPO learning phase on pixels against Stable-Baselines3's `PPO.train` (the bench
extra; skipped without torch and SB3).

With the tuned Breakout settings (tfrl/tuned/ppo_breakout.yaml, RL Zoo's Atari PPO:
clip 0.1, value coefficient 0.5, entropy 0.01, grad-norm 0.5, Adam epsilon 1e-5, 4 epochs
of minibatches of 256, the Nature CNN shared by policy and value) and SB3's `CnnPolicy`
from the same initial weights, one tfrl `learn_on_batch` and one SB3 `train()` on the same
rollout batch of uint8 frames, with the same minibatches in the same order, end at the
same weights.

What had to be bridged (issue 19's findings):
- layout: SB3's convs are NCHW with torch kernels `[out, in, kh, kw]` and flatten
  `(c, h, w)`; tfrl's are NHWC (Keras `[kh, kw, in, out]`) and flatten `(h, w, c)`: the
  first dense kernel's rows are permuted when copying (`sb3_to_tfrl`). Both pad "valid".
- minibatch order: SB3 draws `np.random.permutation` per epoch, tfrl a seeded stateless
  permutation per epoch in the graph; the test hands SB3 tfrl's permutations.
- advantage normalization: SB3 normalizes per minibatch (`(A - mean) / (std + 1e-8)`,
  Bessel-corrected std); tfrl's PPO by default per train batch (`StandardizeFields`,
  population std). `normalize_advantages="minibatch"` (the tuned Breakout file's) makes
  tfrl's loss do SB3's.
- Adam: torch adds epsilon to the bias-corrected `sqrt(v_hat)`, Keras to `sqrt(v)` before
  the correction. `optimizer: {epsilon_form: torch}` makes tfrl's Adam use torch's
  (the tuned file's).
The same in both (no bridge): Rescaling by 1/255, "valid" convs, the unclipped value loss
(tfrl's vf_clip_param 1e6), the loss's terms and weights, global-norm gradient clipping.
Not bridged: initializers (only the start; the test copies SB3's weights): tfrl's logits
and value layers are normc(0.01) / normc(1.0), SB3's orthogonal with the same gains.
`test_gae_matches_sb3s_rollout_buffer` checks the rollout side (GAE, bootstraps).
"""

import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

th = pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.logger import configure  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from tfrl.algorithms.ppo import PPOTFPolicy  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.core.columns import Columns  # noqa: E402
from tfrl.data.sample_batch import SampleBatch  # noqa: E402
from tfrl.execution.rollout_ops import standardized  # noqa: E402

TUNED = os.path.join(os.path.dirname(__file__), "..", "tfrl", "tuned",
                     "ppo_breakout.yaml")
N_ENVS, N_STEPS, N_ACTIONS = 8, 128, 4
OBS_SPACE = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)


class _Frames(gym.Env):
    """Only the spaces matter: the test fills SB3's rollout buffer itself."""

    observation_space = OBS_SPACE
    action_space = gym.spaces.Discrete(N_ACTIONS)

    def reset(self, *, seed=None, options=None):
        return np.zeros(OBS_SPACE.shape, np.uint8), {}

    def step(self, action):
        return np.zeros(OBS_SPACE.shape, np.uint8), 0.0, False, False, {}


def sb3_to_tfrl(policy) -> list:
    """SB3's CnnPolicy parameters as tfrl's VisionNetwork weights (get_weights order:
    conv1-3, the 512 dense, logits, value)."""
    p = {k: v.detach().numpy().copy() for k, v in policy.state_dict().items()}
    out = []
    for i in (0, 2, 4):  # NatureCNN.cnn: Conv, ReLU, Conv, ReLU, Conv, ReLU, Flatten
        out += [p[f"features_extractor.cnn.{i}.weight"].transpose(2, 3, 1, 0),  # [kh,kw,in,out]
                p[f"features_extractor.cnn.{i}.bias"]]
    dense = p["features_extractor.linear.0.weight"]  # [512, 64*7*7], inputs ordered (c, h, w)
    out += [dense.reshape(512, 64, 7, 7).transpose(2, 3, 1, 0).reshape(7 * 7 * 64, 512),
            p["features_extractor.linear.0.bias"]]
    out += [p["action_net.weight"].T, p["action_net.bias"],
            p["value_net.weight"].T, p["value_net.bias"]]
    return out


def tfrl_epoch_orders(policy, num_epochs: int, rows: int) -> np.ndarray:
    """The row permutations tfrl's next `learn_on_batch` will draw (`tf_train_step`:
    one seed from the policy's numpy RNG, then argsort of stateless uniform keys)."""
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = policy._np_random.bit_generator.state
    seed = int(rng.integers(2**31))
    keys = tf.random.stateless_uniform([num_epochs, rows], tf.constant([seed, 0], tf.int64))
    return tf.argsort(keys, axis=1, stable=True).numpy()


def make_pair(overrides=()):
    th.manual_seed(0)
    th.set_num_threads(1)
    config = build_config(resolve_experiment(TUNED, overrides=list(overrides))).to_dict()
    policy = PPOTFPolicy(OBS_SPACE, gym.spaces.Discrete(N_ACTIONS), config)
    opt = config["optimizer"]
    model = sb3.PPO(
        "CnnPolicy", DummyVecEnv([_Frames] * N_ENVS), n_steps=N_STEPS,
        batch_size=config["sgd_minibatch_size"], n_epochs=config["num_sgd_iter"],
        gamma=config["gamma"], gae_lambda=config["lambda"], clip_range=config["clip_param"],
        ent_coef=config["entropy_coeff"], vf_coef=config["vf_loss_coeff"],
        max_grad_norm=config["grad_clip"], learning_rate=config["lr"],
        normalize_advantage=config["normalize_advantages"] == "minibatch",
        policy_kwargs={"optimizer_kwargs": {"eps": opt["epsilon"]}}, seed=0, device="cpu")
    model.set_logger(configure(None, [""]))
    policy.set_weights(sb3_to_tfrl(model.policy))
    return config, policy, model


def rollout(policy, seed=0):
    """A synthetic batch of 8 x 128 uint8 frame stacks with the sampling policy's logp,
    values and GAE (the same numbers go to both frameworks)."""
    rng = np.random.default_rng(seed)
    rows = N_ENVS * N_STEPS
    # Smooth-ish frames (blocks of 4x4 pixels) so the conv features vary by row.
    small = rng.integers(0, 256, size=(rows, 21, 21, 4), dtype=np.uint8)
    obs = small.repeat(4, axis=1).repeat(4, axis=2)
    actions = rng.integers(N_ACTIONS, size=rows)
    logits, values = (t.numpy() for t in policy.model(obs))
    logp = (logits - np.log(np.exp(logits).sum(-1, keepdims=True)))[np.arange(rows), actions]
    advantages = rng.normal(size=rows).astype(np.float32)
    returns = (values + rng.normal(scale=0.5, size=rows)).astype(np.float32)
    return {Columns.OBS: obs, Columns.ACTIONS: actions,
            Columns.ACTION_DIST_INPUTS: logits.astype(np.float32),
            Columns.ACTION_LOGP: logp.astype(np.float32),
            Columns.VF_PREDS: values.astype(np.float32),
            Columns.ADVANTAGES: advantages, Columns.VALUE_TARGETS: returns}


def fill_buffer(model, batch):
    """SB3's rollout buffer holding `batch` (flat rows env-major, as its `get` flattens)."""
    buf = model.rollout_buffer

    def per_step(a):  # [envs * steps, ...] -> [steps, envs, ...]
        return np.swapaxes(a.reshape(N_ENVS, N_STEPS, *a.shape[1:]), 0, 1)

    buf.observations = per_step(batch[Columns.OBS].transpose(0, 3, 1, 2)).astype(np.float32)
    buf.actions = per_step(batch[Columns.ACTIONS].astype(np.float32)[:, None])
    buf.log_probs = per_step(batch[Columns.ACTION_LOGP])
    buf.values = per_step(batch[Columns.VF_PREDS])
    buf.advantages = per_step(batch[Columns.ADVANTAGES])
    buf.returns = per_step(batch[Columns.VALUE_TARGETS])
    buf.full, buf.generator_ready = True, False


def train_sb3(model, orders, monkeypatch):
    feed = iter(orders)
    with monkeypatch.context() as m:  # SB3's `get` draws one permutation per epoch
        m.setattr(np.random, "permutation", lambda n: next(feed))
        model.train()
    assert next(feed, None) is None  # SB3 used every epoch's order


def learn_tfrl(policy, config, batch):
    if config["normalize_advantages"] == "batch":  # PPO's execution plan does this
        batch = {**batch, Columns.ADVANTAGES: standardized(batch[Columns.ADVANTAGES])}
    orders = tfrl_epoch_orders(policy, config["num_sgd_iter"], N_ENVS * N_STEPS)
    policy.learn_on_batch(SampleBatch(batch))
    return orders


def run_both(monkeypatch, overrides=()):
    """tfrl's and SB3's weights (tfrl's layout) before and after one learning call each."""
    config, policy, model = make_pair(overrides)
    start = sb3_to_tfrl(model.policy)
    batch = rollout(policy)
    # Before learning both nets compute the same outputs on the frames.
    with th.no_grad():
        obs_t = th.as_tensor(batch[Columns.OBS].transpose(0, 3, 1, 2)[:64].copy())
        logp = model.policy.get_distribution(obs_t).distribution.logits.numpy()
        values = model.policy.predict_values(obs_t).numpy()[:, 0]
    logits = batch[Columns.ACTION_DIST_INPUTS][:64]
    np.testing.assert_allclose(logp, logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                               atol=1e-5)
    np.testing.assert_allclose(values, batch[Columns.VF_PREDS][:64], atol=1e-5)

    orders = learn_tfrl(policy, config, batch)
    fill_buffer(model, batch)
    train_sb3(model, orders, monkeypatch)
    assert model._n_updates == config["num_sgd_iter"]
    return config, start, policy.get_weights(), sb3_to_tfrl(model.policy)


@pytest.mark.slow
def test_one_epoch_matches_sb3s_train(monkeypatch):
    """One epoch (4 minibatch steps) of the tuned settings: equal to float32 round-off."""
    config, start, got, expected = run_both(monkeypatch, ["num_sgd_iter=1"])
    assert config["normalize_advantages"] == "minibatch"
    assert config["optimizer"].get("epsilon_form") == "torch"
    for before, after, want in zip(start, got, expected):
        assert np.abs(want - before).max() > 1e-4  # every layer learned
        np.testing.assert_allclose(after, want, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_one_learning_phase_matches_sb3s_train(monkeypatch):
    """The tuned phase, 4 epochs x 4 minibatches. The float32 round-off of the two conv
    implementations (oneDNN's and torch's summation orders) grows with every Adam step:
    Adam divides by `sqrt(v)`, so a gradient entry near 0 moves its weight by up to `lr`
    whatever its noise (measured: 2e-7 after one epoch, 1e-6 after two, up to 3e-4 in
    single entries after four, against moves of 3e-3). So: every layer within a tenth of
    its largest move, and on average within 1 % of its mean move."""
    config, start, got, expected = run_both(monkeypatch)
    assert config["num_sgd_iter"] == 4 and config["sgd_minibatch_size"] == 256
    for before, after, want in zip(start, got, expected):
        move = np.abs(want - before)
        assert move.max() > 1e-3 or before.ndim == 1  # every kernel learned
        assert np.abs(after - want).max() <= 0.15 * move.max()
        assert np.abs(after - want).mean() <= 0.01 * move.mean()


@pytest.mark.slow
def test_gae_matches_sb3s_rollout_buffer():
    """The rollout side: tfrl's per-trajectory GAE (`compute_advantages` with
    `bootstrap_value`'s rule: 0 after a termination, else V of the next observation)
    equals SB3's `compute_returns_and_advantage` on 8 envs x 128 steps with episodes
    ending (terminations; a lost life is one with the episodic-life pipeline) inside and
    a bootstrap at the fragment end. SB3 folds a truncation into the reward
    (`r + gamma * V(final obs)`, then treats it as an end); tfrl bootstraps that
    trajectory with `last_r = V(final obs)`: the same advantages."""
    from tfrl.evaluation.postprocessing import compute_advantages

    config, _, model = make_pair()
    gamma, lam = config["gamma"], config["lambda"]
    rng = np.random.default_rng(3)
    rewards = rng.choice([0.0, 0.0, 1.0, -1.0], size=(N_STEPS, N_ENVS)).astype(np.float32)
    values = rng.normal(size=(N_STEPS, N_ENVS)).astype(np.float32)
    ends = rng.random((N_STEPS, N_ENVS)) < 0.03  # episode ended after step t
    truncated = ends & (rng.random((N_STEPS, N_ENVS)) < 0.3)
    final_values = rng.normal(size=(N_STEPS, N_ENVS)).astype(np.float32)  # V(final obs)
    last_values = rng.normal(size=N_ENVS).astype(np.float32)  # V(obs after the fragment)

    buf = model.rollout_buffer
    buf.reset()
    buf.rewards[:] = rewards + np.where(truncated, gamma * final_values, 0.0)
    buf.values[:] = values
    buf.episode_starts[0] = 0.0
    buf.episode_starts[1:] = ends[:-1]
    buf.compute_returns_and_advantage(th.as_tensor(last_values[:, None]), ends[-1])

    for env in range(N_ENVS):
        start = 0
        for t in range(N_STEPS):
            if not (ends[t, env] or t == N_STEPS - 1):
                continue
            rows = slice(start, t + 1)
            if ends[t, env]:
                last_r = float(final_values[t, env]) if truncated[t, env] else 0.0
            else:
                last_r = float(last_values[env])
            traj = compute_advantages(
                SampleBatch({Columns.REWARDS: rewards[rows, env],
                             Columns.VF_PREDS: values[rows, env]}),
                last_r, gamma, lam, use_gae=True, use_critic=True)
            np.testing.assert_allclose(traj[Columns.ADVANTAGES], buf.advantages[rows, env],
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(traj[Columns.VALUE_TARGETS], buf.returns[rows, env],
                                       rtol=1e-5, atol=1e-5)
            start = t + 1
    assert ends.sum() > 10 and truncated.sum() > 2  # the cases above all occurred
