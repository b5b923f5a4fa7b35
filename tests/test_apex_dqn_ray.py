"""Ape-X DQN on Ray's simulated two-node cluster (`ray.cluster_utils.Cluster`): the
replay shards on the second node.

Two Ray nodes on this machine, 1 CPU each: the head (the driver, the learner thread)
and a second node that offers the custom resource `tfrl_replay_node`, which the 2
replay shards ask for (`custom_resources_per_replay_shard`; no CPU, as in RLlib), so Ray
must place them there. The 2 rollout workers take half a CPU each (2 cores: a whole-CPU
actor beyond the 2 would wait forever). The test asserts that the shards run on the
second node (Ray node ids), that the workers explore with Ape-X's epsilons (0.4 and
0.4 ** 8; the learner's copy 0), that both workers' rows reached the shards with the
priorities the workers computed (a shard's largest priority is a TD error, not the
initial 1.0), that replayed batches were learned on and their new priorities went back,
and that the workers got weights after `max_weight_sync_delay` steps.

Skipped without Ray; marked `ray` and `slow`. Every wait is bounded.
"""

import sys
import time

import pytest

from tfrl.algorithms.apex_dqn import ApexDQN

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

TIMEOUT = 60.0  # node start-up, actor start-up, each remote call
NODE_RESOURCE = "tfrl_replay_node"
CONFIG = {
    "env": "CartPole-v1", "seed": 0, "num_workers": 2, "num_cpus_per_worker": 0.5,
    "model": {"fcnet_hiddens": [16]}, "hiddens": [], "train_batch_size": 32,
    "rollout_fragment_length": 16, "num_steps_sampled_before_learning_starts": 200,
    "timesteps_per_iteration": 400, "target_network_update_freq": 256,
    "replay_buffer_config": {"capacity": 4000},
    "optimizer": {"num_replay_buffer_shards": 2, "max_weight_sync_delay": 64},
    "custom_resources_per_replay_shard": {NODE_RESOURCE: 1},
    "sample_timeout_s": TIMEOUT,
}


@pytest.fixture(scope="module")
def two_node_cluster():
    if ray.is_initialized():  # another module's runtime: this test needs its own cluster
        ray.shutdown()
    cluster = cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        node = cluster.add_node(num_cpus=1, resources={NODE_RESOURCE: 2})
        cluster.wait_for_nodes(timeout=TIMEOUT)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield cluster, node
    finally:
        ray.shutdown()
        cluster.shutdown()


def _node_id(_):
    return ray.get_runtime_context().get_node_id()


def _epsilon(worker):
    return worker.get_policy().cur_epsilon


def test_replay_shards_on_the_second_node_get_the_workers_priorities(two_node_cluster):
    cluster, node = two_node_cluster
    built = time.monotonic()
    algo = ApexDQN(config=CONFIG)
    print(f"ApexDQN built in {time.monotonic() - built:.1f} s")
    try:
        shards = algo.replay_shards
        nodes = [shards.apply(i, _node_id).result(TIMEOUT) for i in range(2)]
        assert nodes == [node.node_id] * 2, (nodes, cluster.head_node.node_id)
        # Per-worker epsilons (RLlib's test_apex_dqn checks the same): 0.4 ** (1 + 7 (i-1)/(N-1)).
        epsilons = [h.apply(_epsilon).result(TIMEOUT) for h in algo.workers.remote_workers()]
        assert epsilons == pytest.approx([0.4, 0.4 ** 8])
        assert _epsilon(algo.workers.local_worker()) == 0.0
        start = time.monotonic()
        for _ in range(2):
            result = algo.train()
        print(f"2 iterations in {time.monotonic() - start:.1f} s: {result['counters']}")
        stats = [shards.call(i, "stats").result(TIMEOUT)["policy_default_policy"]
                 for i in range(2)]
        weights_timestep = [h.call("get_global_vars").result(TIMEOUT)["timestep"]
                            for h in algo.workers.remote_workers()]
    finally:
        algo.stop()
    counters = result["counters"]
    assert counters["num_env_steps_sampled"] >= 800
    # The sampled rows reached the shards: all but those of the calls still in flight
    # (at most 2 per worker, 16 rows each), which may have been counted or stored.
    assert abs(sum(s["added_count"] for s in stats) - counters["num_env_steps_sampled"]) <= 64
    # The workers' priorities: |n-step TD error| + eps, not the initial priority 1.0.
    assert all(s["max_priority"] != 1.0 for s in stats), stats
    assert counters["num_replay_requests"] > 0
    assert counters["num_env_steps_trained"] >= 32 and counters["num_env_steps_trained"] % 32 == 0
    assert sum(s["sampled_count"] for s in stats) >= counters["num_env_steps_trained"]
    assert counters["num_weight_syncs"] >= 2 and all(t > 0 for t in weights_timestep)
    assert result["info"]["replay_shard_0"]["policy_default_policy"]["added_count"] > 0
