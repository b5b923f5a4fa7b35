"""Latency of one action from an exported policy: the SavedModel's signature (TensorFlow)
against the TFLite file (ai-edge-litert) and the ONNX file (onnxruntime), one observation
per call, the same MLP policy. Prints the median and p99 per call and the ratio to the
SavedModel's median.

    python bench/bench_export.py [--calls=2000] [--hiddens=256,256] [--obs_dim=17]

Needs the export extra: pip install "tfrl[export]".
"""

import argparse
import os
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tfrl.algorithms.ppo import PPOTFPolicy  # noqa: E402


def timed(fn, obs, calls):
    for row in obs[:50]:  # warm-up
        fn(row[None])
    times = []
    for i in range(calls):
        row = obs[i % len(obs)][None]
        t0 = time.perf_counter()
        fn(row)
        times.append(time.perf_counter() - t0)
    return np.median(times) * 1e3, np.percentile(times, 99) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--hiddens", default="256,256")
    parser.add_argument("--obs_dim", type=int, default=17)
    parser.add_argument("--actions", type=int, default=6, help="Discrete actions.")
    args = parser.parse_args()
    hiddens = [int(h) for h in args.hiddens.split(",")]
    policy = PPOTFPolicy(gym.spaces.Box(-1, 1, (args.obs_dim,), np.float32),
                         gym.spaces.Discrete(args.actions),
                         {"model": {"fcnet_hiddens": hiddens}, "seed": 0})
    obs = np.random.default_rng(0).uniform(-1, 1, (256, args.obs_dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        policy.export_model(f"{tmp}/saved")
        tflite = policy.export_tflite(f"{tmp}/tflite")
        policy.export_model(f"{tmp}/onnx", onnx=17)
        saved = tf.saved_model.load(f"{tmp}/saved").signatures["deterministic_action"]
        runner = Interpreter(model_path=tflite).get_signature_runner("deterministic_action")
        session = ort.InferenceSession(f"{tmp}/onnx/model.onnx")
        cases = {
            "SavedModel signature (TF)": lambda o: saved(obs=tf.constant(o))["actions"].numpy(),
            "TFLite (ai-edge-litert)": lambda o: runner(obs=o)["actions"],
            "ONNX (onnxruntime)": lambda o: session.run(["actions"], {"obs": o})[0],
        }
        results = {name: timed(fn, obs, args.calls) for name, fn in cases.items()}
    base = results["SavedModel signature (TF)"][0]
    print(f"MLP {hiddens}, obs {args.obs_dim}, Discrete({args.actions}); one observation "
          f"per call, {args.calls} calls")
    print(f"| runtime | median ms | p99 ms | median vs SavedModel |\n|---|---|---|---|")
    for name, (median, p99) in results.items():
        print(f"| {name} | {median:.3f} | {p99:.3f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
