"""PolicyServerInput + PolicyClient over real HTTP on 127.0.0.1 (ephemeral ports)."""

import http.client
import json
import socket
import threading
import time

import numpy as np
import pytest
from serving_policies import LinearPolicy

from tfrl.serving.policy_client import PolicyClient, _resolve_policy_class
from tfrl.serving.policy_server_input import PolicyServerInput
from tfrl.serving.wire_format import dumps, loads
from tfrl.offline.io_context import IOContext
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch, concat_samples

IDLE = 0.1
HOST = "127.0.0.1"


@pytest.fixture
def server():
    policy = LinearPolicy()
    ioctx = IOContext(config={"rollout_fragment_length": 4})
    with PolicyServerInput(ioctx, HOST, 0, idle_timeout=IDLE, policy=policy) as srv:
        srv.test_policy = policy
        srv.address = f"{HOST}:{srv.server_port}"
        yield srv


def _obs(seed, t):
    return np.array([0.07 * t + 0.01 * seed, seed, -t], np.float32)


def play(client, seed, steps, *, off_policy_at=(), truncated=False, training_enabled=True):
    """Plays one scripted episode; returns the rows the server must produce."""
    eid = client.start_episode(f"ep{seed}", training_enabled=training_enabled)
    rows = []
    for t in range(steps):
        obs = _obs(seed, t)
        if t in off_policy_at:
            action = 3
            client.log_action(eid, obs, action)
        else:
            action = client.get_action(eid, obs)
        client.log_returns(eid, 0.5 * seed)
        client.log_returns(eid, 0.25, info={"t": t})
        rows.append({"eps_id": eid, "t": t, "obs": obs, "actions": int(action),
                     "rewards": np.float32(0.5 * seed + 0.25), "new_obs": _obs(seed, t + 1),
                     "terminateds": False, "truncateds": False})
    client.end_episode(eid, _obs(seed, steps), truncated=truncated)
    rows[-1]["terminateds"], rows[-1]["truncateds"] = not truncated, truncated
    return rows


def collect(server, num_rows, timeout=10.0):
    """Reads batches from server.next() until num_rows rows arrived (plus a quiet period)."""
    batches, deadline = [], time.monotonic() + timeout
    while sum(len(b) for b in batches) < num_rows and time.monotonic() < deadline:
        batch = server.next()
        if len(batch):
            batches.append(batch)
    quiet_until = time.monotonic() + 2 * IDLE
    while time.monotonic() < quiet_until:
        batches.append(server.next())  # anything but empty heartbeats would be duplicates
    return concat_samples(batches)


def assert_rows_equal(batch, rows):
    order = sorted(range(len(batch)), key=lambda i: (batch["eps_id"][i], batch["t"][i]))
    rows = sorted(rows, key=lambda r: (r["eps_id"], r["t"]))
    assert len(order) == len(rows), f"{len(order)} rows from the server, {len(rows)} logged"
    for i, row in zip(order, rows):
        for key, expected in row.items():
            got = batch[key][i]
            if isinstance(expected, np.ndarray):
                np.testing.assert_array_equal(got, expected, err_msg=f"{key} of {row['eps_id']}")
            else:
                assert got == expected, f"{key} of {row['eps_id']} t={row['t']}: {got} != {expected}"


def run_three_episodes(client):
    rows, threads = [], []
    scripts = [dict(seed=1, steps=6), dict(seed=2, steps=3, off_policy_at=(1,)),
               dict(seed=3, steps=5, truncated=True)]
    for kwargs in scripts:  # the three episodes run concurrently
        thread = threading.Thread(target=lambda kw=kwargs: rows.extend(play(client, **kw)))
        threads.append(thread)
        thread.start()
    for thread in threads:
        thread.join(10)
    return rows


# ---- Round trips -------------------------------------------------------------------------

def test_remote_inference_round_trip(server):
    client = PolicyClient(server.address, inference_mode="remote")
    assert dict(client.policies) == {}  # no local copies
    rows = run_three_episodes(client)
    assert len(rows) == 14
    for row in rows:
        if not (row["eps_id"] == "ep2" and row["t"] == 1):
            assert row["actions"] == server.test_policy.expected_action(row["obs"])
    batch = collect(server, len(rows))
    assert_rows_equal(batch, rows)
    assert "advantages" in batch and "vf_preds" in batch  # postprocessed by the server policy
    metrics = server.get_metrics()
    assert sorted(m.episode_length for m in metrics) == [3, 5, 6]
    client.close()


def test_local_inference_round_trip(server):
    server.test_policy.set_weights({"w": np.array([0.0, 0.3, 0.0], np.float32)})
    with PolicyClient(server.address, inference_mode="local", update_interval=None,
                      trusted_policy_classes=[LinearPolicy]) as client:
        assert list(client.policies) == ["default_policy"]
        local_policy = client.policies["default_policy"]
        assert local_policy is not server.test_policy
        np.testing.assert_array_equal(local_policy.w, np.array([0.0, 0.3, 0.0], np.float32))
        assert local_policy.w.dtype == np.float32
        rows = run_three_episodes(client)
        batch = collect(server, len(rows))
        assert_rows_equal(batch, rows)
        assert "advantages" in batch  # postprocessed by the client's policy copy
        # The server computed no action for the client: its only calls ran the two-step
        # reference trajectory that tells the upload check which columns to expect.
        assert server.test_policy.calls == [(1, False), (1, False)]
        deadline = time.monotonic() + 5
        metrics = []
        while len(metrics) < 3 and time.monotonic() < deadline:
            metrics += server.get_metrics()
            time.sleep(0.01)
        assert sorted(m.episode_length for m in metrics) == [3, 5, 6]


def test_local_weights_refresh(server):
    with PolicyClient(server.address, inference_mode="local", update_interval=None,
                      trusted_policy_classes=[LinearPolicy]) as client:
        eid = client.start_episode()
        obs = np.array([0.25, 0.0, 0.0], np.float32)
        assert client.get_action(eid, obs) == 2  # floor(2.5) % 4
        server.test_policy.set_weights({"w": np.array([0.5, 0.0, 0.0], np.float32)})
        assert client.get_action(eid, obs) == 2  # not refreshed yet
        client.update_policy_weights()
        assert client.get_action(eid, obs) == 1  # floor(1.25)
    with PolicyClient(server.address, inference_mode="local", update_interval=0.01,
                      trusted_policy_classes=[LinearPolicy]) as client:
        eid = client.start_episode()
        server.test_policy.set_weights({"w": np.array([1.0, 0.0, 0.0], np.float32)})
        time.sleep(0.02)
        assert client.get_action(eid, obs) == 2  # refreshed at this call


def test_local_close_right_after_end_episode_uploads_it(server):
    client = PolicyClient(server.address, inference_mode="local", update_interval=None,
                          trusted_policy_classes=[LinearPolicy])
    rows = play(client, seed=5, steps=3)
    client.close()  # the loop may not have seen the final observation yet
    assert_rows_equal(collect(server, len(rows)), rows)


def test_multi_agent_local():
    policies = {"p0": LinearPolicy(), "p1": LinearPolicy()}
    mapping = lambda aid, eid, worker=None: f"p{aid % 2}"  # noqa: E731
    with PolicyServerInput(IOContext(), HOST, 0, idle_timeout=IDLE, policy=policies,
                           policy_mapping_fn=mapping) as srv:
        address = f"{HOST}:{srv.server_port}"
        with pytest.raises(ValueError, match="local inference needs PolicyClient.*policy_mapping_fn"):
            PolicyClient(address, trusted_policy_classes=[LinearPolicy])
        with PolicyClient(address, trusted_policy_classes=[LinearPolicy],
                          policy_mapping_fn=mapping) as client:
            eid = client.start_episode()
            obs = {0: np.array([0.1, 0, 0], np.float32), 1: np.array([0.2, 0, 0], np.float32)}
            assert client.get_action(eid, obs) == {0: 1, 1: 2}
            client.log_returns(eid, {0: 1.0, 1: 2.0})
            client.end_episode(eid, obs)
        batch = srv.next()
        while not len(batch):
            batch = srv.next()
        assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 1
        assert batch.policy_batches["p1"]["rewards"].tolist() == [2.0]
        assert srv.get_metrics()[0].agent_rewards == {(0, "p0"): 1.0, (1, "p1"): 2.0}


@pytest.mark.parametrize("mode", ["remote", "local"])
def test_get_action_for_a_list_of_episodes(server, mode):
    with PolicyClient(server.address, inference_mode=mode, trusted_policy_classes=[LinearPolicy]) as client:
        ids = [client.start_episode() for _ in range(3)]
        obs = {eid: np.array([0.1 * i, 0, 0], np.float32) for i, eid in enumerate(ids)}
        actions = client.get_action(ids, obs)
        assert actions == {eid: server.test_policy.expected_action(o) for eid, o in obs.items()}


def test_training_disabled_episodes_are_not_sampled(server):
    client = PolicyClient(server.address, inference_mode="remote")
    play(client, seed=1, steps=3, training_enabled=False)
    deadline = time.monotonic() + 5
    metrics = []
    while not metrics and time.monotonic() < deadline:
        metrics = server.get_metrics()
    assert metrics[0].episode_length == 3
    assert len(collect(server, 0)) == 0


def test_multi_agent_remote(tmp_path):
    policies = {"p0": LinearPolicy(), "p1": LinearPolicy()}
    with PolicyServerInput(IOContext(), HOST, 0, idle_timeout=IDLE, policy=policies,
                           policy_mapping_fn=lambda aid, eid, worker=None: f"p{aid % 2}") as srv:
        client = PolicyClient(f"{HOST}:{srv.server_port}", inference_mode="remote")
        eid = client.start_episode()
        obs = {0: np.array([0.1, 0, 0], np.float32), 1: np.array([0.2, 0, 0], np.float32)}
        assert client.get_action(eid, obs) == {0: 1, 1: 2}  # int agent ids survive
        client.log_returns(eid, {0: 1.0, 1: 2.0}, multiagent_done_dict={1: True})
        client.end_episode(eid, obs)
        batch = srv.next()
        while not len(batch):
            batch = srv.next()
        assert isinstance(batch, MultiAgentBatch)
        assert batch.policy_batches["p0"]["rewards"].tolist() == [1.0]
        assert batch.policy_batches["p1"]["rewards"].tolist() == [2.0]
        status, payload = raw_post(srv, dumps({"command": "REPORT_SAMPLES", "samples": [
            MultiAgentBatch({"zz": batch.policy_batches["p0"]}, 1)]}))
        assert status == 400 and "has data of unknown policy 'zz'" in payload["error"]


# ---- Bad input: HTTP 400 with a message, and the server keeps serving ----------------------

def raw_post(server, body, headers=None):
    conn = http.client.HTTPConnection(HOST, server.server_port, timeout=5)
    conn.request("POST", "/", body, headers or {})
    response = conn.getresponse()
    status, payload = response.status, json.loads(response.read())
    conn.close()
    return status, payload


def assert_still_serving(server):
    status, payload = raw_post(server, dumps({"command": "START_EPISODE", "episode_id": None}))
    assert status == 200 and len(payload["episode_id"]) == 32


@pytest.mark.parametrize("body,message", [
    (b'{"command": "START_EPISODE", "episode_id": nul', "malformed JSON"),
    (b'["START_EPISODE"]', "Expected a request object with a 'command' key; received list"),
    (dumps({"command": "FLY"}), "Unknown command 'FLY'; expected one of ['START_EPISODE'"),
    (dumps({"command": "GET_ACTION", "episode_id": "x"}), "GET_ACTION request is missing ['observation']"),
    (dumps({"command": "END_EPISODE", "episode_id": "x", "observation": 1, "extra": 2}),
     "END_EPISODE request has unexpected keys ['extra']"),
    (dumps({"command": "LOG_RETURNS", "episode_id": 5, "reward": 1.0}), "episode_id must be a str"),
    (dumps({"command": "GET_ACTION", "episode_id": "nope", "observation": [0.0, 0.0, 0.0]}),
     "Unknown episode id 'nope'"),
    (dumps({"command": "START_EPISODE", "episode_id": None, "training_enabled": "yes"}),
     "training_enabled must be a bool"),
    (dumps({"command": "REPORT_SAMPLES", "samples": [{"obs": [1]}]}), "must be a SampleBatch; received dict"),
    (dumps({"command": "REPORT_SAMPLES", "samples": [SampleBatch(
        {"obs": np.zeros((2, 5)), "actions": [0, 1], "rewards": [0.0, 0.0]})]}),
     "samples[0] has columns ['actions', 'obs', 'rewards']: missing ['action_logp', "
     "'advantages', 'dones', 'eps_id', 'infos', 'new_obs', 't', 'terminateds', 'truncateds', "
     "'vf_preds'], unexpected []"),
    (dumps({"command": "GET_ACTION", "episode_id": 5, "observation": 1}),
     "episode_id must be a str or a non-empty list of str"),
    (dumps({"command": "GET_ACTION", "episode_id": ["a", "b"], "observation": {"a": 1}}),
     "takes observation as a dict episode id -> observation with exactly those ids"),
    (dumps({"command": "LOG_RETURNS", "episode_id": "x", "reward": 1.0, "info": 3}),
     "info must be a dict or None"),
    (dumps({"command": "END_EPISODE", "episode_id": "x", "observation": 1, "truncated": "no"}),
     "truncated must be a bool"),
    (dumps({"command": "REPORT_SAMPLES", "samples": {}}), "takes samples as a list of batches"),
    (dumps({"command": "REPORT_SAMPLES", "samples": [SampleBatch({"obs": np.zeros((1, 3))})]}),
     "samples[0] has columns ['obs']: missing ['action_logp', 'actions', 'advantages', "),
    (dumps({"command": "REPORT_SAMPLES", "samples": [MultiAgentBatch({}, 0)]}),
     "must be a SampleBatch; received MultiAgentBatch"),
])
def test_bad_requests_get_400(server, body, message):
    status, payload = raw_post(server, body)
    assert status == 400 and message in payload["error"]
    assert_still_serving(server)


def test_episode_errors_over_http(server):
    client = PolicyClient(server.address, inference_mode="remote")
    client.start_episode("dup")
    with pytest.raises(ValueError, match=r"refused START_EPISODE \(HTTP 400\): Episode dup is already started"):
        client.start_episode("dup")
    with pytest.raises(ValueError, match=r"HTTP 400.*observation has shape \(2,\), expected \(3,\)"):
        client.get_action("dup", np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"HTTP 400.*action 7 is not in the action space Discrete\(4\)"):
        client.log_action("dup", np.zeros(3, np.float32), 7)
    with pytest.raises(ValueError, match=r"HTTP 400.*Unknown episode id 'other'"):
        client.end_episode("other", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="single-agent env; send done=None"):
        client.log_returns("dup", {"a": 1.0}, multiagent_done_dict={"a": True})
    client.end_episode("dup", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="Episode dup has already completed"):
        client.start_episode("dup")
    assert_still_serving(server)


def test_truncated_and_oversized_bodies(server):
    with socket.create_connection((HOST, server.server_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b'{"command": "ST')
        sock.shutdown(socket.SHUT_WR)
        head, _, body = sock.makefile("rb").read().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert loads(body)["error"] == "Truncated request body: received 15 of the 100 bytes announced by Content-Length."
    with socket.create_connection((HOST, server.server_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n")
        head, _, body = sock.makefile("rb").read().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and b"exceeds the limit" in body
    with socket.create_connection((HOST, server.server_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, body = sock.makefile("rb").read().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411") and b"needs a Content-Length header" in body
    conn = http.client.HTTPConnection(HOST, server.server_port, timeout=5)
    conn.request("GET", "/")
    assert conn.getresponse().status == 405
    conn.close()
    assert_still_serving(server)


# ---- Failures, timeouts, shutdown, construction errors -------------------------------------

class BrokenPolicy(LinearPolicy):
    def compute_actions(self, obs_batch, explore=None, **kwargs):
        raise ZeroDivisionError("boom")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_failing_policy_gives_503_remote_and_runtime_error_local():
    with PolicyServerInput(IOContext(), HOST, 0, idle_timeout=IDLE, policy=BrokenPolicy()) as srv:
        address = f"{HOST}:{srv.server_port}"
        client = PolicyClient(address, inference_mode="remote")
        eid = client.start_episode()
        with pytest.raises(RuntimeError, match="HTTP 503.*was stopped while episode"):
            client.get_action(eid, np.zeros(3, np.float32))
        with pytest.raises(RuntimeError, match="HTTP 503.*inference loop failed: ZeroDivisionError"):
            client.start_episode()
        # Local inference does not need the server's (failed) loop; it fails in the client.
        with PolicyClient(address, trusted_policy_classes=[BrokenPolicy]) as client:
            eid = client.start_episode()
            with pytest.raises(RuntimeError, match="was stopped"):
                client.get_action(eid, np.zeros(3, np.float32))
            with pytest.raises(RuntimeError, match="Local inference of this PolicyClient failed: "
                                                   "ZeroDivisionError"):
                client.start_episode()


class FakeServer:
    """Answers every POST with a fixed body (a hostile or broken policy server)."""

    def __init__(self, body, status=200):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer((HOST, 0), Handler)
        self.address = f"{HOST}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _worker_args(policy_class, version=1):
    from tfrl.serving.policy_protocol import PROTOCOL_VERSION

    return dumps({"protocol_version": PROTOCOL_VERSION if version == 1 else version,
                  "multiagent": False, "config": {}, "dropped_config_keys": [],
                  "policies": {"default_policy": {
                      "policy_class": policy_class, "observation_space": LinearPolicy().observation_space,
                      "action_space": LinearPolicy().action_space, "config": {}}}})


@pytest.mark.parametrize("body,status,error,message", [
    (_worker_args("os:system"), 200, ValueError, "named a policy class outside tfrl"),
    (_worker_args("builtins:eval"), 200, ValueError, "named a policy class outside tfrl"),
    (_worker_args("tfrl.examples.policy.random_policy:RandomPolicy", version=99), 200, ValueError,
     "speaks protocol version 99; this client speaks 1"),
    (b"<html>not json</html>", 200, RuntimeError, "sent an invalid response to GET_WORKER_ARGS"),
    (dumps({"error": "nope"}), 500, RuntimeError, r"refused GET_WORKER_ARGS \(HTTP 500\): nope"),
])
def test_hostile_or_broken_server(body, status, error, message):
    fake = FakeServer(body, status)
    try:
        with pytest.raises(error, match=message):
            PolicyClient(fake.address, inference_mode="local")
    finally:
        fake.close()


def test_oversized_response_is_refused():
    fake = FakeServer(dumps({"episode_id": "x" * 1000}))
    try:
        client = PolicyClient(fake.address, inference_mode="remote")
        client.max_response_bytes = 100
        with pytest.raises(ConnectionError, match="exceeds max_response_bytes=100"):
            client.start_episode()
    finally:
        fake.close()


def test_server_side_action_timeout_is_504():
    class QuickServer(PolicyServerInput):
        action_timeout = 0.2

    policy = LinearPolicy()
    policy.gate = threading.Event()
    with QuickServer(IOContext(), HOST, 0, idle_timeout=IDLE, policy=policy) as srv:
        client = PolicyClient(f"{HOST}:{srv.server_port}", inference_mode="remote")
        eid = client.start_episode()
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match=r"HTTP 504.*No action for episode"):
            client.get_action(eid, np.zeros(3, np.float32))
        assert time.monotonic() - t0 < 2
        policy.gate.set()


def test_client_timeout_and_unreachable_server():
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind((HOST, 0))
        silent.listen()
        client = PolicyClient(f"{HOST}:{silent.getsockname()[1]}", inference_mode="remote", timeout=0.2)
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="No response from the policy server .* within timeout=0.2 s"):
            client.start_episode()
        assert time.monotonic() - t0 < 2
        port = silent.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"Cannot reach the policy server at {HOST}:{port}"):
        PolicyClient(f"{HOST}:{port}", inference_mode="local")


def test_clean_shutdown_releases_waiting_clients():
    policy = LinearPolicy()
    policy.gate = threading.Event()  # the policy hangs until the gate opens
    srv = PolicyServerInput(IOContext(), HOST, 0, idle_timeout=IDLE, policy=policy)
    port = srv.server_port
    client = PolicyClient(f"{HOST}:{port}", inference_mode="remote")
    eid = client.start_episode()
    errors = []

    def wait():
        try:
            client.get_action(eid, np.zeros(3, np.float32))
        except RuntimeError as e:
            errors.append(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    idle_conn = socket.create_connection((HOST, port))  # an idle keep-alive connection
    stopper = threading.Thread(target=srv.stop, kwargs={"timeout": 0.5})
    stopper.start()
    waiter.join(2)
    assert not waiter.is_alive()
    assert "HTTP 503" in str(errors[0]) and "was stopped while episode" in str(errors[0])
    policy.gate.set()
    stopper.join(5)
    assert not stopper.is_alive()
    threads = srv.threads
    # head reader, serving, heartbeat, refusals, inference loop, env
    assert len(threads) == 6
    for thread in threads:
        thread.join(2)
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((HOST, port), timeout=1)
    assert idle_conn.recv(1) == b""  # the server closed the idle connection
    idle_conn.close()
    srv.stop()  # idempotent


def test_heartbeat_keeps_next_from_blocking(server):
    t0 = time.monotonic()
    batch = server.next()
    assert isinstance(batch, SampleBatch) and len(batch) == 0
    assert time.monotonic() - t0 < 5 * IDLE


def test_worker_policy_and_metrics_hook():
    class Sampler:
        def get_metrics(self):
            return ["original"]

    class Worker:
        sampler = Sampler()

        def __init__(self):
            self.policy = LinearPolicy()

        def get_policy(self, policy_id="default_policy"):
            return self.policy

    worker = Worker()
    with PolicyServerInput(IOContext(worker=worker), HOST, 0, idle_timeout=IDLE) as srv:
        client = PolicyClient(f"{HOST}:{srv.server_port}", inference_mode="remote")
        play(client, seed=1, steps=2)
        deadline = time.monotonic() + 5
        metrics = []
        while not metrics and time.monotonic() < deadline:
            metrics = worker.sampler.get_metrics()
        assert metrics[0].episode_length == 2
        assert worker.policy.calls


def test_construction_errors():
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"Creating a PolicyServer on {HOST}:{port} failed"):
            PolicyServerInput(IOContext(), HOST, port, policy=LinearPolicy())
    with pytest.raises(ValueError, match="needs a policy to serve. Received ioctx.worker=None"):
        PolicyServerInput(IOContext(), HOST, 0)
    with pytest.raises(ValueError, match=r"Serving several policies \['a', 'b'\] needs a policy_mapping_fn"):
        PolicyServerInput(IOContext(), HOST, 0, policy={"a": LinearPolicy(), "b": LinearPolicy()})
    with pytest.raises(ValueError, match="idle_timeout must be a number > 0"):
        PolicyServerInput(IOContext(), HOST, 0, idle_timeout=0, policy=LinearPolicy())
    with pytest.raises(TypeError, match=r"cannot be served: it lacks \['compute_actions', 'get_weights'\]"):
        PolicyServerInput(IOContext(), HOST, 0, policy=object.__new__(type("P", (), {
            "observation_space": None, "action_space": None})))
    with pytest.raises(ValueError, match="^inference_mode must be either 'local' or 'remote'$"):
        PolicyClient("localhost:9900", inference_mode="hybrid")
    with pytest.raises(ValueError, match="address must be 'host:port'"):
        PolicyClient("localhost", inference_mode="remote")
    with pytest.raises(ValueError, match="update_interval must be a number > 0 or None"):
        PolicyClient("localhost:9900", inference_mode="local", update_interval=-1)
    with pytest.raises(ValueError, match="With multiagent_done_dict, reward must be a dict"):
        PolicyClient("localhost:9900", inference_mode="remote").log_returns("e", 1.0, None, {"a": True})


# ---- A hostile server cannot make the client import or build arbitrary classes -------------

def test_untrusted_policy_class_is_refused(server):
    with pytest.raises(ValueError, match="named a policy class outside tfrl.*trusted_policy_classes"):
        PolicyClient(server.address, inference_mode="local")


@pytest.mark.parametrize("path", [
    "os:system", "subprocess:Popen", "builtins:eval", "tfrl._private:X", "tfrl.cli.__main__:main",
    "tfrl.serving.policy_client:PolicyClient", "tfrl.examples.policy.random_policy:np", "not a path", 5,
])
def test_resolve_policy_class_refuses(path):
    with pytest.raises(ValueError, match="policy_class="):
        _resolve_policy_class(path, {})


def test_resolve_policy_class_accepts_builtin_and_trusted():
    from tfrl.examples.policy.random_policy import RandomPolicy

    assert _resolve_policy_class("tfrl.examples.policy.random_policy:RandomPolicy", {}) is RandomPolicy
    assert _resolve_policy_class("x:Y", {"x:Y": LinearPolicy}) is LinearPolicy


def test_resolve_policy_class_accepts_only_policy_subclasses_by_their_base():
    from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy
    from tfrl.examples.policy.random_policy import RandomPolicy

    assert _resolve_policy_class("tfrl.algorithms.pg.pg_tf_policy:PGTFPolicy", {}) is PGTFPolicy
    assert _resolve_policy_class("tfrl.examples.policy.random_policy:RandomPolicy",
                                 {}) is RandomPolicy
    for path in ("tfrl.env.vector_env:VectorEnv", "tfrl.env.vector_env:split_infos",
                 "tfrl.env.vector_env:NoSuchName"):
        with pytest.raises(ValueError, match="named something that is not a tfrl policy class"):
            _resolve_policy_class(path, {})
