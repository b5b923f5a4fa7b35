"""PolicyClient: how an external simulator talks to a `PolicyServerInput` over HTTP.

With `inference_mode="remote"` every call is one HTTP request and the server computes
actions. With `"local"` the client builds its own copy of the server's policy (class,
spaces, config and weights fetched from the server), computes actions in-process with
a local ExternalEnv, refreshes the weights every `update_interval` seconds, and
uploads finished batches and episode metrics.

Safety: responses are decoded with the JSON wire format (never unpickled). A policy
class named by the server is only used if it was passed in `trusted_policy_classes`,
or is a tfrl policy class (a subclass of `tfrl.policy.policy.Policy`, or a built-in
example policy) from a public `tfrl.*` module; nothing else is ever imported.

Example:
    >>> client = PolicyClient("localhost:9900", inference_mode="remote")
    >>> client.address
    'localhost:9900'
"""

import http.client
import importlib
import os
import re
import threading
import time
import types
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from tfrl.serving import policy_protocol as P
from tfrl.serving.external_env_runner import ExternalEnvRunner, fragment_length, make_serving_env
from tfrl.serving.policy_server_checks import nonfinite_error, observation_problem, reward_error
from tfrl.serving.policy_server_commands import policy_class_path
from tfrl.serving.wire_format import dumps, loads
from tfrl.utils.typing import EnvActionType, EnvInfoDict, EnvObsType, MultiAgentDict

# How often the local inference loop wakes up when idle (to notice close()).
_POLL_TIMEOUT_S = 0.2
# Example policies a client may build although they do not subclass tfrl's Policy.
_BUILTIN_POLICY_CLASSES = frozenset(["tfrl.examples.policy.random_policy:RandomPolicy"])
# Every other class the server names must derive from this one.
_POLICY_BASE = "tfrl.policy.policy.Policy"
_MODULE_RE = re.compile(r"tfrl(\.[A-Za-z][A-Za-z0-9_]*)+")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Env var read when `auth_token` is not given (the server reads it too).
_TOKEN_ENV_VAR = "TFRL_POLICY_SERVER_TOKEN"
# Seconds between retries of a request the server answered with 503 + Retry-After
# (busy: too many connections, or a full sample queue), doubling up to the last.
_BUSY_BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)
# Transient failures after which a request on a reused keep-alive connection is resent.
_STALE_CONNECTION_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError,
                            BrokenPipeError, http.client.CannotSendRequest)


class PolicyClient:
    """REST client to interact with a tfrl policy server (`PolicyServerInput`).

    Args:
        address: Server to connect to, `"host:port"` (an `http://` prefix is allowed).
        inference_mode: `"local"` (compute actions here, with a copy of the policy)
            or `"remote"` (the server computes them).
        update_interval: Local mode: refresh the policy weights when this many seconds
            have passed (checked at every call); None: only `update_policy_weights()`.
        timeout: tfrl extension: seconds each HTTP request may take.
        trusted_policy_classes: tfrl extension: policy classes (outside tfrl) this
            client may build when the server names them (local mode).
        policy_mapping_fn: tfrl extension: local mode with several policies:
            `fn(agent_id, episode_id, worker=None) -> policy id`.
        auth_token: tfrl extension: the server's shared secret, sent with every
            request as `Authorization: Bearer <token>`; None reads the
            `TFRL_POLICY_SERVER_TOKEN` env var (unset: no token).
        busy_retries: tfrl extension: how often a request the server refuses as busy
            (HTTP 503 with Retry-After) is resent, with growing pauses (0.05 s to 1 s);
            batch uploads of local inference retry for ~30 s.

    Raises:
        ValueError: For a bad `inference_mode`, `address` or `update_interval`, or
            (local mode) a server policy class that is not trusted.
        ConnectionError: Local mode: if the server cannot be reached.
    """

    START_EPISODE = P.START_EPISODE
    GET_ACTION = P.GET_ACTION
    LOG_ACTION = P.LOG_ACTION
    LOG_RETURNS = P.LOG_RETURNS
    END_EPISODE = P.END_EPISODE
    GET_WORKER_ARGS = P.GET_WORKER_ARGS
    GET_WEIGHTS = P.GET_WEIGHTS
    REPORT_SAMPLES = P.REPORT_SAMPLES
    # Largest response body accepted (bytes), e.g. for big weights.
    max_response_bytes = 2**30

    def __init__(self, address: str, inference_mode: str = "local",
                 update_interval: Optional[float] = 10.0, *, timeout: float = 120.0,
                 trusted_policy_classes: Sequence[type] = (),
                 policy_mapping_fn: Optional[Callable] = None,
                 auth_token: Optional[str] = None, busy_retries: int = 5):
        self.address = address
        self._host, self._port = _parse_address(address)
        self.timeout = timeout
        if auth_token is None:
            auth_token = os.environ.get(_TOKEN_ENV_VAR) or None
        if auth_token is not None and (not isinstance(auth_token, str) or not auth_token):
            raise ValueError("auth_token must be a non-empty str or None. Received: "
                             f"auth_token={type(auth_token).__name__}.")
        if isinstance(busy_retries, bool) or not isinstance(busy_retries, int) \
                or busy_retries < 0:
            raise ValueError(f"busy_retries must be an int >= 0. Received: "
                             f"busy_retries={busy_retries!r}.")
        self.busy_retries = busy_retries
        self._headers = {"Content-Type": "application/json"}
        if auth_token is not None:
            self._headers["Authorization"] = f"Bearer {auth_token}"
        self.env = None
        self._local_connections = threading.local()
        self._runner: Optional[ExternalEnvRunner] = None
        self._policies: Dict[str, Any] = {}
        if inference_mode == "local":
            self.local = True
            if update_interval is not None and (
                    not isinstance(update_interval, (int, float)) or update_interval <= 0):
                raise ValueError(f"update_interval must be a number > 0 or None. Received: "
                                 f"update_interval={update_interval!r}.")
            self._setup_local_inference(update_interval, trusted_policy_classes, policy_mapping_fn)
        elif inference_mode == "remote":
            self.local = False
        else:
            raise ValueError("inference_mode must be either 'local' or 'remote'")

    # ---- The episode protocol ----------------------------------------------------------

    def start_episode(self, episode_id: Optional[str] = None, training_enabled: bool = True) -> str:
        """Records the start of an episode; returns its id (new if `episode_id` is None)."""
        if self.local:
            self._update_local_policy()
            return self.env.start_episode(episode_id, training_enabled)
        return self._send({"command": P.START_EPISODE, "episode_id": episode_id,
                           "training_enabled": training_enabled})["episode_id"]

    def get_action(self, episode_id: Union[str, Sequence[str]],
                   observation: Union[EnvObsType, MultiAgentDict]) -> Union[EnvActionType, Dict]:
        """Records an observation and returns the on-policy action.

        Args:
            episode_id: An episode id, or a list/tuple of ids: then `observation` is a
                dict episode id -> observation, the actions are computed in one batch
                and returned as a dict episode id -> action.
            observation: The current observation (agent dict for multi-agent envs).
        """
        ids = list(episode_id) if isinstance(episode_id, (list, tuple)) else None
        if self.local:
            self._update_local_policy()
            for obs in (observation.values() if ids is not None and isinstance(
                    observation, dict) else [observation]):
                self._check_local_observation("get_action", obs)
            if ids is None:
                return self.env.get_action(episode_id, observation)
            return self.env.get_actions(ids, observation)
        return self._send({"command": P.GET_ACTION, "observation": observation,
                           "episode_id": episode_id if ids is None else ids})["action"]

    def log_action(self, episode_id: str, observation: Union[EnvObsType, MultiAgentDict],
                   action: Union[EnvActionType, MultiAgentDict]) -> None:
        """Records an observation and the (off-policy) action taken for it."""
        if self.local:
            self._update_local_policy()
            self._check_local_observation("log_action", observation)
            problem = nonfinite_error(action, "action")
            if problem:
                raise ValueError(f"log_action: {problem}.")
            return self.env.log_action(episode_id, observation, action)
        self._send({"command": P.LOG_ACTION, "observation": observation, "action": action,
                    "episode_id": episode_id})
        return None

    def log_returns(self, episode_id: str, reward: Union[float, MultiAgentDict],
                    info: Union[EnvInfoDict, MultiAgentDict] = None,
                    multiagent_done_dict: Optional[MultiAgentDict] = None) -> None:
        """Records rewards for the previous action (they accumulate until the next one).

        Raises:
            ValueError: If `multiagent_done_dict` is given but `reward` is not a dict.
        """
        if multiagent_done_dict is not None and not isinstance(reward, dict):
            raise ValueError(f"With multiagent_done_dict, reward must be a dict agent id -> "
                             f"reward. Received: reward={reward!r}.")
        if self.local:
            self._update_local_policy()
            problem = reward_error(reward)
            if problem:
                raise ValueError(f"log_returns: {problem}.")
            if multiagent_done_dict is not None:
                return self.env.log_returns(episode_id, reward, info, multiagent_done_dict)
            return self.env.log_returns(episode_id, reward, info)
        self._send({"command": P.LOG_RETURNS, "reward": reward, "info": info,
                    "episode_id": episode_id, "done": multiagent_done_dict})
        return None

    def end_episode(self, episode_id: str, observation: Union[EnvObsType, MultiAgentDict], *,
                    truncated: bool = False) -> None:
        """Records the end of an episode (tfrl extension: `truncated=True` for time limits)."""
        if self.local:
            self._update_local_policy()
            self._check_local_observation("end_episode", observation)
            return self.env.end_episode(episode_id, observation, truncated=truncated)
        self._send({"command": P.END_EPISODE, "observation": observation,
                    "episode_id": episode_id, "truncated": truncated})
        return None

    @property
    def policies(self) -> Mapping[str, Any]:
        """Policy id -> the local copy of the server's policy (read-only view; empty in
        remote inference mode)."""
        return types.MappingProxyType(self._policies)

    def update_policy_weights(self) -> None:
        """Fetches the server's current weights now (local inference mode only)."""
        self._update_local_policy(force=True)

    def close(self) -> None:
        """Stops local inference (uploading what finished) and closes connections."""
        if self._runner is not None:
            self._runner.stop()
        conn = getattr(self._local_connections, "conn", None)
        if conn is not None:
            conn.close()

    def __enter__(self) -> "PolicyClient":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ---- Local inference ---------------------------------------------------------------

    def _setup_local_inference(self, update_interval, trusted, policy_mapping_fn) -> None:
        self._update_interval = update_interval
        args = self._send({"command": P.GET_WORKER_ARGS})
        if args.get("protocol_version") != P.PROTOCOL_VERSION:
            raise ValueError(f"The policy server at {self.address} speaks protocol version "
                             f"{args.get('protocol_version')!r}; this client speaks "
                             f"{P.PROTOCOL_VERSION}. Use matching tfrl versions.")
        trusted_by_path = {policy_class_path(cls): cls for cls in trusted}
        self._policies = {}
        for pid, spec in args["policies"].items():
            cls = _resolve_policy_class(spec["policy_class"], trusted_by_path)
            self._policies[pid] = cls(spec["observation_space"], spec["action_space"],
                                      spec["config"])
        multiagent = self._multiagent = bool(args["multiagent"])
        if len(self._policies) > 1 and policy_mapping_fn is None:
            raise ValueError(f"The server serves several policies {sorted(self._policies)}; "
                             "local inference needs PolicyClient(..., policy_mapping_fn=fn).")
        self._policy_lock = threading.Lock()
        self._set_weights(self._send({"command": P.GET_WEIGHTS})["weights"])
        single = None if multiagent else next(iter(self._policies.values()))
        self.env = make_serving_env(multiagent, getattr(single, "action_space", None),
                                    getattr(single, "observation_space", None))
        self._runner = ExternalEnvRunner(
            self.env.to_base_env(poll_timeout=_POLL_TIMEOUT_S), self._policies, self._report,
            policy_mapping_fn=policy_mapping_fn, multiagent=multiagent,
            rollout_fragment_length=fragment_length(args["config"]), policy_lock=self._policy_lock)
        self._runner.start()

    def _check_local_observation(self, method: str, observation: Any) -> None:
        """Local mode: refuses what the server would refuse in the uploaded batch (so
        the caller gets the error, and the upload is not refused later)."""
        space = None if self._multiagent else self.env.observation_space
        problem = observation_problem(space, observation)
        if problem:
            raise ValueError(f"{method}: {problem}.")

    def _update_local_policy(self, force: bool = False) -> None:
        if not self.local:
            return
        if self._runner.error is not None:
            raise RuntimeError(f"Local inference of this PolicyClient failed: "
                               f"{self._runner.error!r}") from self._runner.error
        due = self._update_interval is not None and \
            time.monotonic() - self._last_update >= self._update_interval
        if force or due:
            self._set_weights(self._send({"command": P.GET_WEIGHTS})["weights"])

    def _set_weights(self, weights: Dict[str, Any]) -> None:
        with self._policy_lock:
            for pid, w in weights.items():
                if pid in self._policies:
                    self._policies[pid].set_weights(w)
        self._last_update = time.monotonic()

    def _report(self, batch: Any, metrics: list) -> None:
        """Uploads finished batches and metrics (runs in the local inference thread)."""
        request = {"command": P.REPORT_SAMPLES, "samples": [] if batch is None else [batch],
                   "metrics": metrics}
        for attempt in range(3):
            try:
                self._send(request, busy_retries=max(self.busy_retries, 30))
                return
            except ConnectionError:
                if attempt == 2:
                    raise
                time.sleep(0.5 * (attempt + 1))

    # ---- HTTP --------------------------------------------------------------------------

    def _send(self, request: Dict[str, Any], busy_retries: Optional[int] = None
              ) -> Dict[str, Any]:
        body = dumps(request)
        retries = self.busy_retries if busy_retries is None else busy_retries
        for attempt in range(retries + 1):
            status, payload, retry_after = self._post(body, request["command"])
            if status != 503 or retry_after is None or attempt == retries:
                break
            time.sleep(_BUSY_BACKOFF_S[min(attempt, len(_BUSY_BACKOFF_S) - 1)])
        return _decode_response(status, payload, request["command"], self.address)

    def _post(self, body: bytes, command: str) -> Tuple[int, bytes, Optional[str]]:
        """One POST: `(status, body, Retry-After header)`."""
        conn = getattr(self._local_connections, "conn", None)
        for attempt in range(2):
            reused = conn is not None
            if conn is None:
                conn = self._local_connections.conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self.timeout)
            try:
                conn.request("POST", "/", body, self._headers)
                response = conn.getresponse()
                status, payload = response.status, self._read(response)
                retry_after = response.getheader("Retry-After")
                if response.will_close:
                    conn.close()
                    self._local_connections.conn = None
                break
            except _STALE_CONNECTION_ERRORS as e:
                conn.close()
                conn = self._local_connections.conn = None
                if reused and attempt == 0:
                    continue  # The server closed an idle keep-alive connection; resend.
                raise ConnectionError(f"Lost the connection to the policy server at "
                                      f"{self.address} during {command}: {e!r}.") from e
            except TimeoutError as e:
                conn.close()
                self._local_connections.conn = None
                raise TimeoutError(f"No response from the policy server at {self.address} to "
                                   f"{command} within timeout={self.timeout} s.") from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                self._local_connections.conn = None
                raise ConnectionError(f"Cannot reach the policy server at {self.address} "
                                      f"({command}): {e}. Is it running?") from e
        return status, payload, retry_after

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        payload = response.read(self.max_response_bytes + 1)
        if len(payload) > self.max_response_bytes:
            response.close()
            raise ConnectionError(f"The policy server's response exceeds "
                                  f"max_response_bytes={self.max_response_bytes}.")
        return payload


def _decode_response(status: int, payload: bytes, command: str, address: str) -> Dict[str, Any]:
    try:
        response = loads(payload)
    except ValueError as e:
        raise RuntimeError(f"The policy server at {address} sent an invalid response to "
                           f"{command} (HTTP {status}): {e}") from None
    if status == 200 and isinstance(response, dict):
        return response
    message = response.get("error") if isinstance(response, dict) else response
    text = f"The policy server at {address} refused {command} (HTTP {status}): {message}"
    if 400 <= status < 500:
        raise ValueError(text)
    if status == 504:
        raise TimeoutError(text)
    raise RuntimeError(text)


def _parse_address(address: str) -> Tuple[str, int]:
    text = address
    if isinstance(address, str) and address.startswith("http://"):
        text = address[len("http://"):]
    host, sep, port = text.rpartition(":") if isinstance(text, str) else ("", "", "")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"address must be 'host:port' (e.g. 'localhost:9900'). Received: "
                         f"address={address!r}.")
    return host.strip("[]"), int(port)


def _resolve_policy_class(path: Any, trusted: Dict[str, type]) -> type:
    """The class the server names, if this client may build it (see the module doc)."""
    if isinstance(path, str) and path in trusted:
        return trusted[path]
    module_name, _, name = path.partition(":") if isinstance(path, str) else ("", "", "")
    how_to_fix = (f"Pass the class with PolicyClient(..., trusted_policy_classes=[...]) if you "
                  f"trust it. Received: policy_class={path!r}.")
    if not (_MODULE_RE.fullmatch(module_name) and _NAME_RE.fullmatch(name)):
        raise ValueError("The policy server named a policy class outside tfrl; this client only "
                         "imports tfrl policy classes. " + how_to_fix)
    cls = getattr(importlib.import_module(module_name), name, None)
    builtin = path in _BUILTIN_POLICY_CLASSES
    if not isinstance(cls, type) or not (builtin or _is_policy_class(cls)):
        raise ValueError("The policy server named something that is not a tfrl policy class. "
                         + how_to_fix)
    return cls


def _is_policy_class(cls: type) -> bool:
    """Whether `cls` derives from `tfrl.policy.policy.Policy`.

    Compared by qualified name: the policy layer sits above env, so this module does
    not import it (the module the server names, if it defines a policy, has).
    """
    return any(f"{base.__module__}.{base.__qualname__}" == _POLICY_BASE for base in cls.__mro__)
