"""Property-based (hypothesis) fuzzing of a live PolicyServerInput on 127.0.0.1 that
serves a real PPO policy (CartPole spaces).

Properties:
- no request body, random JSON or a randomly broken sample batch, gets a 500, and
  whatever gets a 200 trains: the queued batches, concatenated with a batch of the
  server's own making, go through `StandardizeFields(["advantages"])` and PPO's
  `learn_on_batch` with finite stats and finite weights;
- after every request (refused or not) a real `PolicyClient` plays an episode whose
  batch trains the policy;
- NaN/inf observations and rewards are refused (400) and never reach the weights;
- stateful (`test_episode_lifecycles_keep_training_and_memory_bounded`): episodes
  started, stepped, ended and abandoned, metrics with arbitrary JSON values, in any
  order: every step, what was queued trains, the metrics window summarises, and the
  episodes and ids the server tracks stay bounded;
- memory: see `test_memory_under_a_maximal_body`.

Bounded: `max_examples` per test and `deadline=None`; ~30-60 s on a quiet machine.
"""

import http.client
import json
import math
import os
import re
import socket
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest
import tree
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant, rule,
                                 run_state_machine_as_test)

from tfrl.serving import policy_protocol as P
from tfrl.serving.policy_client import PolicyClient
from tfrl.serving.policy_server_checks import reference_batch
from tfrl.serving.policy_server_input import PolicyServerInput
from tfrl.env.external_env import ExternalEnv
from tfrl.serving.wire_format import dumps
from tfrl.evaluation.metrics import summarize_episodes
from tfrl.offline.io_context import IOContext
from tfrl.policy.sample_batch import concat_samples

HOST = "127.0.0.1"
OBS_SPACE = gym.make("CartPole-v1").observation_space
ACT_SPACE = gym.spaces.Discrete(2)
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def setup():
    from tfrl.algorithms.ppo import PPOConfig  # noqa: PLC0415 - TF only for this module
    from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: PLC0415
    from tfrl.execution.rollout_ops import StandardizeFields  # noqa: PLC0415

    # A tiny model: the properties are about what reaches the weights, not learning.
    config = PPOConfig().training(sgd_minibatch_size=2, num_sgd_iter=1,
                                  model={"fcnet_hiddens": [8]}).debugging(seed=0)
    policy = PPOTFPolicy(OBS_SPACE, ACT_SPACE, config.to_dict())
    server = PolicyServerInput(IOContext(config={"rollout_fragment_length": 8}), HOST, 0,
                               idle_timeout=0.05, policy=policy, max_request_bytes=2**20)
    good = reference_batch(policy, multiagent=False)
    standardize = StandardizeFields(["advantages"])

    def train(batches):
        batch = standardize(concat_samples([good.copy()] + list(batches)))
        stats = policy.learn_on_batch(batch)["learner_stats"]
        assert all(np.all(np.isfinite(v)) for v in stats.values()), stats
        assert all(np.all(np.isfinite(w)) for w in tree.flatten(policy.get_weights()))

    try:
        yield server, policy, good, train
    finally:
        server.stop()


def post(server, body):
    conn = http.client.HTTPConnection(HOST, server.server_port, timeout=30)
    try:
        conn.request("POST", "/", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def queued(server, wait_for_rows=0, timeout=5.0):
    """Every batch in the queue now (waiting up to `timeout` s for `wait_for_rows`)."""
    batches, deadline = [], time.monotonic() + timeout
    while True:
        batch = server.next()
        if len(batch):
            batches.append(batch)
        elif sum(map(len, batches)) >= wait_for_rows or time.monotonic() > deadline:
            return batches


def client_episode(server, steps=4):
    """A real PolicyClient plays a short CartPole episode; returns its batches."""
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    client = PolicyClient(f"{HOST}:{server.server_port}", inference_mode="remote")
    eid = client.start_episode()
    for _ in range(steps):
        obs, reward, *_ = env.step(client.get_action(eid, obs))
        client.log_returns(eid, reward)
    client.end_episode(eid, obs, truncated=True)
    client.close()
    return queued(server, wait_for_rows=steps)


# ---- Strategies --------------------------------------------------------------------------

_json_leaves = (st.none() | st.booleans() | st.integers(-2**40, 2**40)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6))
json_values = st.recursive(_json_leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                           max_leaves=16)
_ARG_NAMES = ["episode_id", "observation", "action", "reward", "info", "done", "samples",
              "metrics", "training_enabled", "truncated", "__ndarray__", "__sample_batch__"]
random_requests = st.builds(
    lambda command, args: {**args, "command": command},
    st.sampled_from(list(P.COMMANDS) + ["NOPE", 3]),
    st.dictionaries(st.sampled_from(_ARG_NAMES), json_values, max_size=4))

_dtypes = st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.bool_, np.uint8])


@st.composite
def column_values(draw, rows):
    dtype = draw(_dtypes)
    shape = (draw(st.sampled_from([rows, rows, rows + 1, max(rows - 1, 0)])),) + draw(
        hnp.array_shapes(min_dims=0, max_dims=1, max_side=4))
    elements = None
    if np.dtype(dtype).kind == "f":
        elements = st.floats(allow_nan=True, allow_infinity=True, width=32)
    return draw(hnp.arrays(dtype, shape, elements=elements))


@st.composite
def broken_batches(draw, good):
    """The wire JSON of a copy of `good` with one to three random changes."""
    columns = {k: np.asarray(v) for k, v in good.items()}
    rows = len(good)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["drop", "add", "replace", "poison", "actions", "none"]))
        column = draw(st.sampled_from(sorted(columns) or ["obs"]))
        if kind == "drop":
            columns.pop(column, None)
        elif kind == "add":
            columns[draw(st.sampled_from(["extra", "advantages", "seq_lens"]))] = draw(
                column_values(rows))
        elif kind == "replace":
            columns[column] = draw(column_values(rows))
        elif kind == "poison" and column in columns and columns[column].dtype.kind == "f":
            value = columns[column].copy()
            flat = value.reshape(-1)
            if flat.size:
                flat[draw(st.integers(0, flat.size - 1))] = draw(
                    st.sampled_from([np.nan, np.inf, -np.inf, 1e30]))
            columns[column] = value
        elif kind == "actions":
            columns["actions"] = np.asarray(draw(st.lists(
                st.integers(-3, 9) | st.floats(-3, 9), min_size=rows, max_size=rows)))
    encoded = {c: json.loads(dumps(v)) for c, v in columns.items()}
    return {"command": "REPORT_SAMPLES", "samples": [{"__sample_batch__": encoded}]}


_obs_values = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32) | st.integers(),
                       min_size=3, max_size=5)
_reward_values = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10, 10)
                  | st.text(max_size=3) | st.none())


# ---- Properties --------------------------------------------------------------------------

def check_answer(server, train, status, payload, command):
    """A refusal is a 4xx/503 with a message; a 200 of REPORT_SAMPLES must train."""
    assert status in (200, 400, 503, 504), (status, payload)
    event(f"HTTP {status}")  # pytest --hypothesis-show-statistics shows the mix
    if status != 200:
        assert isinstance(payload.get("error"), str) and payload["error"]
    batches = queued(server)
    if status != 200:
        assert batches == [], "a refused request queued data"
    # Whatever was queued, plus a real client's episode, trains the policy.
    train(batches + client_episode(server))


@FUZZ
@given(request=random_requests)
def test_random_json_requests(setup, request):
    server, _, _, train = setup
    body = json.dumps(request, allow_nan=True).encode("utf-8")
    status, payload = post(server, body)
    check_answer(server, train, status, payload, request.get("command"))


@FUZZ
@given(data=st.data())
def test_broken_batches_are_refused_or_train(setup, data):
    server, _, good, train = setup
    request = data.draw(broken_batches(good))
    status, payload = post(server, json.dumps(request).encode("utf-8"))
    if status == 200:  # it must then have been a batch like the server's own
        sent = request["samples"][0]["__sample_batch__"]
        assert sorted(sent) == sorted(good)
    check_answer(server, train, status, payload, P.REPORT_SAMPLES)


# Each example plays a client episode over HTTP and trains: 15 drawn examples plus the
# explicit ones below exercise every kind of value (NaN, inf, float32 overflow, ints,
# strings, None, wrong lengths, good values) at a fraction of FUZZ's 60.
@settings(FUZZ, max_examples=15)
@given(observations=st.lists(_obs_values, min_size=1, max_size=4),
       rewards=st.lists(_reward_values, min_size=1, max_size=4))
@example(observations=[[0.01, 0.0, 0.02, 0.0], [float("nan"), 0.0, 0.0, 0.0]],
         rewards=[1.0, float("nan")])
@example(observations=[[0.0, float("inf"), 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
         rewards=[float("-inf"), 1e39])
@example(observations=[[0.0, 0.0, 0.0], [2**40, 0, 0, 0], [0, 1, 0, -1]],
         rewards=["a", None, -2**40])
@example(observations=[[0.0, 0.0, 0.0, 0.0, 0.0], [9.0, 0.0, 0.0, 0.0]],
         rewards=[3, float("inf")])
def test_non_finite_values_never_reach_the_weights(setup, observations, rewards):
    server, _, _, train = setup
    client = PolicyClient(f"{HOST}:{server.server_port}", inference_mode="remote")
    eid = client.start_episode()
    actions = 0
    for obs, reward in zip(observations, rewards):
        try:
            client.get_action(eid, np.asarray(obs, np.float32) if len(obs) == 4 else obs)
            accepted = True
            actions += 1
        except ValueError as e:
            accepted = False
            assert "HTTP 400" in str(e)
        fine = len(obs) == 4 and all(math.isfinite(x) for x in obs) and OBS_SPACE.contains(
            np.asarray(obs, np.float32))
        assert accepted == fine, (obs, accepted)
        try:
            client.log_returns(eid, reward)
            accepted = True
        except ValueError as e:
            accepted = False
            assert "HTTP 400" in str(e)
        # Stored as float32: a finite Python float beyond its range (1e39) is refused too.
        fine = isinstance(reward, (int, float)) and math.isfinite(reward) \
            and abs(reward) <= float(np.finfo(np.float32).max)
        assert accepted == fine, (reward, accepted)
    client.end_episode(eid, np.zeros(4, np.float32))
    client.close()
    batches = queued(server, wait_for_rows=actions)
    assert sum(map(len, batches)) == actions  # one row per accepted observation
    train(batches + client_episode(server))


# ---- Stateful: episode lifecycles and metrics ------------------------------------------

# Seconds without a call after which the stateful test's server drops an episode.
_IDLE_S = 0.3
_MAX_CONCURRENT = 100  # make_serving_env's default
_metric_values = json_values | st.floats(allow_nan=True, allow_infinity=True) | st.just(1e39)
_metrics_dicts = st.fixed_dictionaries(
    {"episode_length": st.integers(-2, 10) | st.just(10**40) | json_values,
     "episode_reward": _reward_values | _metric_values},
    optional={"custom_metrics": st.dictionaries(st.text(max_size=4), _metric_values,
                                                max_size=3) | json_values,
              "hist_data": st.dictionaries(st.text(max_size=4),
                                           st.lists(_metric_values, max_size=3), max_size=2),
              "perf_stats": st.dictionaries(st.text(max_size=4), _metric_values, max_size=2),
              "agent_rewards": json_values,
              "media": json_values,
              "episode_faulty": json_values})


def test_episode_lifecycles_keep_training_and_memory_bounded(setup):
    _, policy, _, train = setup
    server = PolicyServerInput(IOContext(config={"rollout_fragment_length": 8}), HOST, 0,
                               idle_timeout=0.05, policy=policy, max_request_bytes=2**20,
                               episode_idle_timeout=_IDLE_S)

    class EpisodeLifecycles(RuleBasedStateMachine):
        """Episodes started, stepped, ended, abandoned; metrics uploaded; all in HTTP."""

        episodes = Bundle("episodes")

        def __init__(self):
            super().__init__()
            self.window = []  # the metrics smoothing window an algorithm keeps (100)

        def send(self, request):
            status, payload = post(server, json.dumps(request, allow_nan=True).encode())
            assert status in (200, 400), (status, payload)
            event(f"{request['command']}: HTTP {status}")
            return status, payload

        @rule(target=episodes, episode_id=st.none() | st.text(max_size=3)
              | st.just("x" * 300))
        def start(self, episode_id):
            status, payload = self.send({"command": P.START_EPISODE, "episode_id": episode_id})
            if status == 400:
                assert ("already" in payload["error"] or "expired" in payload["error"]
                        or "Too many concurrent" in payload["error"]
                        or "at most 256" in payload["error"]), payload
                return "unknown-episode"
            return payload["episode_id"]

        @rule(n=st.integers(1, 60))
        def start_and_abandon_many(self, n):
            for _ in range(n):
                self.send({"command": P.START_EPISODE, "episode_id": None})

        @rule(episode_id=episodes, steps=st.integers(1, 3),
              reward=_reward_values | st.just(1e39) | st.just(-1e300))
        def step(self, episode_id, steps, reward):
            for t in range(steps):
                obs = np.full(4, 0.01 * t, np.float32)
                self.send({"command": P.GET_ACTION, "episode_id": episode_id,
                           "observation": obs.tolist()})
                self.send({"command": P.LOG_RETURNS, "episode_id": episode_id,
                           "reward": reward})

        @rule(episode_id=consumes(episodes), truncated=st.booleans())
        def end(self, episode_id, truncated):
            self.send({"command": P.END_EPISODE, "episode_id": episode_id,
                       "observation": [0.0, 0.0, 0.0, 0.0], "truncated": truncated})

        @rule(episode_id=consumes(episodes))
        def abandon(self, episode_id):
            """The simulator forgets the episode; only expiry frees its slot."""

        @rule(metrics=st.lists(_metrics_dicts, max_size=3))
        def report_metrics(self, metrics):
            self.send({"command": P.REPORT_SAMPLES, "samples": [], "metrics": metrics})

        @rule()
        def wait_for_expiry(self):
            time.sleep(2 * _IDLE_S)  # the runner checks every _IDLE_S / 10
            status, payload = self.send({"command": P.START_EPISODE, "episode_id": None})
            assert status == 200, payload  # abandoned episodes no longer hold slots

        @rule()
        def train_step(self):
            """What `Algorithm.train()` does with the server: learn on what was queued
            (plus one batch of the server's own making) and summarise the metrics window."""
            train(queued(server))
            self.window = (self.window + server.get_metrics())[-100:]
            result = summarize_episodes(self.window)
            assert result["num_dropped_metric_values"] == 0, result  # the door held

        @invariant()
        def memory_is_bounded(self):
            stats = server.stats()
            assert stats["episodes"] <= _MAX_CONCURRENT + 1, stats
            assert stats["finished_episode_ids"] <= ExternalEnv.finished_ids_window, stats
            assert stats["queued_batches"] <= server.samples_queue.maxsize
            assert stats["open_connections"] <= 16, stats

    try:
        run_state_machine_as_test(EpisodeLifecycles, settings=settings(
            max_examples=6, stateful_step_count=12, deadline=None, derandomize=True,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                   HealthCheck.data_too_large]))
    finally:
        server.stop()


# ---- Memory ----------------------------------------------------------------------------

_MEMORY_SERVER = textwrap.dedent("""
    import sys, time
    import gymnasium as gym
    from tfrl.serving.policy_server_input import PolicyServerInput
    from tfrl.examples.policy.random_policy import RandomPolicy
    from tfrl.offline.io_context import IOContext
    policy = RandomPolicy(gym.spaces.Box(0, 255, (84, 84, 4), "uint8"), gym.spaces.Discrete(4))
    server = PolicyServerInput(IOContext(), "127.0.0.1", 0, idle_timeout=60, policy=policy,
                               max_request_bytes=int(sys.argv[1]))
    print(server.server_port, flush=True)
    time.sleep(300)
""")
LIMIT = 16 * 2**20
# Peak RSS growth allowed while one maximal body is read, decoded and checked, as a
# multiple of the body size: the body (1x), its decoded text and the base64 strings
# of json.loads (~2x), the decoded arrays (0.75x), plus the checks' temporaries.
MAX_GROWTH = 6
# The same for the worst JSON the server decodes (a list of short floats: measured
# 12.4x; containers, which would cost ~25x, are refused before decoding).
MAX_JSON_GROWTH = 14


def _reset_hwm(pid):
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def _vm_kb(pid, field):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/status")
def test_memory_under_a_maximal_body():
    """Peak RSS (VmHWM) growth of a server process (16 MiB limit) per request body:

    - a REPORT_SAMPLES of Atari-size frames just under the limit: < MAX_GROWTH (6) x
      the body size (measured 3.7x: 34 MiB for 9.2 MiB);
    - the worst JSON it decodes (a 16 MiB list of short floats): < MAX_JSON_GROWTH
      (14) x (measured 12.4x); a body of tiny containers is refused before decoding;
    - a body one byte over the limit: refused (413) without being read.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.getcwd()] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen([sys.executable, "-c", _MEMORY_SERVER, str(LIMIT)], env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        obs_space = gym.spaces.Box(0, 255, (84, 84, 4), "uint8")
        from tfrl.examples.policy.random_policy import RandomPolicy  # noqa: PLC0415

        policy = RandomPolicy(obs_space, gym.spaces.Discrete(4))
        row = reference_batch(policy, multiagent=False)
        warm = dumps({"command": P.REPORT_SAMPLES, "samples": [row]})

        class Srv:
            server_port = port
        assert post(Srv, warm)[0] == 200  # imports and first-request costs are paid now
        time.sleep(0.2)
        base_rss = _vm_kb(proc.pid, "VmRSS")
        base_hwm = _vm_kb(proc.pid, "VmHWM")
        n = 2
        while len(dumps({"command": P.REPORT_SAMPLES,
                         "samples": [concat_samples([row] * (n * 2))]})) < LIMIT:
            n *= 2
        big = concat_samples([row] * n)
        body = dumps({"command": P.REPORT_SAMPLES, "samples": [big]})
        assert LIMIT // 2 < len(body) <= LIMIT
        status, payload = post(Srv, body)
        assert status == 200, payload
        growth_kb = _vm_kb(proc.pid, "VmHWM") - max(base_rss, 0)
        assert growth_kb * 1024 < MAX_GROWTH * len(body), (
            f"peak RSS grew by {growth_kb / 1024:.0f} MiB for a {len(body) / 2**20:.1f} MiB "
            f"body (base HWM {base_hwm / 1024:.0f} MiB)")
        # JSON of tiny containers ("[]," is 3 bytes, a Python list ~64) would cost ~25x
        # its text: refused before decoding.
        _reset_hwm(proc.pid)
        nested = b'{"command":"GET_WEIGHTS","x":[' + b"[]," * (LIMIT // 12) + b"[]]}"
        status, payload = post(Srv, nested)
        assert status == 400 and "JSON arrays/objects in" in payload["error"]
        # The worst JSON that is decoded: short floats ("1e1," is 4 bytes, a Python
        # float and its list slot 32); the request is then refused.
        _reset_hwm(proc.pid)
        base_rss = _vm_kb(proc.pid, "VmRSS")
        floats = b'{"command":"GET_WEIGHTS","x":[' + b"1e1," * (LIMIT // 4 - 16) + b"1]}"
        assert len(floats) <= LIMIT
        status, payload = post(Srv, floats)
        assert status == 400 and "unexpected keys ['x']" in payload["error"]
        growth_kb = _vm_kb(proc.pid, "VmHWM") - base_rss
        assert growth_kb * 1024 < MAX_JSON_GROWTH * len(floats)
        with socket.create_connection((HOST, port), timeout=10) as sock:
            sock.sendall(f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {LIMIT + 1}\r\n"
                         "\r\n".encode("ascii"))  # the head only: 413 must not wait for a body
            assert sock.makefile("rb").read().startswith(b"HTTP/1.1 413")
    finally:
        proc.kill()
        proc.wait(10)
