"""Data-layer benchmarks: tfrl beside the plain numpy / tf.data code it replaces.

Each case times tfrl and its reference in the same process, interleaved, and prints
the ratio tfrl / reference (lower is better) with its target:

1. `concat_samples` of 64 batches x 256 rows vs per-column `np.concatenate` (<= 1.5x).
2. 100,000 `SingleAgentEpisode.add_env_step` + `finalize` vs appending to Python lists
   and `np.asarray` (<= 2x).
3. Iterating the `to_dataset` minibatches of a 100,000-row batch (shuffled, seeded) vs
   `tf.data.Dataset.from_tensor_slices(dict).batch()` on the same arrays, unshuffled
   (<= 1.2x).

    python bench/bench_data.py [--repeats=5]
"""

import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repetitions per case (median taken).")


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _compare(name, tfrl_fn, ref_fn, target, repeats):
    tfrl_fn(), ref_fn()  # warm-up (imports, tracing, caches)
    t_tfrl, t_ref = [], []
    for _ in range(repeats):  # interleave so both see the same machine load
        t_tfrl.append(_median_time(tfrl_fn, 1))
        t_ref.append(_median_time(ref_fn, 1))
    a, b = statistics.median(t_tfrl), statistics.median(t_ref)
    ratio = a / b
    verdict = "ok" if ratio <= target else "OVER TARGET"
    print(f"{name:<44} tfrl {a * 1e3:9.2f} ms   ref {b * 1e3:9.2f} ms   "
          f"ratio {ratio:5.2f}x (target <= {target}x) {verdict}", flush=True)
    return ratio


def _cartpole_columns(rng, n, eps_offset=0):
    return {
        "obs": rng.standard_normal((n, 4)).astype(np.float32),
        "new_obs": rng.standard_normal((n, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, n),
        "rewards": np.ones(n, np.float32),
        "terminateds": np.zeros(n, bool),
        "truncateds": np.zeros(n, bool),
        "t": np.arange(n),
        "eps_id": np.full(n, eps_offset),
        "action_logp": np.full(n, -0.69, np.float32),
        "vf_preds": rng.standard_normal(n).astype(np.float32),
    }


def bench_concat(repeats):
    from tfrl.policy.sample_batch import SampleBatch, concat_samples

    rng = np.random.default_rng(0)
    columns = [_cartpole_columns(rng, 256, i) for i in range(64)]
    batches = [SampleBatch(c) for c in columns]

    def tfrl_fn():
        out = concat_samples(batches)
        assert len(out) == 64 * 256

    def ref_fn():
        out = {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}
        assert len(out["obs"]) == 64 * 256

    return _compare("concat_samples 64 x 256 rows", tfrl_fn, ref_fn, 1.5, repeats)


def bench_episode(repeats, steps=100_000):
    from tfrl.env.single_agent_episode import SingleAgentEpisode

    rng = np.random.default_rng(0)
    observations = list(rng.standard_normal((steps + 1, 4)).astype(np.float32))
    actions = rng.integers(0, 2, steps).tolist()

    def tfrl_fn():
        episode = SingleAgentEpisode()
        episode.add_env_reset(observations[0], {})
        for i in range(steps):
            episode.add_env_step(observations[i + 1], actions[i], 1.0, {},
                                 extra_model_outputs={"action_logp": -0.69})
        episode.finalize()
        assert len(episode) == steps

    def ref_fn():
        obs, acts, rews, infos, logps = [observations[0]], [], [], [{}], []
        for i in range(steps):
            obs.append(observations[i + 1])
            acts.append(actions[i])
            rews.append(1.0)
            infos.append({})
            logps.append(-0.69)
        arrays = [np.asarray(obs), np.asarray(acts), np.asarray(rews), np.asarray(logps)]
        assert len(arrays[1]) == steps

    return _compare(f"{steps:,} add_env_step + finalize", tfrl_fn, ref_fn, 2.0, repeats)


def bench_dataset(repeats, rows=100_000, batch_size=128):
    import tensorflow as tf

    from tfrl.policy.dataset import to_dataset
    from tfrl.policy.sample_batch import SampleBatch

    rng = np.random.default_rng(0)
    data = _cartpole_columns(rng, rows)
    batch = SampleBatch(data)

    def tfrl_fn():
        n = sum(1 for _ in to_dataset(batch, batch_size, seed=0))
        assert n == rows // batch_size

    def ref_fn():
        ds = tf.data.Dataset.from_tensor_slices(data).batch(batch_size, drop_remainder=True)
        n = sum(1 for _ in ds)
        assert n == rows // batch_size

    return _compare(f"tf.data minibatches of {rows:,} rows", tfrl_fn, ref_fn, 1.2, repeats)


def main(argv):
    del argv
    import tensorflow as tf

    print(f"tfrl data-layer benchmarks on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, TF {tf.__version__}")
    repeats = _REPEATS.value
    ratios = [bench_concat(repeats), bench_episode(repeats), bench_dataset(repeats)]
    targets = [1.5, 2.0, 1.2]
    over = sum(r > t for r, t in zip(ratios, targets))
    print(f"{len(ratios) - over} of {len(ratios)} within target")


if __name__ == "__main__":
    app.run(main)
