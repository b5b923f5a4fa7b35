"""IMPALA trains on Ray's own simulated two-node cluster (`ray.cluster_utils.Cluster`).

Two Ray nodes on this machine: a head node (the driver and the learner thread) and a
worker node that offers a custom resource, `tfrl_worker_node`, which the 2 remote
rollout workers ask for (`custom_resources_per_worker`), so Ray must place both on the
worker node. Both nodes have whole CPUs that the workers only take halves of (2 cores:
a third whole-CPU actor would wait forever). The test asserts that the workers' actors
run on the worker node (Ray node ids), that the batches of both reached the learner
(each got the learner's weights back with the global timestep, which the driver sends
only to a worker whose batch it just queued), and that IMPALA reaches a mean return of
150 on CartPole-v1 from `tfrl/tuned/impala_cartpole.yaml` (~40k env steps there).

A Ray Tune sweep runs unchanged on the same cluster (issue 31): two PPO trials that each
ask for a whole CPU run at the same time, one on each node, and both report.

Skipped without Ray; marked `ray` and `slow` (the IMPALA run also `learning`). Every wait
is bounded: node start-up, actor start-up (TensorFlow imports take seconds), each remote
call, and the training run in steps and wall time.
"""

import os
import sys
import time

import pytest

from tfrl.algorithms.registry import get_algorithm_class
from tfrl.cli.experiment import build_config, resolve_experiment

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, pytest.mark.slow]
# The actors cannot import this module: ship its functions by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

TARGET = 150.0
MAX_STEPS = 200_000
MAX_TRAIN_S = 75.0  # a run that has not learned by then fails; it does not hang
TIMEOUT = 60.0  # each remote call, and the nodes' start-up
NODE_RESOURCE = "tfrl_worker_node"
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "impala_cartpole.yaml")


@pytest.fixture(scope="module")
def two_node_cluster():
    """A head node and a worker node (1 CPU each), the driver connected to the head."""
    if ray.is_initialized():  # another module's runtime: this test needs its own cluster
        ray.shutdown()
    cluster = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        worker_node = cluster.add_node(num_cpus=1, resources={NODE_RESOURCE: 2})
        cluster.wait_for_nodes(timeout=TIMEOUT)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield cluster, worker_node
    finally:
        ray.shutdown()
        cluster.shutdown()


def _node_id(worker):
    return ray.get_runtime_context().get_node_id()


@pytest.mark.learning
def test_impala_trains_with_its_workers_on_the_second_node(two_node_cluster):
    cluster, worker_node = two_node_cluster
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2
    head_id = cluster.head_node.node_id
    assert {n["NodeID"] for n in alive} == {head_id, worker_node.node_id}
    assert ray.get_runtime_context().get_node_id() == head_id  # the driver

    config = build_config(resolve_experiment(TUNED, overrides=["seed=0"])).replace(
        custom_resources_per_worker={NODE_RESOURCE: 1}, sample_timeout_s=TIMEOUT)
    assert config.num_workers == 2 and config.num_cpus_per_worker <= 0.5
    built = time.monotonic()
    algo = get_algorithm_class("IMPALA")(config=config)
    print(f"IMPALA built in {time.monotonic() - built:.1f} s")
    try:
        handles = algo.workers.remote_workers()
        assert len(handles) == 2
        nodes = [h.apply(_node_id).result(timeout=TIMEOUT) for h in handles]
        assert nodes == [worker_node.node_id] * 2, (nodes, head_id)
        assert algo.workers.local_worker().env is None  # every sample is a remote one

        start = time.monotonic()
        while True:
            result = algo.train()
            if (result["episode_reward_mean"] >= TARGET or result["timesteps_total"] >= MAX_STEPS
                    or time.monotonic() - start > MAX_TRAIN_S):
                break
        wall = time.monotonic() - start
        print(f"trained {result['timesteps_total']} steps in {wall:.1f} s: "
              f"mean return {result['episode_reward_mean']:.1f}")
        timesteps = [h.call("get_global_vars").result(timeout=TIMEOUT)["timestep"]
                     for h in handles]
        counters = result["counters"]
    finally:
        algo.stop()

    assert result["episode_reward_mean"] >= TARGET, (
        result["episode_reward_mean"], result["timesteps_total"], wall)
    assert result["timesteps_total"] <= MAX_STEPS
    assert all(t > 0 for t in timesteps), timesteps  # both workers' batches were queued
    assert counters["num_env_steps_trained"] > 0
    assert counters["num_weight_broadcasts"] > 0


def test_a_tune_sweep_places_its_trials_on_both_nodes(two_node_cluster, tmp_path):
    tune = pytest.importorskip("ray.tune")
    import tfrl.tune

    cluster, worker_node = two_node_cluster

    class NodeReportingPPO(tfrl.tune.get_trainable("PPO")):
        """tfrl's PPO trainable that reports the Ray node it runs on."""

        def step(self):
            return {**super().step(), "node_id": ray.get_runtime_context().get_node_id()}

    config = {"env": "CartPole-v1", "num_workers": 0, "num_envs_per_worker": 2,
              "rollout_fragment_length": 8, "train_batch_size": 32,
              "sgd_minibatch_size": 16, "num_sgd_iter": 1, "model": {"fcnet_hiddens": [8]},
              # a whole CPU a trial: each node has one, so the two trials run on both
              "num_cpus_for_driver": 1, "seed": tune.grid_search([0, 1])}
    results = tfrl.tune.Tuner(
        NodeReportingPPO, param_space=config,
        tune_config=tune.TuneConfig(metric="episode_reward_mean", mode="max",
                                    time_budget_s=4 * TIMEOUT),
        run_config=tune.RunConfig(name="two_nodes", verbose=0, storage_path=str(tmp_path),
                                  stop={"training_iteration": 2})).fit()
    assert len(results) == 2 and not results.errors
    assert all(r.metrics["training_iteration"] == 2 for r in results)
    nodes = sorted(r.metrics["node_id"] for r in results)
    assert nodes == sorted([cluster.head_node.node_id, worker_node.node_id]), nodes
