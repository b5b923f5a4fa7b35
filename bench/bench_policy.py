"""Policy benchmarks: TFPolicy beside the bare TensorFlow code it wraps.

Each case times tfrl and its reference in the same process, interleaved, and prints
the ratio tfrl / reference (lower is better) with its target:

1. `compute_actions` on 8 CartPole observations (catalog model, sampling, logp and
   value) vs calling a concrete function of the same model and distribution with the
   same outputs converted to numpy (<= 1.3x).
   The same with the numpy inference path (`inference="numpy"`, the default for
   such dense policies) vs the same bare concrete function (reported).
2. One `learn_on_batch` of 20 epochs over a 256-row batch (minibatches of 64, Adam) vs
   a hand-written `tf.function` loop over the same epochs and minibatches of the same
   model and loss on one device (<= 1.2x).
3. The same `learn_on_batch` on a 2-replica MirroredStrategy (2 logical CPUs) vs one
   device (overhead reported; no target).
4. `learn_input="tf_data"` (the minibatches drawn from a tf.data pipeline iterated inside
   the compiled loop) vs the default in-graph gathering (<= 1.2x), on one device and on a
   2-replica MirroredStrategy.

    python bench/bench_policy.py [--repeats=5] [--cases=actions,learn,mirrored,tf_data]
"""

import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
from absl import app, flags

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed repetitions per case (median taken).")
_CASES = flags.DEFINE_list("cases", ["actions", "learn", "mirrored", "tf_data"],
                           "The cases to run (see the module docstring).")

OBS_DIM, NUM_ACTIONS = 4, 2


def _compare(name, tfrl_fn, ref_fn, target, repeats, calls=1):
    tfrl_fn(), ref_fn()  # warm-up (tracing, caches)
    t_tfrl, t_ref = [], []
    for _ in range(repeats):  # interleave so both see the same machine load
        for fn, out in ((tfrl_fn, t_tfrl), (ref_fn, t_ref)):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            out.append((time.perf_counter() - start) / calls)
    a, b = statistics.median(t_tfrl), statistics.median(t_ref)
    ratio = a / b
    verdict = "" if target is None else ("ok" if ratio <= target else "OVER TARGET")
    target_text = "(reported)" if target is None else f"(target <= {target}x)"
    print(f"{name:<52} tfrl {a * 1e3:8.3f} ms   ref {b * 1e3:8.3f} ms   "
          f"ratio {ratio:5.2f}x {target_text} {verdict}", flush=True)
    return ratio


def _policy_class():
    import keras

    from tfrl.policy.tf_policy import TFPolicy

    class PG(TFPolicy):
        def make_optimizer(self):
            return keras.optimizers.Adam(self.config["lr"])

        def loss(self, model, dist_class, train_batch):
            dist_inputs, value = model(train_batch["obs"], training=True)
            logp = dist_class(dist_inputs, model).logp(train_batch["actions"])
            return (-self.global_mean(logp * train_batch["advantages"])
                    + self.global_mean((value - train_batch["advantages"]) ** 2))

    return PG


def _make_policy(strategy_config, **config):
    import gymnasium as gym

    from tfrl.policy.strategy import make_strategy

    obs_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
    config = {"seed": 0, "lr": 1e-3, "num_sgd_iter": 20, "sgd_minibatch_size": 64, **config}
    return _policy_class()(obs_space, gym.spaces.Discrete(NUM_ACTIONS), config,
                           strategy=make_strategy(strategy_config))


def _batch(rows=256):
    rng = np.random.default_rng(0)
    return {"obs": rng.standard_normal((rows, OBS_DIM)).astype(np.float32),
            "actions": rng.integers(0, NUM_ACTIONS, rows),
            "advantages": rng.standard_normal(rows).astype(np.float32)}


def bench_compute_actions(repeats, inference="tf"):
    policy = _make_policy({}, inference=inference)
    assert policy.inference == inference
    obs = _batch(8)["obs"]
    model, dist_class = policy.model, policy.dist_class

    @tf.function(input_signature=[tf.TensorSpec((None, OBS_DIM), tf.float32)])
    def bare(o):
        dist_inputs, value = model(o, training=False)
        dist = dist_class(dist_inputs, model)
        action = dist.sample()
        return action, dist.sampled_action_logp(), dist_inputs, value

    concrete = bare.get_concrete_function()

    def ref_fn():
        return [t.numpy() for t in concrete(tf.constant(obs))]

    name = ("compute_actions, 8 CartPole obs vs concrete fn" if inference == "tf" else
            "compute_actions numpy path vs bare concrete fn")
    return _compare(name, lambda: policy.compute_actions(obs), ref_fn,
                    1.3 if inference == "tf" else None, repeats, calls=500)


def bench_learn(repeats, epochs=20, minibatch=64):
    policy = _make_policy({})
    batch = _batch()
    reference = _make_policy({})  # same architecture; its model and optimizer, bare loop
    model, dist_class, optimizer = reference.model, reference.dist_class, reference.optimizer

    @tf.function
    def train(obs, actions, advantages, seed):
        rows = tf.shape(obs)[0]
        for epoch in tf.range(epochs):
            order = tf.random.experimental.stateless_shuffle(tf.range(rows), tf.stack([seed, epoch]))
            for start in tf.range(0, rows - minibatch + 1, minibatch):
                idx = order[start:start + minibatch]
                o, a, adv = tf.gather(obs, idx), tf.gather(actions, idx), tf.gather(advantages, idx)
                with tf.GradientTape() as tape:
                    dist_inputs, value = model(o, training=True)
                    logp = dist_class(dist_inputs, model).logp(a)
                    loss = -tf.reduce_mean(logp * adv) + tf.reduce_mean((value - adv) ** 2)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def ref_fn():
        train(tf.constant(batch["obs"]), tf.constant(batch["actions"]),
              tf.constant(batch["advantages"]), tf.constant(0))

    ratio = _compare("learn_on_batch, 20 epochs x 256 rows vs tf.function loop",
                     lambda: policy.learn_on_batch(batch), ref_fn, 1.2, repeats)
    assert policy.num_traces["learn_on_batch"] == 1
    return ratio


def bench_mirrored(repeats):
    mirrored = _make_policy({"num_gpus": 2, "_fake_gpus": True})
    single = _make_policy({})
    batch = _batch()
    return _compare("learn_on_batch, 2-replica mirrored vs 1 device",
                    lambda: mirrored.learn_on_batch(batch), lambda: single.learn_on_batch(batch),
                    None, repeats)


def bench_tf_data(repeats):
    batch = _batch()
    ratios = []
    for name, strategy in (("1 device", {}), ("2-replica mirrored",
                                              {"num_gpus": 2, "_fake_gpus": True})):
        tf_data = _make_policy(strategy, learn_input="tf_data")
        in_graph = _make_policy(strategy)
        ratios.append(_compare(f"learn_on_batch, tf_data vs in_graph, {name}",
                               lambda: tf_data.learn_on_batch(batch),
                               lambda: in_graph.learn_on_batch(batch), 1.2, repeats))
    return ratios


def _configure_logical_cpus():
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


def main(argv):
    del argv
    _configure_logical_cpus()
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"TF {tf.__version__}, numpy {np.__version__}")
    repeats = _REPEATS.value
    cases = set(_CASES.value)
    if "actions" in cases:
        bench_compute_actions(repeats)
        bench_compute_actions(repeats, inference="numpy")
    if "learn" in cases:
        bench_learn(repeats)
    if "mirrored" in cases:
        bench_mirrored(repeats)
    if "tf_data" in cases:
        bench_tf_data(repeats)


if __name__ == "__main__":
    app.run(main)
