"""Training from a policy server: RolloutMetrics from PolicyServerInput, the `input`
config key (RLlib's `offline_data(input_=...)`), PPO fed by a PolicyClient thread."""

import http.client
import json
import math
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.serving.policy_client import PolicyClient
from tfrl.serving.policy_server_commands import to_rollout_metrics
from tfrl.serving.policy_server_input import PolicyServerInput
from tfrl.serving.wire_format import dumps
from tfrl.evaluation.metrics import collect_metrics, summarize_episodes
from tfrl.evaluation.rollout_metrics import RolloutMetrics
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.examples.policy.random_policy import RandomPolicy
from tfrl.offline import input_creators
from tfrl.offline.input_creators import input_creator_from_config, register_input
from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.policy.sample_batch import SampleBatch

HOST = "127.0.0.1"
OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)
# (steps, reward per step) of the scripted episodes: returns 3.0, 2.5, 7.0; lengths 3, 5, 7.
SCRIPT = [(3, 1.0), (5, 0.5), (7, 1.0)]


def wait_for(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def play_script(client):
    for i, (steps, reward) in enumerate(SCRIPT):
        eid = client.start_episode()
        for t in range(steps):
            client.get_action(eid, np.full(4, 0.1 * t, np.float32))
            client.log_returns(eid, reward)
        client.end_episode(eid, np.zeros(4, np.float32), truncated=(i == 1))


def server_worker(**config):
    """A RolloutWorker without env whose input is a PolicyServerInput (config['input'])."""
    servers = []

    def make_server(ioctx):
        servers.append(PolicyServerInput(ioctx, HOST, 0, idle_timeout=0.1))
        return servers[0]

    worker = RolloutWorker(
        env_creator=lambda ctx: None, policy_spec=RandomPolicy,
        policy_config={"input": make_server, "observation_space": OBS_SPACE,
                       "action_space": ACT_SPACE, **config})
    return worker, servers[0]


@pytest.mark.parametrize("mode", ["remote", "local"])
def test_episodes_arrive_as_rollout_metrics(mode):
    worker, server = server_worker()
    try:
        assert worker.input_reader is server
        assert worker.get_policy().observation_space == OBS_SPACE
        with PolicyClient(f"{HOST}:{server.server_port}", inference_mode=mode,
                          update_interval=None) as client:
            play_script(client)
            episodes = []
            wait_for(lambda: episodes.extend(worker.get_metrics()) or len(episodes) >= 3,
                     what="3 episodes in worker.get_metrics()")
        assert all(isinstance(m, RolloutMetrics) for m in episodes)
        assert sorted(m.episode_length for m in episodes) == [3, 5, 7]
        assert sorted(m.episode_reward for m in episodes) == [2.5, 3.0, 7.0]
        assert sorted(m.agent_rewards[("agent0", "default_policy")] for m in episodes) == [
            2.5, 3.0, 7.0]
        result = summarize_episodes(episodes)
        assert result["episode_reward_mean"] == pytest.approx(12.5 / 3)
        assert result["episode_len_mean"] == 5.0
        assert result["episode_reward_min"] == 2.5 and result["episode_reward_max"] == 7.0
        assert result["episodes_this_iter"] == 3
        assert worker.get_metrics() == []  # drained
    finally:
        worker.stop()
    assert server.stopped  # worker.stop() stopped the server (port released)
    queued = server.samples_queue.qsize()
    for _ in range(queued):  # batches still queued are handed out, then:
        server.next()
    with pytest.raises(RuntimeError, match="The policy server was stopped"):
        server.next()


def test_collect_metrics_through_the_worker():
    worker, server = server_worker()
    try:
        client = PolicyClient(f"{HOST}:{server.server_port}", inference_mode="remote")
        play_script(client)
        wait_for(lambda: server.metrics_queue.qsize() >= 3, what="3 finished episodes")
        result = collect_metrics(local_worker=worker)
        assert result["episode_reward_mean"] == pytest.approx(12.5 / 3)
        assert result["episode_len_mean"] == 5.0
        assert result["episodes_this_iter"] == 3
    finally:
        worker.stop()


def test_to_rollout_metrics_checks_uploaded_dicts():
    m = to_rollout_metrics({"episode_length": 2, "episode_reward": 1.5,
                            "agent_rewards": {(0, "p0"): 1.5}})
    assert m == RolloutMetrics(2, 1.5, {(0, "p0"): 1.5})
    assert to_rollout_metrics(m) is m
    with pytest.raises(ValueError, match=r"unknown fields \['reward'\], missing fields "
                                         r"\['episode_reward'\]"):
        to_rollout_metrics({"episode_length": 2, "reward": 1.0})
    with pytest.raises(ValueError, match="episode_length must be an int >= 0; received -1"):
        to_rollout_metrics({"episode_length": -1, "episode_reward": 1.0})
    with pytest.raises(ValueError, match="episode_reward must be a number; received '1'"):
        to_rollout_metrics({"episode_length": 1, "episode_reward": "1"})
    with pytest.raises(ValueError, match="agent_rewards keys must be .* received 'a'"):
        to_rollout_metrics({"episode_length": 1, "episode_reward": 1.0,
                            "agent_rewards": {"a": 1.0}})
    with pytest.raises(ValueError, match="custom_metrics must be a dict; received 3"):
        to_rollout_metrics({"episode_length": 1, "episode_reward": 1.0, "custom_metrics": 3})
    with pytest.raises(ValueError, match="must be a dict with RolloutMetrics fields; received "
                                         "list"):
        to_rollout_metrics([1, 2])


# ---------------------------------------------------------------- the `input` key


class _Constant(InputReader):
    def next(self):
        return SampleBatch({"obs": np.zeros((2, 4), np.float32)})


def test_input_values():
    ioctx = IOContext()
    assert input_creator_from_config("sampler")(ioctx) is None  # no worker, no sampler
    assert isinstance(input_creator_from_config(lambda ctx: _Constant())(ioctx), _Constant)
    register_input("tfrl_test_constant", lambda ctx: _Constant())
    try:
        assert isinstance(input_creator_from_config("tfrl_test_constant")(ioctx), _Constant)
        config = AlgorithmConfig().offline_data(input_="tfrl_test_constant")
        assert config.to_dict()["input"] == "tfrl_test_constant"
    finally:
        input_creators._INPUT_CREATORS.pop("tfrl_test_constant")


@pytest.mark.parametrize("value, shown", [
    ("sampelr", r"'sampelr' \(str\)\. Did you mean 'sampler'\?"),
    ("/tmp/data/*.json", r"'/tmp/data/\*\.json' \(str\)\. `input`: no files match"),
    (None, r"None \(NoneType\)"),
    (3, r"3 \(int\)"),
])
def test_bad_input_values_raise_value_error(value, shown):
    with pytest.raises(ValueError, match=rf"Unsupported `input` config value: {shown}.*"
                                         "Accepted: \"sampler\""):
        input_creator_from_config(value)
    with pytest.raises(ValueError, match=rf"AlgorithmConfig: Unsupported `input` config value: "
                                         rf"{shown}"):
        AlgorithmConfig.from_dict({"input": value})
    with pytest.raises(ValueError, match=rf"Unsupported `input` config value: {shown}"):
        RolloutWorker(env_creator=lambda ctx: None, policy_spec=RandomPolicy,
                      spaces={"default_policy": (OBS_SPACE, ACT_SPACE)},
                      policy_config={"input": value})


def test_input_creator_returning_a_non_reader_raises_type_error():
    def bad_input(ioctx):
        return {"obs": [1]}

    with pytest.raises(TypeError, match=r"The `input` creator .*bad_input returned dict: "
                                        r"\{'obs': \[1\]\}\. It must return an InputReader"):
        RolloutWorker(env_creator=lambda ctx: None, policy_spec=RandomPolicy,
                      spaces={"default_policy": (OBS_SPACE, ACT_SPACE)},
                      policy_config={"input": bad_input})
    with pytest.raises(TypeError, match="returned int: 7"):
        RolloutWorker(env_creator=lambda ctx: None, policy_spec=RandomPolicy,
                      spaces={"default_policy": (OBS_SPACE, ACT_SPACE)},
                      input_creator=lambda ioctx: 7)


@pytest.mark.parametrize("batch_mode, rows", [("truncate_episodes", 2),
                                               ("complete_episodes", 6)])
def test_input_reads_batches_from_the_reader(batch_mode, rows):
    worker = RolloutWorker(env_creator=lambda ctx: None, policy_spec=RandomPolicy,
                           rollout_fragment_length=5, batch_mode=batch_mode,
                           policy_config={"input": lambda ioctx: _Constant(),
                                          "observation_space": OBS_SPACE,
                                          "action_space": ACT_SPACE})
    assert isinstance(worker.io_context, IOContext)
    assert worker.io_context.worker is worker and worker.io_context.worker_index == 0
    assert worker.get_policy().observation_space == OBS_SPACE
    # truncate_episodes: one reader batch per sample() (num_envs = 1); complete_episodes:
    # reader batches until rollout_fragment_length (5) steps: 3 of 2 rows.
    assert worker.sample().count == rows


def test_input_creator_may_return_none_for_a_worker_without_sampler():
    # RLlib's cartpole_server pattern: only the workers that sample host a server.
    worker = RolloutWorker(env_creator=lambda ctx: None, policy_spec=RandomPolicy,
                           policy_config={"input": lambda ioctx: None,
                                          "observation_space": OBS_SPACE,
                                          "action_space": ACT_SPACE})
    assert worker.input_reader is None
    with pytest.raises(ValueError, match="has no input_reader"):
        worker.sample()


def test_algorithm_without_env_needs_another_input():
    from tfrl.algorithms.ppo import PPOConfig

    with pytest.raises(ValueError, match="needs an env.*offline_data\\(input_="):
        PPOConfig().build()


# ---------------------------------------------------------------- PPO from a server


class _CartPoleClient(threading.Thread):
    def __init__(self, port):
        super().__init__(name="CartPoleClient", daemon=True)
        self.port, self.stop_event, self.error = port, threading.Event(), None

    def run(self):
        try:
            client = PolicyClient(f"{HOST}:{self.port}", inference_mode="remote", timeout=30)
            env = gym.make("CartPole-v1")
            seed = 0
            while not self.stop_event.is_set():
                obs, _ = env.reset(seed=seed)
                seed += 1
                eid = client.start_episode()
                while True:
                    obs, reward, term, trunc, _ = env.step(client.get_action(eid, obs))
                    client.log_returns(eid, reward)
                    if term or trunc or self.stop_event.is_set():
                        client.end_episode(eid, obs, truncated=not term)
                        break
        except Exception as e:  # noqa: BLE001 - reported by the test
            if not self.stop_event.is_set():
                self.error = e


class _UntilDeadline(InputReader):
    def __init__(self, reader, deadline):
        self.reader, self.deadline = reader, deadline

    def next(self):
        if time.monotonic() > self.deadline:
            raise TimeoutError("no train batch from the client before the test's deadline")
        return self.reader.next()


@pytest.mark.slow
def test_ppo_trains_from_a_policy_server():
    from tfrl.algorithms.ppo import PPOConfig

    servers = []
    deadline = time.monotonic() + 300  # train() must not wait forever if the client dies

    def make_server(ioctx):
        servers.append(PolicyServerInput(ioctx, HOST, 0, idle_timeout=0.5))
        return _UntilDeadline(servers[-1], deadline)

    env = gym.make("CartPole-v1")
    config = (PPOConfig()
              .environment(None, observation_space=env.observation_space,
                           action_space=env.action_space)
              .offline_data(input_=make_server)
              .rollouts(num_rollout_workers=0)
              .training(train_batch_size=200, sgd_minibatch_size=64, num_sgd_iter=2)
              .debugging(seed=0))
    algo = config.build()
    client = None
    try:
        assert len(servers) == 1
        client = _CartPoleClient(servers[0].server_port)
        client.start()
        totals = []
        for _ in range(3):
            result = algo.train()
            totals.append(result["timesteps_total"])
            stats = result["info"]["learner"]["default_policy"]["learner_stats"]
            assert stats and all(math.isfinite(float(v)) for v in stats.values())
            assert "episode_reward_mean" in result and "episode_len_mean" in result
        assert client.error is None
        assert totals[0] >= 200 and totals[0] < totals[1] < totals[2]
        assert result["episodes_total"] > 0
        assert math.isfinite(result["episode_reward_mean"])
        assert result["episode_reward_mean"] == result["episode_len_mean"]  # CartPole: 1/step
    finally:
        if client is not None:
            client.stop_event.set()
            client.join(15)
            assert not client.is_alive()
        algo.stop()
    server = servers[0]
    assert server.stopped
    import socket

    with socket.socket() as s:  # the port is free again
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, server.server_port))


def test_uploaded_bad_metrics_are_a_bad_request():
    with PolicyServerInput(IOContext(), HOST, 0, idle_timeout=0.1,
                           policy=RandomPolicy(OBS_SPACE, ACT_SPACE)) as server:
        request = {"command": "REPORT_SAMPLES", "samples": [],
                   "metrics": [{"episode_length": 1, "episode_reward": 1.0},
                               {"episode_length": 1}]}
        conn = http.client.HTTPConnection(HOST, server.server_port, timeout=5)
        conn.request("POST", "/", dumps(request))
        response = conn.getresponse()
        status, error = response.status, json.loads(response.read())["error"]
        conn.close()
        assert status == 400
        assert ("REPORT_SAMPLES: metrics[1]: Episode metrics: unknown fields [], missing "
                "fields ['episode_reward']") in error
        assert server.get_metrics() == []  # nothing of a bad request is kept
