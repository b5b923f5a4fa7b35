"""A learner across processes: `learner_workers=2` (MultiWorkerMirroredStrategy, TF_CONFIG).

Two local processes on loopback ports learn on the same global batches and must end with
the weights of one process learning under a 2-replica MirroredStrategy.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from tfrl.policy.strategy import make_strategy

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 240


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_processes_match_two_replica_mirrored_strategy(tmp_path):
    sys.path.insert(0, str(HERE))
    from multi_worker_learner import CONFIG, OBS, ACT, SGDPPOPolicy, train
    from policy_helpers import strategy_named

    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    outs = [tmp_path / f"worker{i}.npz" for i in range(2)]
    procs = []
    for index in range(2):
        env = {**os.environ, "TF_CONFIG": json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}),
            "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
        procs.append(subprocess.Popen(
            [sys.executable, str(HERE / "multi_worker_learner.py"), str(outs[index])],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    # Meanwhile, the reference: one process, two replicas (logical CPUs), same batches.
    reference, ref_explained = train(
        SGDPPOPolicy(OBS, ACT, dict(CONFIG), strategy=strategy_named("mirrored")))
    _, one_device_explained = train(
        SGDPPOPolicy(OBS, ACT, dict(CONFIG), strategy=strategy_named("one_device")))
    # The per-replica statistic tells two replicas from one device (the weights do not).
    assert not np.allclose(ref_explained, one_device_explained, rtol=1e-4)
    logs = []
    try:
        for proc in procs:
            logs.append(proc.communicate(timeout=TIMEOUT_S)[0])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, log in zip(procs, logs):
        assert proc.returncode == 0, log[-3000:]
    got = [np.load(out) for out in outs]
    initial = SGDPPOPolicy(OBS, ACT, dict(CONFIG), strategy=strategy_named("mirrored")).get_weights()
    for weights in got:
        assert bool(weights["multi_worker"])
        assert int(weights["replicas"]) == 2
        np.testing.assert_allclose(weights["explained"], ref_explained, rtol=1e-5, atol=1e-6)
    for i, ref in enumerate(reference):
        assert not np.allclose(ref, initial[i]), "the reference did not learn"
        for weights in got:
            np.testing.assert_allclose(weights[f"arr_{i}"], ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tf_config, match", [
    (None, "needs the TF_CONFIG environment variable"),
    ("not json", "TF_CONFIG is not a cluster description"),
    (json.dumps({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}),
     "lists workers"),
    (json.dumps({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "chief", "index": 0}}),
     "task must be"),
])
def test_learner_workers_needs_a_matching_tf_config(monkeypatch, tf_config, match):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError, match=match):
        make_strategy({"learner_workers": 2})


@pytest.mark.parametrize("config, match", [
    ({"learner_workers": 0}, "whole number >= 1"),
    ({"learner_workers": 1.5}, "whole number >= 1"),
    ({"learner_workers": 2, "num_gpus": 2}, "cannot be combined with num_gpus"),
])
def test_learner_workers_bad_values(config, match):
    with pytest.raises(ValueError, match=match):
        make_strategy(config)


def test_remote_rollout_workers_learn_in_their_own_process_only():
    from tfrl.evaluation.rollout_worker.policies import merged_policy_config
    from tfrl.policy.policy import PolicySpec

    spec = PolicySpec(None, OBS_SPACE, ACT_SPACE, None)
    config = {"learner_workers": 2, "num_gpus_per_worker": 0}
    assert merged_policy_config(config, spec, 0, None)["learner_workers"] == 2
    assert merged_policy_config(config, spec, 1, None)["learner_workers"] == 1


def test_resources_sets_learner_workers():
    from tfrl.algorithms.ppo import PPOConfig

    assert PPOConfig().resources(learner_workers=2).to_dict()["learner_workers"] == 2
    with pytest.raises(ValueError, match="learner_workers"):
        PPOConfig().resources(learner_workers=0)
