"""One learner process of the two-process `MultiWorkerMirroredStrategy` test.

Run as `python tests/multi_worker_learner.py OUT.npz` with `TF_CONFIG` set: builds the
PPO policy with `learner_workers=2`, runs `STEPS` learn_on_batch calls on the same global
batches as `reference_weights` (imported by the test) and saves the weights to OUT.npz.
"""

import os
import sys
from typing import List, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.policy.sample_batch import SampleBatch

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)
STEPS = 3
ROWS = 32
# SGD so that a gradient summed twice (or averaged over the wrong count) shows; two
# epochs of 8-row minibatches: 4 rows per replica per step, 8 optimizer steps per call.
CONFIG = {"seed": 0, "model": {"fcnet_hiddens": [16]}, "lr": 0.05, "num_sgd_iter": 2,
          "sgd_minibatch_size": 8, "entropy_coeff": 0.01, "kl_coeff": 0.2}


class SGDPPOPolicy(PPOTFPolicy):
    def make_optimizer(self):
        return keras.optimizers.SGD(self.config["lr"])


def global_batches() -> List[SampleBatch]:
    """`STEPS` fixed PPO train batches of `ROWS` rows (the same in every process)."""
    rng = np.random.default_rng(7)
    batches = []
    for _ in range(STEPS):
        logits = rng.normal(size=(ROWS, 2)).astype(np.float32)
        actions = rng.integers(0, 2, ROWS)
        logp = logits[np.arange(ROWS), actions] - np.log(np.exp(logits).sum(-1))
        batches.append(SampleBatch(
            obs=rng.uniform(-1, 1, (ROWS, 4)).astype(np.float32), actions=actions,
            action_logp=logp.astype(np.float32), action_dist_inputs=logits,
            advantages=rng.normal(size=ROWS).astype(np.float32),
            value_targets=rng.normal(size=ROWS).astype(np.float32),
            vf_preds=rng.normal(size=ROWS).astype(np.float32)))
    return batches


def train(policy: PPOTFPolicy) -> Tuple[List[np.ndarray], np.ndarray]:
    """The weights after learning on `global_batches()`, and each call's
    `vf_explained_var`: a per-replica statistic averaged over the replicas, so it tells
    two replicas' halves from one device's whole minibatch."""
    explained = []
    for batch in global_batches():
        stats = policy.learn_on_batch(batch)["learner_stats"]
        explained.append(float(stats["vf_explained_var"]))
    return [np.asarray(w) for w in policy.get_weights()], np.asarray(explained)


def main(out: str) -> None:
    policy = SGDPPOPolicy(OBS, ACT, {**CONFIG, "learner_workers": 2})
    weights, explained = train(policy)
    np.savez(out + ".tmp.npz", *weights, explained=explained,
             multi_worker=isinstance(policy.strategy, tf.distribute.MultiWorkerMirroredStrategy),
             replicas=policy.strategy.num_replicas_in_sync)
    os.replace(out + ".tmp.npz", out)


if __name__ == "__main__":
    main(sys.argv[1])
