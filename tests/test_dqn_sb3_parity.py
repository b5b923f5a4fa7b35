"""tfrl's DQN learning phase against Stable-Baselines3's `DQN.train` (the bench extra;
skipped without torch and SB3).

With RL Zoo's CartPole settings (tfrl/tuned/dqn_cartpole_zoo.yaml: 1-step plain Q,
Huber loss, gradient norm clipped at 10, Adam, the target network held during the phase),
one tfrl learning call of K minibatches and SB3's `train(gradient_steps=K)` on the same
minibatches from the same weights end at the same weights. SB3's torch Adam is swapped
for one that writes Keras' formula (`lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) +
eps)`; torch adds `eps` to `sqrt(v / (1 - b2^t))` instead, which differs only while
`1 - b2^t` is small and only for gradients near `eps`): the one difference of the update
that is the optimizers', not DQN's.
"""

import os

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.buffers import ReplayBufferSamples  # noqa: E402
from stable_baselines3.common.logger import configure  # noqa: E402

from tfrl.algorithms.dqn import DQNTFPolicy  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.data.sample_batch import SampleBatch  # noqa: E402

ZOO = os.path.join(os.path.dirname(__file__), "..", "tfrl", "tuned",
                   "dqn_cartpole_zoo.yaml")
HIDDEN = [32, 32]
BATCH, STEPS = 64, 24


class KerasFormulaAdam(th.optim.Optimizer):
    """Adam as Keras (and TensorFlow's fused kernel) write it, on torch tensors."""

    def __init__(self, params, lr, beta_1=0.9, beta_2=0.999, eps=1e-8):
        super().__init__(params, {"lr": lr})
        self.beta_1, self.beta_2, self.eps, self.t = beta_1, beta_2, eps, 0

    @th.no_grad()
    def step(self, closure=None):
        self.t += 1
        for group in self.param_groups:
            lr_t = (group["lr"] * (1 - self.beta_2 ** self.t) ** 0.5
                    / (1 - self.beta_1 ** self.t))
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["m"], state["v"] = th.zeros_like(p), th.zeros_like(p)
                state["m"].add_((p.grad - state["m"]) * (1 - self.beta_1))
                state["v"].add_((p.grad ** 2 - state["v"]) * (1 - self.beta_2))
                p.sub_(lr_t * state["m"] / (state["v"].sqrt() + self.eps))


def sb3_layers(model):
    """SB3's Q-network as tfrl's weight list (kernels `[in, out]`)."""
    params = [p.detach().numpy().copy() for p in model.q_net.parameters()]
    return [a.T if a.ndim == 2 else a for a in params]


@pytest.mark.slow
# The zoo's clip at 10, and a large reward (Huber's linear part) with a clip at 0.5 that
# every step's gradient norm exceeds.
@pytest.mark.parametrize("reward, grad_clip", [(1.0, 10.0), (300.0, 0.5)])
def test_one_learning_phase_matches_sb3s_train(reward, grad_clip):
    th.manual_seed(0)
    th.set_num_threads(1)
    config = build_config(resolve_experiment(
        ZOO, overrides=[f"model.fcnet_hiddens={HIDDEN}", f"grad_clip={grad_clip}"])).to_dict()
    env = gym.make("CartPole-v1")
    policy = DQNTFPolicy(env.observation_space, env.action_space, config)
    model = sb3.DQN("MlpPolicy", env, learning_rate=config["lr"], batch_size=BATCH,
                    buffer_size=1000, learning_starts=0, gamma=config["gamma"],
                    max_grad_norm=config["grad_clip"], policy_kwargs={"net_arch": HIDDEN},
                    seed=0, device="cpu")
    model.set_logger(configure(None, [""]))
    model.policy.optimizer = KerasFormulaAdam(model.q_net.parameters(), config["lr"],
                                              eps=config["adam_epsilon"])
    start = sb3_layers(model)
    # SB3's initial weights into tfrl (its value head, unused without dueling, stays).
    policy.set_weights(start + policy.get_weights()[len(start):])
    policy.update_target(tau=1.0)

    rng = np.random.default_rng(0)
    rows = STEPS * BATCH
    obs = rng.normal(size=(rows, 4)).astype(np.float32)
    new_obs = rng.normal(size=(rows, 4)).astype(np.float32)
    actions = rng.integers(2, size=rows)
    rewards = (reward * rng.uniform(0.5, 1.5, rows)).astype(np.float32)
    terminateds = rng.random(rows) < 0.1
    policy.learn_on_batch(SampleBatch({
        "obs": obs, "new_obs": new_obs, "actions": actions, "rewards": rewards,
        "terminateds": terminateds, "truncateds": np.zeros(rows, bool)}),
        num_sgd_iter=1, sgd_minibatch_size=BATCH, shuffle_sequences=False)

    minibatches = iter(range(STEPS))

    def sample(batch_size, env=None):  # SB3 draws the same minibatches in order
        first = next(minibatches) * batch_size
        s = slice(first, first + batch_size)
        return ReplayBufferSamples(*(th.as_tensor(a) for a in (
            obs[s], actions[s, None], new_obs[s], terminateds[s, None].astype(np.float32),
            rewards[s, None])))

    model.replay_buffer.sample = sample
    model.train(gradient_steps=STEPS, batch_size=BATCH)
    assert next(minibatches, None) is None  # SB3 took all STEPS minibatches

    expected = sb3_layers(model)
    got = policy.get_weights()[:len(expected)]
    for before, after, want in zip(start, got, expected):
        assert np.abs(want - before).max() > 1e-3  # every layer learned
        np.testing.assert_allclose(after, want, rtol=0, atol=2e-6)
    # The target network stayed at the start weights during the phase (SB3 copies only
    # between phases, in `_on_step`).
    for target, before in zip(policy.target_model.weights, start):
        np.testing.assert_array_equal(target.numpy(), before)
