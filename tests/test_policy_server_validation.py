"""What the policy server refuses (HTTP 400/401/411/413/503) and its limits, over real
HTTP on 127.0.0.1. The hypothesis fuzz suite is tests/test_policy_server_fuzz.py."""

import http.client
import json
import logging
import socket
import time

import numpy as np
import pytest
from serving_policies import LinearPolicy

from tfrl.serving.policy_client import PolicyClient
from tfrl.serving.policy_server_checks import reference_batch
from tfrl.serving.policy_server_input import PolicyServerInput
from tfrl.serving.wire_format import dumps
from tfrl.offline.io_context import IOContext
from tfrl.policy.sample_batch import SampleBatch

HOST = "127.0.0.1"
IDLE = 0.1


def make_server(**kwargs):
    kwargs.setdefault("idle_timeout", IDLE)
    ioctx = IOContext(config={"rollout_fragment_length": 4})
    server = PolicyServerInput(ioctx, HOST, 0, policy=LinearPolicy(), **kwargs)
    server.address = f"{HOST}:{server.server_port}"
    return server


@pytest.fixture
def server():
    with make_server() as srv:
        yield srv


def post(server, body, headers=None):
    conn = http.client.HTTPConnection(HOST, server.server_port, timeout=5)
    conn.request("POST", "/", body, headers or {})
    response = conn.getresponse()
    status, payload = response.status, json.loads(response.read())
    retry_after = response.getheader("Retry-After")
    conn.close()
    return status, payload.get("error"), retry_after


def good_batch():
    """A batch as a local-inference client uploads it (2 rows, postprocessed)."""
    return reference_batch(LinearPolicy(), multiagent=False)


def with_column(column, value):
    batch = dict(good_batch())
    batch[column] = value
    return SampleBatch(batch)


def report(*batches):
    return dumps({"command": "REPORT_SAMPLES", "samples": list(batches)})


def drain(server, timeout=1.0):
    """Rows of every non-empty batch the server hands out within `timeout`."""
    rows, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows += len(server.next())
    return rows


def test_a_valid_upload_is_queued(server):
    assert post(server, report(good_batch()))[0] == 200
    assert drain(server) == 2


@pytest.mark.parametrize("column,value,message", [
    ("actions", np.array([7, 0]),
     "actions[0] is 7, not an integer in [0, 4) (the space is Discrete(4))"),
    ("actions", np.array([1.0, 0.0]),
     "actions has dtype float64, expected integers (the space is Discrete(4))"),
    ("rewards", np.array([0.0, np.nan], np.float32), "rewards[1] holds a non-finite number (nan)"),
    ("advantages", np.array([np.inf, 0.0], np.float32),
     "advantages[0] holds a non-finite number (inf)"),
    ("obs", np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]], np.float32),
     "obs[0] is [0.0, nan, 0.0], not in [-10.0, 10.0] and finite"),
    ("new_obs", np.full((2, 3), 11.0, np.float32), "new_obs[0] is [11.0, 11.0, 11.0], not in"),
    ("obs", np.zeros((2, 5), np.float32), "obs has rows of shape (5,), expected (3,)"),
    ("vf_preds", np.array(["a", "b"]), "column 'vf_preds' has dtype <U1, expected float32"),
    ("advantages", np.zeros((2, 2), np.float32),
     "column 'advantages' has rows of shape (2,), expected ()"),
    ("terminateds", np.array([0, 1]), "column 'terminateds' has dtype int64, expected bool"),
    ("extra", np.zeros(2), "missing [], unexpected ['extra']"),
])
def test_bad_uploads_get_400_naming_the_field(server, column, value, message):
    status, error, _ = post(server, report(good_batch(), with_column(column, value)))
    assert status == 400
    assert error.startswith("REPORT_SAMPLES: samples[1]") and message in error
    assert drain(server, 0.3) == 0  # nothing of the request was queued, not even samples[0]
    assert post(server, report(good_batch()))[0] == 200  # still serving


def test_upload_without_a_column_the_loss_needs(server):
    batch = dict(good_batch())
    del batch["advantages"]
    status, error, _ = post(server, report(SampleBatch(batch)))
    assert status == 400 and "missing ['advantages'], unexpected []" in error


def test_upload_with_columns_of_different_lengths_is_malformed(server):
    columns = json.loads(report(good_batch()))["samples"][0]["__sample_batch__"]
    columns["rewards"] = json.loads(dumps(np.zeros(3, np.float32)))
    body = json.dumps({"command": "REPORT_SAMPLES",
                       "samples": [{"__sample_batch__": columns}]}).encode()
    status, error, _ = post(server, body)
    assert status == 400 and "invalid sample batch" in error and "rewards" in error


@pytest.mark.parametrize("request_,message", [
    ({"command": "GET_ACTION", "observation": [0.0, float("nan"), 0.0]},
     "GET_ACTION: observation of episode {eid}: observation[1] holds a non-finite number"),
    ({"command": "GET_ACTION", "observation": np.array([0.0, 11.0, 0.0], np.float32)},
     "GET_ACTION: observation of episode {eid}: observation is [0.0, 11.0, 0.0], not in "
     "[-10.0, 10.0] and finite"),
    ({"command": "LOG_RETURNS", "reward": float("nan")},
     "LOG_RETURNS: reward must be a finite number; received nan"),
    ({"command": "LOG_RETURNS", "reward": float("-inf")},
     "LOG_RETURNS: reward must be a finite number; received -inf"),
    ({"command": "LOG_RETURNS", "reward": "1.0"},
     "LOG_RETURNS: reward must be a finite number; received '1.0'"),
    ({"command": "LOG_ACTION", "observation": np.zeros(3, np.float32), "action": 7},
     "action 7 is not in the action space Discrete(4)"),
    ({"command": "LOG_ACTION", "observation": np.zeros(3, np.float32), "action": 1.0},
     "action 1.0 is not in the action space Discrete(4)"),
    # Issue 29: beyond int64 (numpy keeps it as an object; the message used to say "dtype
    # object"), and a reward beyond float32 through the external env's own check.
    ({"command": "LOG_ACTION", "observation": np.zeros(3, np.float32), "action": 2**70},
     "Bad off-policy action: action is 1180591620717411303424, outside the int64 "
     "range [-9223372036854775808, 9223372036854775807] (the space is Discrete(4))"),
    ({"command": "LOG_RETURNS", "reward": 10**39},
     "LOG_RETURNS: reward is 1e+39, outside the float32 range"),
    ({"command": "LOG_ACTION", "observation": np.full(3, np.inf, np.float32), "action": 1},
     "LOG_ACTION: observation: observation[0] holds a non-finite number (inf)"),
    ({"command": "END_EPISODE", "observation": np.full(3, np.nan, np.float32)},
     "END_EPISODE: observation: observation[0] holds a non-finite number (nan)"),
])
def test_bad_values_in_remote_inference_get_400(server, request_, message):
    client = PolicyClient(server.address, inference_mode="remote")
    eid = client.start_episode()
    status, error, _ = post(server, dumps({**request_, "episode_id": eid}))
    assert status == 400 and message.format(eid=eid) in error
    # The episode goes on: a good step after the refused one is recorded.
    action = client.get_action(eid, np.zeros(3, np.float32))
    client.log_returns(eid, 1.0)
    client.end_episode(eid, np.zeros(3, np.float32))
    assert 0 <= action < 4


def test_nan_from_a_client_raises_in_the_client(server):
    client = PolicyClient(server.address, inference_mode="remote")
    eid = client.start_episode()
    with pytest.raises(ValueError, match=r"refused GET_ACTION \(HTTP 400\).*non-finite"):
        client.get_action(eid, np.array([np.nan, 0, 0], np.float32))
    client.get_action(eid, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"refused LOG_RETURNS \(HTTP 400\).*received nan"):
        client.log_returns(eid, float("nan"))


# ---- Limits ------------------------------------------------------------------------------

def test_request_body_limit_is_checked_before_reading():
    with make_server(max_request_bytes=1000) as server:
        with socket.create_connection((HOST, server.server_port), timeout=5) as sock:
            # Only the head is sent: the 413 must come without waiting for the body.
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
            head = sock.makefile("rb").read()  # the server closes after answering
        assert head.startswith(b"HTTP/1.1 413")
        assert b"Request body of 1001 bytes exceeds the limit of 1000 bytes" in head
        client = PolicyClient(server.address, inference_mode="remote")
        assert len(client.start_episode()) == 32


def test_bad_content_length_gets_400():
    with make_server() as server:
        with socket.create_connection((HOST, server.server_port), timeout=5) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
            head = sock.makefile("rb").read()  # the server closes after answering
        assert head.startswith(b"HTTP/1.1 400") and b"Content-Length='-5'" in head


def test_excess_connections_get_503_without_a_thread():
    with make_server(max_open_connections=1) as server:
        holder = socket.create_connection((HOST, server.server_port), timeout=5)
        try:
            time.sleep(0.3)  # the holder's connection is now the only one allowed open
            started = time.monotonic()
            status, error, retry_after = post(server, dumps({"command": "GET_WEIGHTS"}))
            assert time.monotonic() - started < 2
            assert status == 503 and retry_after == "1"
            assert error == ("The policy server has its maximum of 1 connections open; "
                             "retry later.")
            client = PolicyClient(server.address, inference_mode="remote", busy_retries=0)
            with pytest.raises(RuntimeError, match=r"HTTP 503"):
                client.start_episode()
            assert server.stats()["rejected_busy"] == 2
        finally:
            holder.close()
        # A retrying client gets through once the connection is closed.
        client = PolicyClient(server.address, inference_mode="remote")
        assert len(client.start_episode()) == 32


def test_excess_requests_get_503():
    """`max_connections` counts requests being served: a connection holds a slot from its
    headers to its answer (here: while its announced body does not arrive)."""
    with make_server(max_connections=1) as server:
        holder = socket.create_connection((HOST, server.server_port), timeout=5)
        try:
            holder.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
            time.sleep(0.3)  # the holder's request now occupies the only slot
            status, error, retry_after = post(server, dumps({"command": "GET_WEIGHTS"}))
            assert status == 503 and retry_after == "1"
            assert error == "The policy server is serving its maximum of 1 requests; retry later."
            assert server.stats()["rejected_busy"] == 1
        finally:
            holder.close()
        client = PolicyClient(server.address, inference_mode="remote")
        assert len(client.start_episode()) == 32


def test_full_sample_queue_refuses_uploads_with_503():
    with make_server(max_queued_batches=1, idle_timeout=30) as server:
        assert post(server, report(good_batch()))[0] == 200
        status, error, retry_after = post(server, report(good_batch()))
        assert status == 503 and retry_after == "1"
        assert error == ("The policy server's sample queue is full (1 batches); nothing was "
                         "queued, retry later.")
        assert server.stats()["rejected_queue_full"] == 1
        assert len(server.next()) == 2
        # Two batches do not fit in the one free slot: neither is queued.
        assert post(server, report(good_batch(), good_batch()))[0] == 503
        assert server.stats()["queued_batches"] == 0
        assert post(server, report(good_batch()))[0] == 200


def test_remote_batches_push_out_the_oldest_and_are_counted():
    with make_server(max_queued_batches=1, idle_timeout=30) as server:
        client = PolicyClient(server.address, inference_mode="remote")
        for _ in range(3):  # 3 episodes of 2 steps: 3 batches, one queue slot
            eid = client.start_episode()
            for _ in range(2):
                client.get_action(eid, np.zeros(3, np.float32))
                client.log_returns(eid, 1.0)
            client.end_episode(eid, np.zeros(3, np.float32))
        deadline = time.monotonic() + 5
        while server.stats()["dropped_batches"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        stats = server.stats()
        assert stats["dropped_batches"] == 2 and stats["dropped_steps"] == 4
        assert len(server.next()) == 2  # the newest batch
        metrics = server.get_metrics()
        assert len(metrics) == 3
        assert all(m.custom_metrics == {"policy_server_dropped_batches": 2,
                                        "policy_server_dropped_steps": 4} for m in metrics)


def test_auth_token(monkeypatch):
    monkeypatch.delenv("TFRL_POLICY_SERVER_TOKEN", raising=False)
    with make_server(auth_token="s3cret") as server:
        for token in (None, "wrong", "s3cret "):
            client = PolicyClient(server.address, inference_mode="remote", auth_token=token)
            with pytest.raises(ValueError, match=r"refused START_EPISODE \(HTTP 401\): The "
                                                 r"policy server needs a token"):
                client.start_episode()
        assert server.stats()["rejected_unauthorized"] == 3
        client = PolicyClient(server.address, inference_mode="remote", auth_token="s3cret")
        assert len(client.start_episode()) == 32
        # The token is checked before the body size.
        status, error, _ = post(server, b"x" * 10, {"Content-Length": "999999999999"})
        assert status == 401
    monkeypatch.setenv("TFRL_POLICY_SERVER_TOKEN", "from-env")
    with make_server() as server:
        assert post(server, dumps({"command": "GET_WEIGHTS"}))[0] == 401
        client = PolicyClient(server.address, inference_mode="local",
                              trusted_policy_classes=[LinearPolicy])
        try:
            assert client.get_action(client.start_episode(), np.zeros(3, np.float32)) in range(4)
        finally:
            client.close()


@pytest.mark.parametrize("kwargs,message", [
    ({"max_request_bytes": 0}, "max_request_bytes must be an int >= 1. Received: "
                               "max_request_bytes=0."),
    ({"max_connections": 2.5}, "max_connections must be an int >= 1. Received: "
                               "max_connections=2.5."),
    ({"max_queued_batches": True}, "max_queued_batches must be an int >= 1. Received: "
                                   "max_queued_batches=True."),
    ({"auth_token": b"x"}, "auth_token must be a non-empty str or None. Received: "
                           "auth_token=bytes."),
])
def test_bad_limits_raise(kwargs, message):
    with pytest.raises(ValueError, match=None) as info:
        make_server(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("kwargs,message", [
    ({"auth_token": ""}, "auth_token must be a non-empty str or None. Received: auth_token=str."),
    ({"busy_retries": -1}, "busy_retries must be an int >= 0. Received: busy_retries=-1."),
])
def test_bad_client_arguments_raise(kwargs, message):
    with pytest.raises(ValueError) as info:
        PolicyClient(f"{HOST}:1", inference_mode="remote", **kwargs)
    assert str(info.value) == message


def test_port_taken_is_logged_like_rllib(caplog):
    with make_server() as server:
        with caplog.at_level(logging.ERROR, logger="tfrl.serving.policy_server_input"):
            with pytest.raises(OSError, match="Creating a PolicyServer on"):
                PolicyServerInput(IOContext(), HOST, server.server_port, policy=LinearPolicy())
    assert f"Creating a PolicyServer on {HOST}:{server.server_port} failed!" in caplog.messages


def test_local_inference_client_refuses_what_the_server_would(server):
    with PolicyClient(server.address, inference_mode="local", update_interval=None,
                      trusted_policy_classes=[LinearPolicy]) as client:
        eid = client.start_episode()
        with pytest.raises(ValueError, match=r"^get_action: observation\[2\] holds a non-finite "
                                             r"number \(nan\)\.$"):
            client.get_action(eid, np.array([0.0, 0.0, np.nan], np.float32))
        with pytest.raises(ValueError, match=r"^get_action: observation is \[0.0, 20.0, 0.0\], "
                                             r"not in \[-10.0, 10.0\] and finite"):
            client.get_action(eid, np.array([0.0, 20.0, 0.0], np.float32))
        client.get_action(eid, np.zeros(3, np.float32))
        with pytest.raises(ValueError, match=r"^log_returns: reward must be a finite number; "
                                             r"received inf\.$"):
            client.log_returns(eid, float("inf"))
        with pytest.raises(ValueError, match=r"^log_action: observation\[0\] holds"):
            client.log_action(eid, np.array([np.inf, 0, 0], np.float32), 1)
        with pytest.raises(ValueError, match=r"^end_episode: observation\[1\] holds"):
            client.end_episode(eid, np.array([0, np.nan, 0], np.float32))
        client.log_returns(eid, 1.0)
        client.end_episode(eid, np.zeros(3, np.float32))
    assert drain(server) == 1  # the episode's one good step was uploaded and accepted
