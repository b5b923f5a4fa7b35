"""PolicyServerInput: an HTTP policy server that is also a rollout worker's InputReader.

External simulators talk to it with `tfrl.serving.policy_client.PolicyClient`:

- remote inference: every `start_episode/get_action/log_returns/...` call is a
  request; the server computes actions with its policy (an embedded ExternalEnv
  driven by an `ExternalEnvRunner`) and records the episodes itself;
- local inference: the client fetches the policy class, spaces, config and weights,
  computes actions itself, and uploads finished batches and episode metrics.

Either way, finished experiences come out of `next()` as SampleBatches (or
MultiAgentBatches). A heartbeat puts an empty SampleBatch into the queue every
`idle_timeout` seconds when it is empty, so `next()` never blocks forever.

Request bodies are never unpickled: see `tfrl.serving.wire_format` and
`tfrl.serving.policy_protocol`. Bad requests get HTTP 400 with `{"error": message}` and
the server keeps serving; data the sampler would refuse from an env (NaN rewards or
observations, actions outside the action space, batches the policy cannot train on)
are bad requests too (`tfrl.serving.policy_server_checks`).

Limits (each a keyword argument):

- `max_request_bytes` (default 32 MiB): larger bodies get 413 before they are read
  (from `Content-Length`; a missing one gets 411, an invalid one 400). A body is
  JSON with base64 arrays (4/3 of the raw bytes): one 84x84x4 uint8 Atari row with
  `obs` and `new_obs` takes ~75 KB, so a 200-row fragment (the default
  `rollout_fragment_length`) of Atari frames is ~15 MB and fits with room to spare;
  CartPole-size rows take ~0.2 KB (~150k rows). Raise it for bigger uploads, or
  lower `rollout_fragment_length` of local-inference clients.
- `max_connections` (default 64): requests served at once. A connection takes a slot
  once its request line and headers are in (and gives it back after the answer), so
  idle keep-alive connections and slow senders of headers hold none; a request over
  the limit waits up to 0.5 s for a slot, then gets 503 + `Retry-After`. The bytes of
  bodies being read or decoded at once are capped at `2 * max_request_bytes`, counted
  as they arrive (a body that is announced but trickles holds only what it sent; more
  get 503 + `Retry-After` too), which bounds the memory requests take: a decoded batch
  body peaks at ~4x its size, the worst JSON that is decoded (lists of short floats)
  at ~13x, so ~0.8 GB at most with the defaults (tests/test_policy_server_fuzz.py
  measures it). Bodies with more JSON arrays/objects than one per 32 bytes (+1000)
  are refused before decoding (they would cost ~25x).
- `max_open_connections` (default 512) and `max_connections_per_client` (default
  128, per client IP address): open connections. Until its first request line and
  headers are in, a connection is read by one selector thread shared by all such
  connections (a slow sender of headers costs no thread and wakes none per byte);
  then it gets a thread of its own (blocked in a read when idle). More get 503 +
  `Retry-After` at once, without a thread. New connections wait to be accepted in a
  listen backlog of `max_open_connections` (at most the OS's `SOMAXCONN`).
- `header_timeout` (default 10 s): the request line and headers must arrive within
  this time (from the connection's start, or on a keep-alive connection from the
  request's first byte; a keep-alive connection may idle 60 s between requests);
  `min_body_rate` (default 64 KiB/s): after a grace of 10 s, a body must keep
  arriving at this rate on average. Slow senders are closed (408 for bodies) and
  counted in `stats()`. The token is checked as soon as the headers are in, before
  any of the body is read. A request line and headers may take 256 KiB (431 beyond).
- `episode_idle_timeout` (default 600 s): remote-inference episodes without any call
  for this long are dropped and counted (they no longer hold one of the 100
  concurrent-episode slots); ids of finished episodes are remembered in a window of
  10,000 (`ExternalEnv.finished_ids_window`), and episode ids have at most 256
  characters.
- `max_queued_batches` (default 64): batches waiting for `next()`. When full, a
  `REPORT_SAMPLES` gets 503 + `Retry-After` (nothing of it is queued; `PolicyClient`
  retries), and a batch from remote inference pushes out the oldest queued one; the
  drops are counted in `stats()` and logged.
- `auth_token` (default: the `TFRL_POLICY_SERVER_TOKEN` env var, else none): when
  set, every request must carry `Authorization: Bearer <token>` (compared in
  constant time); a wrong or missing one gets 401.

Example (with a policy object instead of a rollout worker):
    >>> import gymnasium as gym
    >>> from tfrl.examples.policy.random_policy import RandomPolicy
    >>> from tfrl.offline.io_context import IOContext
    >>> policy = RandomPolicy(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(2))
    >>> with PolicyServerInput(IOContext(), "127.0.0.1", 0, policy=policy) as server:
    ...     port = server.server_port  # port 0: the OS picked a free one
"""

import collections
import hmac
import io
import logging
import os
import queue
import re
import selectors
import socket
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

from tfrl.serving import policy_protocol as P
from tfrl.serving.external_env_runner import ExternalEnvRunner, fragment_length, make_serving_env
from tfrl.serving.policy_server_checks import InvalidData
from tfrl.serving.policy_server_commands import PolicyServerCommands, to_rollout_metrics
from tfrl.serving.wire_format import dumps, loads
from tfrl.offline.input_reader import InputReader
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, SampleBatch

logger = logging.getLogger(__name__)
# What PolicyServerInput needs of a policy (see tfrl.serving.external_env_runner).
_POLICY_ATTRIBUTES = ("observation_space", "action_space", "compute_actions", "get_weights")
# How often the inference loop wakes up when idle (to notice stop/drain requests).
_POLL_TIMEOUT_S = 0.2
# Env var read when `auth_token` is not given (server and client alike).
TOKEN_ENV_VAR = "TFRL_POLICY_SERVER_TOKEN"
# Seconds a client is told to wait (Retry-After) when the server is busy.
_RETRY_AFTER_S = 1
# Seconds spent reading a request that is refused (too many connections).
_REFUSE_READ_S = 0.25
# Seconds a request whose headers are in waits for one of the `max_connections` slots.
_SLOT_WAIT_S = 0.5
# Refused connections waiting for their 503 answer; more are closed without one.
_MAX_PENDING_REFUSALS = 64
# JSON arrays/objects allowed in a body: one per this many bytes, plus a few.
_BYTES_PER_CONTAINER = 32
_FREE_CONTAINERS = 1000
# In-flight body bytes allowed, as a multiple of max_request_bytes.
_INFLIGHT_BODIES = 2
# Seconds a body may take before `min_body_rate` applies.
_BODY_GRACE_S = 10.0
# Bytes of a body read (and reserved from the in-flight budget) at a time.
_BODY_CHUNK = 2**20
# Bytes read while a request line and headers arrive (the read-ahead may hold some body).
_MAX_HEAD_BYTES = 2**18


class PolicyServerInput(ThreadingHTTPServer, InputReader):
    """REST policy server that acts as an offline data source (an InputReader).

    Use it as a rollout worker's input: `{"num_workers": 0, "input": lambda ioctx:
    PolicyServerInput(ioctx, address, port)}`.

    Args:
        ioctx: The worker's IOContext; `ioctx.worker.get_policy()` (or its policy map
            and `policy_mapping_fn` for several policies) is served, and
            `ioctx.config` gives `rollout_fragment_length` (default 200) and
            `batch_mode` (`"complete_episodes"` emits whole episodes only).
        address: Address to bind (e.g. "localhost").
        port: Port to bind; 0 lets the OS pick one (read it from `server_port`).
        idle_timeout: Seconds between heartbeats (empty SampleBatches) when idle.
        policy: tfrl extension: the policy (or dict policy id -> policy) to serve
            when `ioctx` has no worker.
        policy_mapping_fn: tfrl extension: `fn(agent_id, episode_id, worker=...) ->
            policy id` for multi-agent serving.
        multiagent: tfrl extension: whether clients send multi-agent dicts; default:
            the worker's `multiagent` flag, or True with several policies or a
            `policy_mapping_fn`.
        max_request_bytes: tfrl extension: largest request body (see the module doc).
        max_connections: tfrl extension: requests served at once.
        max_queued_batches: tfrl extension: batches queued for `next()`.
        max_open_connections: tfrl extension: open connections (each a thread).
        max_connections_per_client: tfrl extension: open connections per client IP.
        header_timeout: tfrl extension: seconds for a request's line and headers.
        min_body_rate: tfrl extension: bytes/s a body must average after 10 s.
        episode_idle_timeout: tfrl extension: seconds after which an episode without
            calls is dropped; None keeps episodes until they end.
        auth_token: tfrl extension: shared secret every request must carry; None
            reads the `TFRL_POLICY_SERVER_TOKEN` env var ("" or unset: no token).

    Raises:
        OSError: If the address/port cannot be bound (the message names both; the
            failure is logged as RLlib does: "Creating a PolicyServer on
            <host>:<port> failed!").
        ValueError: If there is no policy to serve, or several without a mapping fn,
            or a limit is not an int >= 1 (a timeout or rate not a number > 0).
    """

    daemon_threads = True
    block_on_close = False
    # Seconds a GET_ACTION request waits for the policy.
    action_timeout = 60.0

    def __init__(self, ioctx: Any, address: str, port: int, idle_timeout: float = 3.0, *,
                 policy: Any = None, policy_mapping_fn: Optional[Callable] = None,
                 multiagent: Optional[bool] = None, max_request_bytes: int = 32 * 2**20,
                 max_connections: int = 64, max_queued_batches: int = 64,
                 auth_token: Optional[str] = None, max_open_connections: int = 512,
                 max_connections_per_client: int = 128, header_timeout: float = 10.0,
                 min_body_rate: float = 65536.0,
                 episode_idle_timeout: Optional[float] = 600.0):
        if not isinstance(idle_timeout, (int, float)) or idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be a number > 0 (seconds). Received: "
                             f"idle_timeout={idle_timeout!r}.")
        for name, value in (("max_request_bytes", max_request_bytes),
                            ("max_connections", max_connections),
                            ("max_queued_batches", max_queued_batches),
                            ("max_open_connections", max_open_connections),
                            ("max_connections_per_client", max_connections_per_client)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1. Received: {name}={value!r}.")
        for name, value in (("header_timeout", header_timeout), ("min_body_rate", min_body_rate),
                            ("episode_idle_timeout", episode_idle_timeout)):
            if value is None and name == "episode_idle_timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not value > 0 or value == float("inf"):
                raise ValueError(f"{name} must be a finite number > 0. Received: "
                                 f"{name}={value!r}.")
        if auth_token is None:
            auth_token = os.environ.get(TOKEN_ENV_VAR) or None
        if auth_token is not None and (not isinstance(auth_token, str) or not auth_token):
            raise ValueError("auth_token must be a non-empty str or None. Received: "
                             f"auth_token={type(auth_token).__name__}.")
        self.max_request_bytes = max_request_bytes
        self.max_connections = max_connections
        self.max_open_connections = max_open_connections
        self.max_connections_per_client = max_connections_per_client
        # The listen backlog: a burst of new connections waits there to be accepted. With
        # socketserver's 5, the kernel drops the connection attempts beyond it, and their
        # clients retry only after 1 s, 3 s, ... (every new client stalls while slow
        # senders reconnect in bulk).
        self.request_queue_size = min(max_open_connections, socket.SOMAXCONN)
        self.header_timeout = float(header_timeout)
        self.min_body_rate = float(min_body_rate)
        self._open_per_client: Dict[str, int] = collections.Counter()
        self._auth = None if auth_token is None else f"Bearer {auth_token}".encode("utf-8")
        self._connection_slots = threading.BoundedSemaphore(max_connections)
        self._inflight_bytes = 0
        self._dropped_batches = 0
        self._dropped_steps = 0
        self._rejected = {"busy": 0, "queue_full": 0, "unauthorized": 0, "invalid": 0,
                          "client_connections": 0, "slow_header": 0, "slow_body": 0}
        self.rollout_worker = getattr(ioctx, "worker", None)
        self.samples_queue: queue.Queue = queue.Queue(max_queued_batches)
        self.metrics_queue: queue.Queue = queue.Queue()
        self.idle_timeout = idle_timeout
        policies, policy_mapping_fn, multiagent = _resolve_policies(
            self.rollout_worker, policy, policy_mapping_fn, multiagent)
        config = dict(getattr(ioctx, "config", None) or {})
        self._lock = threading.Lock()
        self._put_lock = threading.Lock()  # held by every producer of samples_queue
        self._requests_done = threading.Condition(self._lock)
        self._busy_requests = 0
        self._connections: set = set()
        self._prefetched: Dict[Any, bytes] = {}  # head bytes read by the head reader
        self._open_connections = 0
        self._handler_threads: set = set()
        self._stop_event = threading.Event()
        # Connections over the limits, waiting for their 503 (excess ones are just closed).
        self._refusals: queue.Queue = queue.Queue(_MAX_PENDING_REFUSALS)
        try:
            ThreadingHTTPServer.__init__(self, (address, port), _PolicyRequestHandler)
        except OSError as e:
            logger.error("Creating a PolicyServer on %s:%s failed!", address, port)
            raise OSError(e.errno, f"Creating a PolicyServer on {address}:{port} failed: "
                                   f"{e.strerror or e}. Use another address/port (port=0 picks a "
                                   "free one) or stop the process using it.") from e
        _forward_metrics(self.rollout_worker, self)
        policy_lock = threading.Lock()
        single = None if multiagent else next(iter(policies.values()))
        env = make_serving_env(multiagent, getattr(single, "action_space", None),
                               getattr(single, "observation_space", None))
        self._commands = PolicyServerCommands(
            env, policies, multiagent, config, self.samples_queue, self.metrics_queue,
            policy_lock, action_timeout=self.action_timeout, put_samples=self._put_report)
        self._runner = ExternalEnvRunner(
            env.to_base_env(poll_timeout=_POLL_TIMEOUT_S), policies, self._put_results,
            policy_mapping_fn=policy_mapping_fn, multiagent=multiagent,
            rollout_fragment_length=fragment_length(config),
            policy_lock=policy_lock, worker=self.rollout_worker,
            episode_idle_timeout=episode_idle_timeout)
        self._runner.start()
        self._heads = _HeadReader(self)
        self._service_threads = [
            threading.Thread(target=self._heads.run, name="PolicyServerHeads", daemon=True),
            threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1},
                             name="PolicyServer", daemon=True),
            threading.Thread(target=self._heartbeat, name="PolicyServerHeartbeat", daemon=True),
            threading.Thread(target=self._refuse_loop, name="PolicyServerRefusals", daemon=True),
        ]
        for thread in self._service_threads:
            thread.start()
        logger.info("Started a policy server at %s:%d", *self.server_address[:2])

    def next(self) -> Any:
        """Returns the next batch of experiences (blocks at most ~`idle_timeout` s; an
        empty SampleBatch when nothing arrived).

        Raises:
            RuntimeError: If the server was stopped and every batch was read.
        """
        while True:
            try:
                return self.samples_queue.get(timeout=self.idle_timeout)
            except queue.Empty:
                if self._stop_event.is_set():
                    raise RuntimeError("The policy server was stopped: no more experiences "
                                       "will arrive from its clients.") from None
                return SampleBatch()

    def get_metrics(self) -> list:
        """Returns (and removes) the `RolloutMetrics` of the client episodes finished since
        the last call (the rollout worker's `get_metrics()` returns them too).

        Once batches were dropped from the full sample queue, each episode's
        `custom_metrics` carries the running totals `policy_server_dropped_batches` and
        `policy_server_dropped_steps` (so they show in the training results)."""
        completed = []
        while True:
            try:
                completed.append(self.metrics_queue.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            dropped = {"policy_server_dropped_batches": self._dropped_batches,
                       "policy_server_dropped_steps": self._dropped_steps}
        if dropped["policy_server_dropped_batches"]:
            for m in completed:
                m.custom_metrics.update(dropped)
        return completed

    def stats(self) -> Dict[str, int]:
        """Counters of the server's limits: batches queued now, batches and steps
        dropped from the full queue, requests or connections refused per reason
        (`busy`: too many requests, connections or bytes in flight;
        `client_connections`: too many connections of one client; `queue_full`;
        `unauthorized`; `invalid`: 4xx; `slow_header`, `slow_body`: closed for
        sending too slowly), connections open now, episodes tracked now (running or
        not yet processed), remembered ids of finished episodes, and idle episodes
        expired so far."""
        counts = self._commands.env.episode_counts()
        with self._lock:
            return {"queued_batches": self.samples_queue.qsize(),
                    "dropped_batches": self._dropped_batches,
                    "dropped_steps": self._dropped_steps,
                    **{f"rejected_{k}": v for k, v in self._rejected.items()},
                    "open_connections": self._open_connections,
                    "episodes": counts["episodes"],
                    "finished_episode_ids": counts["finished_ids"],
                    "expired_episodes": self._runner.expired_episodes}

    def stop(self, timeout: float = 5.0) -> None:
        """Stops serving: waiting requests fail (503), sockets close, threads are joined."""
        if self._stop_event.is_set():
            return
        self._stop_event.set()
        self._runner.stop(timeout)
        self.shutdown()
        self._heads.wake()
        deadline = time.monotonic() + timeout
        with self._requests_done:
            # Requests in flight finish quickly now (503); let them send their response.
            while self._busy_requests and time.monotonic() < deadline:
                self._requests_done.wait(deadline - time.monotonic())
            connections = list(self._connections)
            threads = list(self._handler_threads)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.server_close()
        for thread in threads + self._service_threads:
            thread.join(timeout)

    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called (the port is released once it returns)."""
        return self._stop_event.is_set()

    @property
    def threads(self) -> List[threading.Thread]:
        """The threads this server started (head reader, serving, heartbeat, refusals,
        inference loop, serving env; handler threads come and go); `stop()` ends them all."""
        return [*self._service_threads, self._runner.thread, self._commands.env]

    def __enter__(self) -> "PolicyServerInput":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ---- Internals ---------------------------------------------------------------------

    def server_bind(self) -> None:
        # Like HTTPServer.server_bind, without its (possibly slow) reverse DNS lookup.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = host, port

    def process_request(self, request, client_address) -> None:
        # Runs in the serving thread: refuse excess connections without a thread.
        client = str(client_address[0]) if client_address else ""
        with self._lock:
            if self._open_connections >= self.max_open_connections:
                refusal = ("busy", f"The policy server has its maximum of "
                                   f"{self.max_open_connections} connections open; retry later.")
            elif self._open_per_client[client] >= self.max_connections_per_client:
                refusal = ("client_connections",
                           f"The policy server has {self.max_connections_per_client} "
                           f"connections of {client} open, its maximum per client "
                           "(max_connections_per_client); close some or retry later.")
            else:
                refusal = None
                self._open_connections += 1
                self._open_per_client[client] += 1
            if refusal:
                self._rejected[refusal[0]] += 1
        if refusal:
            try:  # answered by one thread, so that a flood cannot stall accepting
                self._refusals.put_nowait((request, refusal[1]))
            except queue.Full:
                self.shutdown_request(request)
            return
        # Until its request line and headers are in, a connection costs no thread: one
        # selector thread reads the heads of all of them (slow senders included).
        self._heads.add(request, client_address)

    def _dispatch(self, request, client_address, head: bytes) -> None:
        """Hands a connection whose head was read (`head`: the bytes read so far) to a
        handler thread (called by the head reader)."""
        with self._lock:
            self._prefetched[request] = head
        try:
            super().process_request(request, client_address)
        except BaseException:
            with self._lock:
                self._prefetched.pop(request, None)
            self.shutdown_request(request)
            self._connection_closed(str(client_address[0]) if client_address else "")
            raise

    def process_request_thread(self, request, client_address) -> None:
        with self._lock:
            self._connections.add(request)
            self._handler_threads.add(threading.current_thread())
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._connections.discard(request)
                self._handler_threads.discard(threading.current_thread())
            self._connection_closed(str(client_address[0]) if client_address else "")

    def _connection_closed(self, client: str) -> None:
        with self._lock:
            self._open_connections -= 1
            self._open_per_client[client] -= 1
            if not self._open_per_client[client]:
                del self._open_per_client[client]

    def _count(self, reason: str) -> None:
        with self._lock:
            self._rejected[reason] += 1

    def _reserve_body(self, n: int) -> bool:
        """Reserves `n` more bytes of the in-flight body budget; False if it is used up
        (the first reservation always succeeds: one body may always be read)."""
        with self._lock:
            if self._inflight_bytes and \
                    self._inflight_bytes + n > _INFLIGHT_BODIES * self.max_request_bytes:
                return False
            self._inflight_bytes += n
            return True

    def _release_body(self, n: int) -> None:
        with self._lock:
            self._inflight_bytes -= n

    def _authorized(self, header: Optional[str]) -> bool:
        if self._auth is None:
            return True
        received = (header or "").encode("utf-8", "surrogateescape")
        return hmac.compare_digest(received, self._auth)

    def _put_report(self, batches: list) -> None:
        """Queues the batches of one upload, all or none; raises queue.Full (HTTP 503)
        if they do not fit."""
        with self._put_lock:  # only consumers run concurrently, and they free space
            if self.samples_queue.maxsize - self.samples_queue.qsize() < len(batches):
                self._count("queue_full")
                raise queue.Full
            for batch in batches:
                self.samples_queue.put_nowait(batch)

    def handle_error(self, request, client_address) -> None:
        logger.debug("Connection from %s ended with an error.", client_address, exc_info=True)

    def _put_results(self, batch: Any, metrics: list) -> None:
        if batch is not None and batch.count > 0:
            self._put_dropping_oldest(batch)
        for m in metrics:
            self.metrics_queue.put(to_rollout_metrics(m))

    def _put_dropping_oldest(self, batch: Any) -> None:
        """Queues a batch of remote inference; when full, drops (and counts) the oldest."""
        with self._put_lock:
            self._put_dropping_oldest_locked(batch)

    def _put_dropping_oldest_locked(self, batch: Any) -> None:
        while True:
            try:
                self.samples_queue.put_nowait(batch)
                return
            except queue.Full:
                try:
                    old = self.samples_queue.get_nowait()
                except queue.Empty:
                    continue
                with self._lock:
                    self._dropped_batches += 1
                    self._dropped_steps += old.count
                    total = self._dropped_batches
                logger.warning("The policy server's sample queue is full (%d batches): dropped "
                               "the oldest batch (%d steps; %d batches dropped so far). Train "
                               "faster or raise max_queued_batches.",
                               self.samples_queue.maxsize, old.count, total)

    def _refuse_loop(self) -> None:
        while not self._stop_event.is_set():
            try:
                sock, message = self._refusals.get(timeout=_POLL_TIMEOUT_S)
            except queue.Empty:
                continue
            _refuse_busy(sock, message)
            self.shutdown_request(sock)
        while True:
            try:
                self.shutdown_request(self._refusals.get_nowait()[0])
            except queue.Empty:
                return

    def _heartbeat(self) -> None:
        while not self._stop_event.wait(self.idle_timeout):
            with self._put_lock:
                if self.samples_queue.empty():
                    self.samples_queue.put_nowait(SampleBatch())

    def _begin_request(self) -> None:
        with self._lock:
            self._busy_requests += 1

    def _end_request(self) -> None:
        with self._lock:
            self._busy_requests -= 1
            self._requests_done.notify_all()

    def _handle(self, request: Any) -> Dict[str, Any]:
        runner_error = self._runner.error
        if runner_error is not None and isinstance(request, dict) \
                and request.get("command") in P.REMOTE_INFERENCE_COMMANDS:
            raise RuntimeError(f"The policy server's inference loop failed: {runner_error!r}")
        return self._commands.handle(request)


class _DeadlineReader(io.RawIOBase):
    """A socket's reads with a deadline (an absolute `time.monotonic()` value) on top of
    the per-read `idle` timeout: a sender that trickles a byte now and then cannot hold
    a read open past the deadline. Raises TimeoutError when it passes."""

    def __init__(self, sock: socket.socket, idle: float):
        super().__init__()
        self.sock = sock
        self.idle = idle
        self.deadline: Optional[float] = None
        # Bytes that may still be read (None: no limit); _HeadTooLarge past it.
        self.budget: Optional[int] = None
        # Bytes read before (by the head reader), served first.
        self.prefix = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        timeout = self.idle
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise TimeoutError("deadline passed")
        if self.budget is not None and self.budget <= 0:
            raise _HeadTooLarge
        if self.prefix:
            n = min(len(buffer), len(self.prefix))
            buffer[:n] = self.prefix[:n]
            self.prefix = self.prefix[n:]
            if self.budget is not None:
                self.budget -= n
            return n
        self.sock.settimeout(timeout)
        try:
            n = self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(self.idle)  # for writes and plain reads
        if self.budget is not None:
            self.budget -= n
        return n


class _HeadReader:
    """Reads the request line and headers of new connections, all in one thread with a
    selector, and hands a connection to a handler thread once its head is in (or over
    `_MAX_HEAD_BYTES`, for the handler's 431). A connection whose head is not in within
    `header_timeout` is closed and counted (`slow_header`) without ever costing a thread,
    so slow senders neither hold threads nor wake one per byte they trickle."""

    def __init__(self, server: "PolicyServerInput"):
        self.server = server
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._added: collections.deque = collections.deque()
        # socket -> [client_address, head bytes so far, deadline], in the order of the
        # deadlines (those of accepted connections plus the one header_timeout; dicts keep
        # insertion order), so that finding the late ones costs no scan of them all.
        self._pending: Dict[Any, list] = {}

    def add(self, sock: socket.socket, client_address: Any) -> None:
        self._added.append((sock, client_address, time.monotonic()))
        self.wake()

    def wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:  # the buffer is full (a wake-up is pending anyway) or closed
            pass

    def run(self) -> None:
        server = self.server
        try:
            while not server._stop_event.is_set():  # pylint: disable=protected-access
                timeout = _POLL_TIMEOUT_S
                if self._pending:  # the first one is due first (see _take_added)
                    first = next(iter(self._pending.values()))[2]
                    timeout = max(0.0, min(timeout, first - time.monotonic()))
                for key, _ in self._selector.select(timeout):
                    if key.data is None:
                        self._take_added()
                    else:
                        self._read(key.fileobj)
                self._close_late()
        finally:
            self._take_added()
            for sock in list(self._pending):
                self._drop(sock)
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _take_added(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
        while self._added:
            sock, client_address, accepted = self._added.popleft()
            if self.server._stop_event.is_set():  # pylint: disable=protected-access
                self._pending[sock] = [client_address, b"", 0.0]
                self._drop(sock)
                continue
            sock.setblocking(False)
            self._pending[sock] = [client_address, b"",
                                   accepted + self.server.header_timeout]
            self._selector.register(sock, selectors.EVENT_READ, client_address)

    def _read(self, sock: socket.socket) -> None:
        entry = self._pending[sock]
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # closed before its head was in
            self._drop(sock)
            return
        head = entry[1] + data
        entry[1] = head
        # Done at the blank line after the headers (or when over the head budget; the
        # handler then answers 431). A leading blank line is skipped as http.server does.
        if b"\r\n\r\n" in head or b"\n\n" in head or len(head) > _MAX_HEAD_BYTES:
            self._selector.unregister(sock)
            del self._pending[sock]
            sock.setblocking(True)
            try:
                self.server._dispatch(sock, entry[0], head)  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                logger.exception("Starting a policy server handler failed.")

    def _close_late(self) -> None:
        now = time.monotonic()
        late = []
        for sock, entry in self._pending.items():
            if entry[2] > now:
                break
            late.append(sock)
        for sock in late:
            self.server._count("slow_header")  # pylint: disable=protected-access
            logger.info("Closed a connection from %s: its request line and headers did not "
                        "arrive within %s s (header_timeout).", self._pending[sock][0][0],
                        self.server.header_timeout)
            self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        client_address = self._pending.pop(sock)[0]
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        self.server.shutdown_request(sock)
        self.server._connection_closed(  # pylint: disable=protected-access
            str(client_address[0]) if client_address else "")


class _HeadTooLarge(Exception):
    """A request line and headers longer than `_MAX_HEAD_BYTES`."""


class _PolicyRequestHandler(BaseHTTPRequestHandler):
    """Reads one POSTed wire-format request, runs it, writes the JSON response."""

    protocol_version = "HTTP/1.1"
    server_version = "tfrl-PolicyServer"
    disable_nagle_algorithm = True
    # Seconds a keep-alive connection may stay idle between requests (and the longest
    # single wait for a read or write).
    timeout = 60.0

    def setup(self) -> None:
        super().setup()
        self._reader = _DeadlineReader(self.connection, self.timeout)
        with self.server._lock:  # pylint: disable=protected-access
            self._reader.prefix = self.server._prefetched.pop(  # pylint: disable=protected-access
                self.connection, b"")
        self.rfile = io.BufferedReader(self._reader, 65536)
        # The first request's line and headers are due `header_timeout` after connecting.
        self._reader.deadline = time.monotonic() + self.server.header_timeout
        self._first_request = True

    def handle_one_request(self) -> None:
        """Reads the request line and headers within the header deadline, then serves
        the request (as BaseHTTPRequestHandler does, with deadlines and counting)."""
        server, reader = self.server, self._reader
        try:
            if not self._first_request:  # keep-alive: idle until the next request's byte
                reader.deadline = None
                if not self.rfile.peek(1):
                    self.close_connection = True
                    return
                reader.deadline = time.monotonic() + server.header_timeout
            self._first_request = False
            reader.budget = _MAX_HEAD_BYTES
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                self.close_connection = True
                return
            if len(self.raw_requestline) > 65536:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(414)
                return
            if not self.parse_request():
                return
        except TimeoutError:
            if reader.deadline is not None:  # not an idle keep-alive connection
                server._count("slow_header")  # pylint: disable=protected-access
                logger.info("Closed a connection from %s: its request line and headers did "
                            "not arrive within %s s (header_timeout).", self.address_string(),
                            server.header_timeout)
            self.close_connection = True
            return
        except _HeadTooLarge:
            server._count("invalid")  # pylint: disable=protected-access
            reader.budget = None
            self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
            self.send_error(431, f"Request line and headers exceed {_MAX_HEAD_BYTES} bytes")
            self.close_connection = True
            return
        finally:
            reader.budget = None
        reader.deadline = None
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.send_error(501, f"Unsupported method ({self.command!r})")
            return
        try:
            method()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True

    def do_POST(self) -> None:  # pylint: disable=invalid-name
        self.server._begin_request()  # pylint: disable=protected-access
        try:
            self._serve_post()
        finally:
            self.server._end_request()  # pylint: disable=protected-access

    def _serve_post(self) -> None:
        server = self.server
        reserved = [0]
        slot = False
        try:
            if not server._authorized(self.headers.get("Authorization")):
                server._count("unauthorized")
                raise _HTTPError(401, "The policy server needs a token: send the header "
                                      "'Authorization: Bearer <token>' (PolicyClient(..., "
                                      "auth_token=...)); the token was missing or wrong.")
            n = self._body_length()
            slot = server._connection_slots.acquire(timeout=_SLOT_WAIT_S)
            if not slot:
                server._count("busy")
                self._discard_small_body(n)
                raise _HTTPError(503, f"The policy server is serving its maximum of "
                                      f"{server.max_connections} requests; retry later.",
                                 retry=True)
            body = self._read_body(n, reserved)
            _check_containers(body)
            request = loads(body)
            response = server._handle(request)
        except _HTTPError as e:
            self.close_connection = True  # the body may be unread
            return self._send(e.status, {"error": str(e)}, retry=e.retry)
        except queue.Full:
            return self._send(503, {"error": "The policy server's sample queue is full "
                                             f"({server.samples_queue.maxsize} batches); "
                                             "nothing was queued, retry later."}, retry=True)
        except Exception as e:  # pylint: disable=broad-except
            status = _status_for(e)
            if status == 500:
                logger.exception("Policy server request failed.")
                message = f"Internal server error ({type(e).__name__}); see the server's log."
            else:
                message = str(e)
            if 400 <= status < 500:
                server._count("invalid")
                if isinstance(e, InvalidData):
                    logger.warning("Refused a request from %s: %s", self.address_string(), e)
            return self._send(status, {"error": message})
        finally:
            if reserved[0]:
                server._release_body(reserved[0])
            if slot:
                server._connection_slots.release()
        self._send(200, response)

    def do_GET(self) -> None:  # pylint: disable=invalid-name
        self._send(405, {"error": "The policy server takes POST requests (see PolicyClient)."})

    def _body_length(self) -> int:
        length = self.headers.get("Content-Length")
        if length is None:
            raise _HTTPError(411, "Request needs a Content-Length header with the body size; "
                                  "received none.")
        if not length.strip().isdigit():
            raise _HTTPError(400, f"Request needs a Content-Length header with the body size; "
                                  f"received Content-Length={length!r}.")
        n = int(length)
        if n > self.server.max_request_bytes:
            raise _HTTPError(413, f"Request body of {n} bytes exceeds the limit of "
                                  f"{self.server.max_request_bytes} bytes (max_request_bytes).")
        return n

    def _read_body(self, n: int, reserved: list) -> bytes:
        """Reads the `n` bytes of the body, reserving them from the in-flight budget as
        they arrive (`reserved[0]` holds the bytes reserved, for the caller to release).

        Raises:
            _HTTPError: 408 if the body arrives slower than `min_body_rate` (after
                `_BODY_GRACE_S`), 400 if the connection ends first, 503 if the
                in-flight budget is used up.
        """
        server, reader = self.server, self._reader
        chunks, received = [], 0
        start = time.monotonic()
        try:
            while received < n:
                size = min(n - received, _BODY_CHUNK)
                if not server._reserve_body(size):
                    server._count("busy")
                    raise _HTTPError(503, "The policy server is reading too many request "
                                          "bodies at once; retry later.", retry=True)
                reserved[0] += size
                reader.deadline = start + _BODY_GRACE_S + received / server.min_body_rate
                chunk = self.rfile.read1(size)
                if not chunk:
                    break
                chunks.append(chunk)
                received += len(chunk)
                if len(chunk) < size:  # give back what this read did not use
                    server._release_body(size - len(chunk))
                    reserved[0] -= size - len(chunk)
        except TimeoutError:  # the rate deadline passed, or no byte came for `timeout` s
            server._count("slow_body")
            raise _HTTPError(408, f"Request body arrived too slowly: {received} of {n} bytes "
                                  f"in {time.monotonic() - start:.1f} s; after the first "
                                  f"{_BODY_GRACE_S:g} s the server needs "
                                  f"{server.min_body_rate:g} bytes/s (min_body_rate).") from None
        except OSError:
            pass
        finally:
            reader.deadline = None
        if received != n:
            raise _HTTPError(400, f"Truncated request body: received {received} of the {n} "
                                  "bytes announced by Content-Length.")
        return b"".join(chunks)

    def _discard_small_body(self, n: int) -> None:
        """Reads (for at most `_REFUSE_READ_S`) a body of up to 64 KiB that is refused, so
        that closing the connection does not reset it before the client reads the answer."""
        if n > 2**16:
            return
        self._reader.deadline = time.monotonic() + _REFUSE_READ_S
        try:
            self.rfile.read(n)
        except OSError:
            pass
        finally:
            self._reader.deadline = None

    def _send(self, status: int, payload: Dict[str, Any], retry: bool = False) -> None:
        body = dumps(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry:
            self.send_header("Retry-After", str(_RETRY_AFTER_S))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # pylint: disable=redefined-builtin
        logger.debug("%s - %s", self.address_string(), format % args)


class _MetricsSampler:
    """Stands in for the sampler of a worker without an env: `worker.get_metrics()` then
    returns the client episodes' metrics, and `worker.stop()` stops the server."""

    def __init__(self, server: PolicyServerInput):
        self.server = server

    def get_metrics(self) -> list:
        return self.server.get_metrics()

    def get_data(self) -> Any:
        return self.server.next()

    def get_extra_batches(self) -> list:
        return []

    def stop(self) -> None:
        self.server.stop()


def _forward_metrics(worker: Any, server: PolicyServerInput) -> None:
    """Makes the client-reported episode metrics surface in `worker.get_metrics()`."""
    if worker is None:
        return
    sampler = getattr(worker, "sampler", None)
    if sampler is not None:
        sampler.get_metrics = server.get_metrics
    else:
        try:
            worker.sampler = _MetricsSampler(server)
        except AttributeError:  # a worker-like object with a read-only attribute
            logger.warning("Cannot attach the policy server's metrics to %r.", worker)


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, retry: bool = False):
        super().__init__(message)
        self.status = status
        self.retry = retry


def _check_containers(body: bytes) -> None:
    """Refuses bodies with more JSON arrays/objects than real requests have.

    Decoded, an empty JSON list ("[]," is 3 bytes) costs ~64 bytes of Python objects:
    a body of them would take ~25x its size in memory. Real requests carry arrays as
    base64 strings (no brackets), so `_BYTES_PER_CONTAINER` bytes per container is
    plenty; this keeps the decoded size of any accepted body under ~10x its bytes.
    """
    containers = body.count(b"[") + body.count(b"{")
    allowed = len(body) // _BYTES_PER_CONTAINER + _FREE_CONTAINERS
    if containers > allowed:
        raise _HTTPError(400, f"Request body has {containers} JSON arrays/objects in "
                              f"{len(body)} bytes; at most {allowed} are accepted (one per "
                              f"{_BYTES_PER_CONTAINER} bytes + {_FREE_CONTAINERS}). Send "
                              "numbers as numpy arrays (PolicyClient does).")


def _refuse_busy(sock: socket.socket, message: str) -> None:
    """Answers 503 + Retry-After on a connection that gets no handler thread.

    The request is read first (up to `_REFUSE_READ_S` seconds and a small body): closing
    a socket with unread data resets the connection before the client reads the answer.
    """
    body = dumps({"error": message})
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: {_RETRY_AFTER_S}\r\n"
            "Connection: close\r\n\r\n").encode("ascii")
    deadline = time.monotonic() + _REFUSE_READ_S
    received = b""
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
            request_head, sep, rest = received.partition(b"\r\n\r\n")
            if sep:
                match = re.search(rb"(?im)^content-length:\s*(\d{1,9})\s*$", request_head)
                if match is None or len(rest) >= min(int(match.group(1)), 2**16):
                    break
            if len(received) > 2**17:
                break
    except OSError:
        pass
    try:
        sock.settimeout(1.0)
        sock.sendall(head + body)
    except OSError:
        pass


def _status_for(error: BaseException) -> int:
    if isinstance(error, TimeoutError):
        return 504
    if isinstance(error, (ValueError, TypeError, KeyError)):
        return 400
    if isinstance(error, RuntimeError):
        return 503
    return 500


def _resolve_policies(worker: Any, policy: Any, policy_mapping_fn: Optional[Callable],
                      multiagent: Optional[bool]):
    if policy is not None:
        policies = dict(policy) if isinstance(policy, dict) else {DEFAULT_POLICY_ID: policy}
    elif worker is not None:
        policy_map = getattr(worker, "policy_map", None)
        if policy_map:
            policies = dict(policy_map.items())
        else:
            policies = {DEFAULT_POLICY_ID: worker.get_policy()}
        if multiagent is None:
            multiagent = getattr(worker, "multiagent", None)
        if policy_mapping_fn is None and (multiagent or len(policies) > 1):
            policy_mapping_fn = getattr(worker, "policy_mapping_fn", None)
    else:
        raise ValueError(
            "PolicyServerInput needs a policy to serve. Received ioctx.worker=None and "
            "policy=None. Pass an IOContext whose worker is a RolloutWorker, or policy=<policy>."
        )
    if multiagent is None:
        multiagent = len(policies) > 1 or policy_mapping_fn is not None
    if len(policies) > 1 and policy_mapping_fn is None:
        raise ValueError(f"Serving several policies {sorted(policies)} needs a policy_mapping_fn.")
    for pid, p in policies.items():
        missing = [a for a in _POLICY_ATTRIBUTES if not hasattr(p, a)]
        if missing:
            raise TypeError(f"Policy {pid!r} ({type(p).__name__}) cannot be served: it lacks "
                            f"{missing} (see tfrl.serving.external_env_runner for the protocol).")
    return policies, policy_mapping_fn, bool(multiagent)
