"""Offline input benchmark: rows per second read from experience files into
`learn_on_batch`, JSON lines vs TFRecord, on CartPole-shaped data and PPO's tuned batch.

Writes `--rows` CartPole-like rows (obs, new_obs, actions, rewards, flags, action_prob,
advantages, value_targets, vf_preds, action_logp, action_dist_inputs) with `JsonWriter`
(obs columns compressed, as by default) and `TFRecordWriter`, then times:

1. read only: JSON (`JsonReader.next` + concat to `train_batch_size` rows) and TFRecord
   (`TFRecordReader.dataset(train_batch_size)`, parallel interleave + prefetch);
2. learn only: `PPOTFPolicy.learn_on_batch` on one prepared batch
   (examples/tuned/ppo_cartpole.yaml: 256 rows, 20 epochs of 2 minibatches);
3. read + learn for each input.

Target (issue 17): the TFRecord path reads >= 5x faster than the learner consumes.
Where `ray.rllib` imports, RLlib's `JsonReader` reads the same JSON files (it needs
lz4 for the compressed columns); otherwise that row is skipped.

    python bench/bench_offline.py [--rows=50000] [--seconds=5]
"""

import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_ROWS = flags.DEFINE_integer("rows", 50_000, "Rows written to each format.")
_SECONDS = flags.DEFINE_float("seconds", 5.0, "Time per measurement.")
_BATCH = 256  # PPO's tuned CartPole train batch


def _rows(n, rng):
    obs = rng.standard_normal((n, 4)).astype(np.float32)
    logits = rng.standard_normal((n, 2)).astype(np.float32)
    return {
        "obs": obs, "new_obs": obs + 0.01, "actions": rng.integers(0, 2, n),
        "rewards": np.ones(n, np.float32), "terminateds": np.zeros(n, bool),
        "truncateds": np.zeros(n, bool), "action_prob": np.full(n, 0.5, np.float32),
        "action_logp": np.full(n, np.log(0.5), np.float32), "action_dist_inputs": logits,
        "vf_preds": rng.standard_normal(n).astype(np.float32),
        "advantages": rng.standard_normal(n).astype(np.float32),
        "value_targets": rng.standard_normal(n).astype(np.float32),
        "eps_id": np.repeat(np.arange(n // 200 + 1), 200)[:n], "t": np.arange(n) % 200,
    }


def _rate(fn, seconds):
    """Rows per second of `fn() -> rows`, after one warm-up call."""
    fn()
    rows, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        rows += fn()
    return rows / (time.perf_counter() - start)


def main(argv):
    del argv
    from tfrl.algorithms.ppo import PPOTFPolicy
    from tfrl.cli.experiment import build_config, resolve_experiment
    from tfrl.data.sample_batch import SampleBatch, concat_samples
    from tfrl.offline.io_context import IOContext
    from tfrl.offline.json_reader import JsonReader
    from tfrl.offline.json_writer import JsonWriter
    from tfrl.offline.tfrecord import TFRecordReader, TFRecordWriter
    import gymnasium as gym

    root = tempfile.mkdtemp(prefix="bench_offline_")
    rng = np.random.default_rng(0)
    json_w, tfr_w = JsonWriter(os.path.join(root, "json")), TFRecordWriter(
        os.path.join(root, "tfrecord"), max_file_size=2 * 1024 * 1024)
    for start in range(0, _ROWS.value, 200):  # fragments of 200 rows, as a worker writes
        batch = SampleBatch(_rows(min(200, _ROWS.value - start), rng))
        json_w.write(batch)
        tfr_w.write(batch)
    json_w.close()
    tfr_w.close()
    print(f"{_ROWS.value} rows: JSON {os.path.getsize(json_w.files[0]) / 1e6:.1f} MB, "
          f"TFRecord {sum(os.path.getsize(f) for f in tfr_w.files) / 1e6:.1f} MB in "
          f"{len(tfr_w.files)} shards")

    yaml = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "tuned", "ppo_cartpole.yaml")
    config = build_config(resolve_experiment(yaml)).to_dict()
    policy = PPOTFPolicy(gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                         gym.spaces.Discrete(2), config)
    ctx = IOContext(config={"seed": 0, "train_batch_size": _BATCH})
    json_reader = JsonReader(os.path.join(root, "json"), ctx)
    pending = []

    def json_batch():
        rows = sum(len(b) for b in pending)
        while rows < _BATCH:
            pending.append(json_reader.next())
            rows += len(pending[-1])
        batch = concat_samples(pending)
        pending[:] = [batch[_BATCH:]] if len(batch) > _BATCH else []
        return batch[:_BATCH]

    tfr_iter = iter(TFRecordReader(os.path.join(root, "tfrecord"), ctx).dataset(_BATCH))
    fixed = json_batch()

    def learn(batch):
        policy.learn_on_batch(batch)
        return _BATCH

    seconds = _SECONDS.value
    results = {
        "read JSON": _rate(lambda: len(json_batch()), seconds),
        "read TFRecord": _rate(lambda: len(next(tfr_iter)["obs"]), seconds),
        "learn only": _rate(lambda: learn(fixed), seconds),
        "read JSON + learn": _rate(lambda: learn(json_batch()), seconds),
        "read TFRecord + learn": _rate(lambda: learn(next(tfr_iter)), seconds),
    }
    try:
        from ray.rllib.offline import JsonReader as RLlibJsonReader

        rllib_reader = RLlibJsonReader(os.path.join(root, "json"))
        results["read JSON (RLlib JsonReader)"] = _rate(lambda: len(rllib_reader.next()),
                                                        seconds)
    except Exception as e:  # not installed, or without TF/lz4 support here
        print(f"RLlib JsonReader: skipped ({type(e).__name__}: {str(e)[:100]})")
    for name, rate in results.items():
        print(f"{name:32s} {rate:12,.0f} rows/s")
    ratio = results["read TFRecord"] / results["learn only"]
    print(f"TFRecord read / learner consumption: {ratio:.1f}x (target >= 5x): "
          f"{'met' if ratio >= 5 else 'NOT met'}")
    print(f"JSON read / learner consumption: "
          f"{results['read JSON'] / results['learn only']:.1f}x")


if __name__ == "__main__":
    app.run(main)
