"""Sampling benchmark: `RolloutWorker.sample()` vs a numpy-only loop over the same env.

tfrl: a RolloutWorker with 8 CartPole sub-envs (`num_envs=8`; the worker vectorizes
CartPole through gymnasium's `vector_entry_point`, the fast path) and the default MLP
policy (PPO's TF policy with the catalog's default model: separate 256-256 tanh policy and
value towers), `rollout_fragment_length=100` (800 env steps per `sample()`), including
postprocessing (GAE).

Ceiling: a numpy MLP of the same size (both towers, softmax sampling) stepping
`gymnasium.make_vec("CartPole-v1", 8, vectorization_mode="vector_entry_point")` directly,
with no batch building at all — the ceiling for any RL library on this CPU.

Prints env steps/s of both and the ratio tfrl / ceiling (higher is better; target >= 0.4).

    python bench/bench_sampling.py [--repeats=5] [--policy=ppo|pg]
"""

import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import gymnasium as gym
import numpy as np
from absl import app, flags

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repetitions per side (median taken).")
_POLICY = flags.DEFINE_enum("policy", "ppo", ["ppo", "pg"], "tfrl policy class to sample with.")

NUM_ENVS, FRAGMENT, HIDDEN = 8, 100, 256
STEPS_PER_SAMPLE = NUM_ENVS * FRAGMENT


class NumpyMLP:
    """Policy and value towers (4 -> 256 -> 256 -> 2 and -> 1), tanh, softmax sampling."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)

        def layer(n_in, n_out):
            return (rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_out)).astype(np.float32),
                    np.zeros(n_out, np.float32))

        self.pi = [layer(4, HIDDEN), layer(HIDDEN, HIDDEN), layer(HIDDEN, 2)]
        self.vf = [layer(4, HIDDEN), layer(HIDDEN, HIDDEN), layer(HIDDEN, 1)]
        self.rng = rng

    @staticmethod
    def _tower(layers, x):
        for w, b in layers[:-1]:
            x = np.tanh(x @ w + b)
        w, b = layers[-1]
        return x @ w + b

    def act(self, obs):
        logits = self._tower(self.pi, obs)  # [B, 2]
        value = self._tower(self.vf, obs)[:, 0]  # [B]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        actions = (self.rng.random(len(obs)) < p[:, 1]).astype(np.int64)
        return actions, value


def make_ceiling():
    env = gym.make_vec("CartPole-v1", NUM_ENVS, vectorization_mode="vector_entry_point")
    policy = NumpyMLP()
    obs, _ = env.reset(seed=0)
    state = {"obs": obs}

    def run():
        obs = state["obs"]
        for _ in range(FRAGMENT):
            actions, _ = policy.act(obs.astype(np.float32))
            obs, rewards, terminated, truncated, infos = env.step(actions)
        state["obs"] = obs
        return STEPS_PER_SAMPLE

    return run


def make_worker():
    from tfrl.evaluation.rollout_worker import RolloutWorker

    if _POLICY.value == "ppo":
        from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy as policy_class
    else:
        from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy as policy_class
    worker = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                           policy_spec=policy_class, num_envs=NUM_ENVS,
                           rollout_fragment_length=FRAGMENT, seed=0)
    vec = getattr(getattr(worker.async_env, "vector_env", None), "env", None)
    print(f"worker env: {type(getattr(vec, 'unwrapped', worker.async_env)).__name__}, "
          f"sampler runner: {type(worker.sampler.runner).__name__}, "
          f"policy: {type(worker.get_policy()).__name__} "
          f"(inference={worker.get_policy().config.get('inference')})", flush=True)

    def run():
        batch = worker.sample()
        assert batch.count == STEPS_PER_SAMPLE, batch.count
        return batch.count

    return run


def main(argv):
    del argv
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs", flush=True)
    sides = {"tfrl RolloutWorker.sample()": make_worker(), "numpy MLP + make_vec (ceiling)": make_ceiling()}
    for run in sides.values():  # warm-up: tracing, caches, first resets
        run(), run()
    rates = {name: [] for name in sides}
    for _ in range(_REPEATS.value):  # interleaved so both see the same machine load
        for name, run in sides.items():
            steps, start = 0, time.perf_counter()
            while time.perf_counter() - start < 1.0:
                steps += run()
            rates[name].append(steps / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in medians.items():
        print(f"{name:<36} {rate:10.0f} env steps/s", flush=True)
    tfrl_rate, ceiling = medians.values()
    ratio = tfrl_rate / ceiling
    print(f"ratio tfrl / ceiling: {ratio:.2f}x (target >= 0.4x) "
          f"{'ok' if ratio >= 0.4 else 'UNDER TARGET'}", flush=True)


if __name__ == "__main__":
    app.run(main)
