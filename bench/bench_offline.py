"""Offline input benchmark: rows per second read from experience files into
`learn_on_batch`, JSON lines vs TFRecord, on CartPole-shaped data and PPO's tuned batch.

Writes `--rows` CartPole-like rows (obs, new_obs, actions, rewards, flags, action_prob,
advantages, value_targets, vf_preds, action_logp, action_dist_inputs) with `JsonWriter`
(obs/new_obs compressed as RLlib does by default when lz4 is installed, else plain JSON
lists, which RLlib reads too) and `TFRecordWriter`, then times:

1. read only: JSON (`JsonReader.next` + concat to `train_batch_size` rows) and TFRecord
   (`TFRecordReader.dataset(train_batch_size)`: parallel interleave, block shuffle,
   prefetch);
2. learn only: `PPOTFPolicy.learn_on_batch` on one prepared batch
   (tfrl/tuned/ppo_cartpole.yaml: 256 rows, 20 epochs of 2 minibatches);
3. read + learn for each input (rows/s into `learn_on_batch`);
4. RLlib's `JsonReader` on the same JSON files (train_batch_size 256 per `next()`): in
   this process where `ray.rllib` imports, else in a child process of `--rllib_python`
   (a venv with `ray[rllib]`, whose gymnasium pin differs from tfrl's); else skipped.

Each row gives wall rows/s and the process CPU time per row (all threads; on a shared
machine the CPU time is the steadier number). The load average is printed first.

Target (issue 17): the TFRecord path reads >= 5x faster than the learner consumes.

    python bench/bench_offline.py [--rows=50000] [--seconds=5] [--rllib_python=...]
"""

import json
import os
import resource
import subprocess
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
_RLLIB_PYTHON = flags.DEFINE_string(
    "rllib_python", os.environ.get("TFRL_RLLIB_PYTHON", ""),
    "Python of a venv with ray[rllib], for RLlib's JsonReader when this one has none.")
_BATCH = 256  # PPO's tuned CartPole train batch

# Run by --rllib_python: RLlib's JsonReader on argv[1] for argv[2] seconds.
_RLLIB_CHILD = """
import json, resource, sys, time
from ray.rllib.offline import IOContext, JsonReader
reader = JsonReader(sys.argv[1], IOContext(config={"train_batch_size": int(sys.argv[3])}))
reader.next()
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
rows, start, c0 = 0, time.perf_counter(), cpu()
while time.perf_counter() - start < float(sys.argv[2]):
    rows += reader.next().count
print(json.dumps([rows / (time.perf_counter() - start), (cpu() - c0) / rows]))
"""


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


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rate(fn, seconds):
    """`(rows per second, CPU seconds per row)` of `fn() -> rows`, after warm-up calls."""
    for _ in range(3):
        fn()
    rows, start, cpu = 0, time.perf_counter(), _cpu()
    while time.perf_counter() - start < seconds:
        rows += fn()
    return rows / (time.perf_counter() - start), (_cpu() - cpu) / rows


def _rllib_rate(path, seconds):
    """RLlib's JsonReader on `path`: in process, or through --rllib_python."""
    try:
        from ray.rllib.offline import IOContext as RLlibIOContext
        from ray.rllib.offline import JsonReader as RLlibJsonReader
    except Exception as e:  # not installed, or without its dependencies
        python = _RLLIB_PYTHON.value
        if not python or not os.path.exists(python):
            print(f"RLlib JsonReader: skipped (here: {type(e).__name__}; no --rllib_python)")
            return None
        proc = subprocess.run([python, "-c", _RLLIB_CHILD, path, str(seconds), str(_BATCH)],
                              capture_output=True, text=True, timeout=600 + 10 * seconds)
        if proc.returncode:
            print(f"RLlib JsonReader ({python}): failed: {proc.stderr.strip()[-300:]}")
            return None
        return tuple(json.loads(proc.stdout.strip().splitlines()[-1]))
    reader = RLlibJsonReader(path, RLlibIOContext(config={"train_batch_size": _BATCH}))
    return _rate(lambda: reader.next().count, seconds)


def main(argv):
    del argv
    from tfrl.algorithms.ppo import PPOTFPolicy
    from tfrl.cli.experiment import build_config, resolve_experiment
    from tfrl.data.sample_batch import SampleBatch, concat_samples
    from tfrl.offline.io_context import IOContext
    from tfrl.offline.json_format import lz4_available
    from tfrl.offline.json_reader import JsonReader
    from tfrl.offline.json_writer import JsonWriter
    from tfrl.offline.tfrecord import TFRecordReader, TFRecordWriter
    import gymnasium as gym

    print(f"load average (1, 5, 15 min): {os.getloadavg()} on {os.cpu_count()} cores")
    root = tempfile.mkdtemp(prefix="bench_offline_")
    rng = np.random.default_rng(0)
    # RLlib reads only its own (LZ4) compressed columns: without lz4, plain JSON lists.
    compress = ["obs", "new_obs"] if lz4_available() else []
    json_w = JsonWriter(os.path.join(root, "json"), compress_columns=compress)
    tfr_w = TFRecordWriter(os.path.join(root, "tfrecord"), max_file_size=512 * 1024)
    for start in range(0, _ROWS.value, 200):  # fragments of 200 rows, as a worker writes
        batch = SampleBatch(_rows(min(200, _ROWS.value - start), rng))
        json_w.write(batch)
        tfr_w.write(batch)
    json_w.close()
    tfr_w.close()
    print(f"{_ROWS.value} rows: JSON {os.path.getsize(json_w.files[0]) / 1e6:.1f} MB "
          f"(compressed columns: {compress or 'none'}), "
          f"TFRecord {sum(os.path.getsize(f) for f in tfr_w.files) / 1e6:.1f} MB in "
          f"{len(tfr_w.files)} shards")

    yaml = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tfrl", "tuned", "ppo_cartpole.yaml")
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
    rllib = _rllib_rate(os.path.join(root, "json"), seconds)
    if rllib is not None:
        results["read JSON (RLlib JsonReader)"] = rllib
    print(f"{'':32s} {'rows/s':>12s} {'CPU us/row':>11s}")
    for name, (rate, cpu) in results.items():
        print(f"{name:32s} {rate:12,.0f} {cpu * 1e6:11.1f}")
    learn_rate, learn_cpu = results["learn only"]
    for name in ("TFRecord", "JSON"):
        rate, cpu = results[f"read {name}"]
        verdict = f" (target >= 5x): {'met' if rate >= 5 * learn_rate else 'NOT met'}" \
            if name == "TFRecord" else ""
        print(f"{name} read / learner consumption: {rate / learn_rate:.1f}x wall, "
              f"{learn_cpu / cpu:.1f}x CPU per row{verdict}")
    if rllib is not None:
        print(f"tfrl JsonReader / RLlib JsonReader: {results['read JSON'][0] / rllib[0]:.2f}x; "
              f"TFRecord / RLlib JsonReader: {results['read TFRecord'][0] / rllib[0]:.1f}x")


if __name__ == "__main__":
    app.run(main)
