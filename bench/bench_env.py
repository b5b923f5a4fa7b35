"""Env-layer benchmarks: tfrl's BaseEnv beside the gymnasium vector env it wraps.

Each case steps 8 CartPole sub-envs (`gymnasium.make_vec(..., vectorization_mode=
"vector_entry_point")`) through tfrl and, interleaved in the same process, the same
kind of gymnasium vector env directly with batched numpy actions, and prints env steps
per second of both and the ratio tfrl / reference (higher is better):

1. `BaseEnv.poll()` / `send_actions()` with the two-level dicts, the way a sampler
   uses them (the action dict is built from the agents that await an action)
   (target >= 0.7x).
2. `poll_arrays()` / `send_action_array()`, the batched accessors (target >= 0.7x).
3. For information: the in-process list of 8 `CartPole-v1` envs
   (`VectorEnv.vectorize_gym_envs`) through `poll`/`send_actions`, against the same
   gymnasium vector env (no target: it steps the sub-envs one by one in Python).

Then HTTP round trips per second of `PolicyClient.get_action` in remote mode, once
`tfrl.serving.policy_client` exists.

    python bench/bench_env.py [--repeats=5] [--steps=2000]
"""

import os
import sys
import platform
import statistics
import time

import gymnasium as gym
import numpy as np
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repetitions per case (median taken).")
_STEPS = flags.DEFINE_integer("steps", 2000, "Vector steps per repetition (a multiple of 100).")

NUM_ENVS = 8
_CHUNK = 100  # vector steps per timed chunk
AGENT = "agent0"


def _make_vec():
    return gym.make_vec("CartPole-v1", NUM_ENVS, vectorization_mode="vector_entry_point")


def _compare(name, tfrl_fn, ref_fn, target, repeats, steps):
    """Times `fn(t0, k)` (steps t0..t0+k) of both sides in alternating chunks.

    Each repetition alternates chunks of `_CHUNK` vector steps between tfrl and the
    reference (so both see the same machine load) and yields one throughput ratio;
    the medians over repetitions are printed.
    """
    tfrl_fn(0, _CHUNK), ref_fn(0, _CHUNK)  # warm-up
    ratios, rates_tfrl, rates_ref = [], [], []
    for _ in range(repeats):
        t_tfrl = t_ref = 0.0
        for t0 in range(0, steps, _CHUNK):
            start = time.perf_counter()
            tfrl_fn(t0, _CHUNK)
            t_tfrl += time.perf_counter() - start
            start = time.perf_counter()
            ref_fn(t0, _CHUNK)
            t_ref += time.perf_counter() - start
        ratios.append(t_ref / t_tfrl)
        rates_tfrl.append(steps * NUM_ENVS / t_tfrl)
        rates_ref.append(steps * NUM_ENVS / t_ref)
    ratio = statistics.median(ratios)
    verdict = "" if target is None else ("ok" if ratio >= target else "UNDER TARGET")
    target_text = "(no target)" if target is None else f"(target >= {target}x)"
    print(f"{name:<40} tfrl {statistics.median(rates_tfrl):9,.0f} steps/s   ref "
          f"{statistics.median(rates_ref):9,.0f} steps/s   ratio {ratio:5.2f}x {target_text} {verdict}",
          flush=True)
    return ratio


def _reference(actions):
    env = _make_vec()
    env.reset(seed=0)

    def ref_fn(t0, k):
        step = env.step
        for t in range(t0, t0 + k):
            step(actions[t])

    return ref_fn


def bench_dicts(repeats, steps, actions):
    from tfrl.env.base_env import convert_to_base_env

    env = convert_to_base_env(_make_vec())
    obs, _ = env.try_reset(seed=0)
    state = {"ready": list(obs)}

    def tfrl_fn(t0, k):
        ready = state["ready"]
        send, poll = env.send_actions, env.poll
        for t in range(t0, t0 + k):
            acts = actions[t].tolist()
            send({i: {AGENT: acts[i]} for i in ready})
            obs, rewards, terminateds, truncateds, infos, _ = poll()
            ready = [i for i in obs if not (terminateds[i]["__all__"] or truncateds[i]["__all__"])]
        state["ready"] = ready

    return _compare("poll/send_actions (dicts), 8 CartPole", tfrl_fn, _reference(actions),
                    0.7, repeats, steps)


def bench_arrays(repeats, steps, actions):
    from tfrl.env.base_env import convert_to_base_env

    env = convert_to_base_env(_make_vec())
    env.try_reset(seed=0)

    def tfrl_fn(t0, k):
        send, poll = env.send_action_array, env.poll_arrays
        for t in range(t0, t0 + k):
            send(actions[t])
            poll()

    return _compare("poll_arrays/send_action_array", tfrl_fn, _reference(actions),
                    0.7, repeats, steps)


def bench_list_of_envs(repeats, steps, actions):
    from tfrl.env.vector_env import VectorEnv

    env = VectorEnv.vectorize_gym_envs(lambda i: gym.make("CartPole-v1"), num_envs=NUM_ENVS).to_base_env()
    obs, _ = env.try_reset(seed=0)
    state = {"ready": list(obs)}

    def tfrl_fn(t0, k):
        ready = state["ready"]
        for t in range(t0, t0 + k):
            acts = actions[t].tolist()
            env.send_actions({i: {AGENT: acts[i]} for i in ready})
            obs, rewards, terminateds, truncateds, infos, _ = env.poll()
            ready = [i for i in obs if not (terminateds[i]["__all__"] or truncateds[i]["__all__"])]
        state["ready"] = ready

    return _compare("list of 8 gymnasium envs (dicts)", tfrl_fn, _reference(actions),
                    None, repeats, steps)


def bench_http(seconds):
    """HTTP round trips per second of `PolicyClient.get_action` in remote mode."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from http_roundtrip import bench_http as measure

    return measure(seconds=seconds)


def main(argv):
    del argv
    print(f"tfrl env-layer benchmarks on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium {gym.__version__}")
    repeats, steps = _REPEATS.value, _STEPS.value
    actions = np.random.default_rng(0).integers(0, 2, (steps, NUM_ENVS))
    ratios = [bench_dicts(repeats, steps, actions), bench_arrays(repeats, steps, actions)]
    bench_list_of_envs(repeats, steps, actions)
    over = sum(r < 0.7 for r in ratios)
    print(f"{len(ratios) - over} of {len(ratios)} within target")

    bench_http(seconds=2.0)

if __name__ == "__main__":
    app.run(main)
