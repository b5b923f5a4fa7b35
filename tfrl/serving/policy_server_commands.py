"""What a policy server does for each client command, independent of HTTP.

Remote-inference commands go to the server's embedded ExternalEnv (whose runner
computes the actions); local-inference clients fetch the policies' classes, spaces,
config and weights, and upload finished batches and episode metrics.
"""

import numbers
import queue
import threading
from typing import Any, Dict, Mapping, Optional

from tfrl.serving import policy_protocol as P
from tfrl.serving.policy_server_checks import (BatchValidator, InvalidData, episode_metrics_error,
                                           nonfinite_error, observation_problem, reward_error,
                                           space_range_error)
from tfrl.serving.wire_format import encodable_subset
from tfrl.data.rollout_metrics import RolloutMetrics

_METRICS_FIELDS = frozenset(RolloutMetrics._fields)
_METRICS_DICTS = ("agent_rewards", "custom_metrics", "perf_stats", "hist_data", "media")


def to_rollout_metrics(metrics: Any) -> RolloutMetrics:
    """A `RolloutMetrics` from an episode-metrics dict (as clients upload them).

    Args:
        metrics: A RolloutMetrics (returned as is) or a dict with its field names;
            `episode_length` and `episode_reward` are required.

    Raises:
        ValueError: If a field is unknown, missing, of the wrong type, or holds a value
            that does not aggregate (see `episode_metrics_error`; names the field).

    Example:
        >>> to_rollout_metrics({"episode_length": 3, "episode_reward": 2.5})
        RolloutMetrics(episode_length=3, episode_reward=2.5, agent_rewards={}, custom_metrics={}, perf_stats={}, hist_data={}, media={}, episode_faulty=False)
    """
    if isinstance(metrics, RolloutMetrics):
        return metrics
    if not isinstance(metrics, Mapping):
        raise ValueError(f"Episode metrics must be a dict with RolloutMetrics fields; received "
                         f"{type(metrics).__name__}: {metrics!r:.200}.")
    unknown = sorted(set(metrics) - _METRICS_FIELDS, key=str)
    missing = [k for k in ("episode_length", "episode_reward") if k not in metrics]
    if unknown or missing:
        raise ValueError(f"Episode metrics: unknown fields {unknown}, missing fields {missing}; "
                         f"the fields are {list(RolloutMetrics._fields)}.")
    fields = {k: metrics.get(k) or {} for k in _METRICS_DICTS}
    for key, value in fields.items():
        if not isinstance(value, Mapping):
            raise ValueError(f"Episode metrics: {key} must be a dict; received {value!r:.200}.")
    for key in fields["agent_rewards"]:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError("Episode metrics: agent_rewards keys must be (agent_id, policy_id) "
                             f"tuples; received {key!r:.200}.")
    problem = episode_metrics_error(metrics)
    if problem:
        raise ValueError(f"Episode metrics: {problem}.")
    length, reward = metrics["episode_length"], metrics["episode_reward"]
    return RolloutMetrics(int(length), float(reward), episode_faulty=bool(
        metrics.get("episode_faulty", False)), **{k: dict(v) for k, v in fields.items()})


def policy_class_path(cls: type) -> str:
    """`"module:QualName"` of a class, as sent in GET_WORKER_ARGS."""
    return f"{cls.__module__}:{cls.__qualname__}"


class PolicyServerCommands:
    """Executes decoded client requests.

    Args:
        env: The embedded ExternalEnv (or ExternalMultiAgentEnv) of remote inference.
        policies: Policy id -> policy.
        multiagent: Whether clients speak the multi-agent protocol (dict observations).
        config: The algorithm config sent to local-inference clients (encodable part).
        samples_queue: Receives uploaded batches.
        metrics_queue: Receives uploaded episode metrics.
        policy_lock: Held while reading weights.
        action_timeout: Seconds a GET_ACTION waits for the runner.
        put_samples: Queues the accepted batches of one request, all or none
            (default: `samples_queue.put` each); raises `queue.Full` if they do not fit
            (the request gets HTTP 503 and nothing of it is queued).
    """

    def __init__(self, env: Any, policies: Dict[str, Any], multiagent: bool, config: dict,
                 samples_queue: queue.Queue, metrics_queue: queue.Queue,
                 policy_lock: threading.Lock, action_timeout: float = 60.0,
                 put_samples: Optional[Any] = None):
        self.env = env
        self.policies = policies
        self.multiagent = multiagent
        self.config = config
        self.samples_queue = samples_queue
        self.metrics_queue = metrics_queue
        self.policy_lock = policy_lock
        self.put_samples = put_samples or (lambda batches: [samples_queue.put(b)
                                                             for b in batches])
        self.validator = BatchValidator(policies, multiagent, policy_lock)
        env.get_action_timeout = action_timeout

    def handle(self, request: Any) -> dict:
        """Runs one request and returns the response object.

        Raises:
            BadRequest / ValueError / TypeError: For bad requests (HTTP 400): malformed
                ones, and data the sampler would refuse from an env (non-finite numbers,
                observations/actions outside their spaces, batches a policy cannot
                train on); see `tfrl.serving.policy_server_checks`.
            queue.Full: If the sample queue is full (HTTP 503, retry later).
            TimeoutError: If no action was computed in time (HTTP 504).
            RuntimeError: If the server is stopping (HTTP 503).
        """
        command, args = P.parse_request(request)
        return getattr(self, "_" + command.lower())(**args)

    # ---- Remote inference --------------------------------------------------------------

    def _start_episode(self, episode_id: Optional[str], training_enabled: Any) -> dict:
        if not isinstance(training_enabled, bool):
            raise P.BadRequest(f"START_EPISODE: training_enabled must be a bool; received "
                               f"{training_enabled!r}.")
        return {"episode_id": self.env.start_episode(episode_id, training_enabled)}

    def _get_action(self, episode_id: Any, observation: Any) -> dict:
        if isinstance(episode_id, str):
            episode_id, observation, single = [episode_id], {episode_id: observation}, True
        else:
            single = False
        if not (isinstance(episode_id, list) and episode_id
                and all(isinstance(e, str) for e in episode_id)):
            raise P.BadRequest(f"GET_ACTION: episode_id must be a str or a non-empty list of str; "
                               f"received {episode_id!r}.")
        if not isinstance(observation, dict) or set(observation) != set(episode_id):
            raise P.BadRequest("GET_ACTION with a list of episode ids takes observation as a dict "
                               "episode id -> observation with exactly those ids; received "
                               f"{type(observation).__name__} with keys "
                               f"{sorted(observation) if isinstance(observation, dict) else None}.")
        for eid in episode_id:
            self._check_observation(f"GET_ACTION: observation of episode {eid}",
                                    observation[eid])
        actions = self.env.get_actions(episode_id, observation)
        return {"action": actions[episode_id[0]] if single else actions}

    def _log_action(self, episode_id: str, observation: Any, action: Any) -> dict:
        self._check_observation("LOG_ACTION: observation", observation)
        problem = nonfinite_error(action, "action")
        if not problem and not self.multiagent:
            space = next(iter(self.policies.values())).action_space
            problem = space_range_error(space, action, "action")
        if problem:
            raise InvalidData(f"LOG_ACTION: {problem}.")
        self.env.log_action(episode_id, observation, action)
        return {}

    def _log_returns(self, episode_id: str, reward: Any, info: Any, done: Any) -> dict:
        if info is not None and not isinstance(info, dict):
            raise P.BadRequest(f"LOG_RETURNS: info must be a dict or None; received {info!r}.")
        problem = reward_error(reward)
        if problem:
            raise InvalidData(f"LOG_RETURNS: {problem}.")
        if self.multiagent:
            self.env.log_returns(episode_id, reward, info, done)
        elif done is not None:
            raise P.BadRequest("LOG_RETURNS: this server serves a single-agent env; send "
                               f"done=None (multiagent_done_dict). Received done={done!r}.")
        else:
            self.env.log_returns(episode_id, reward, info)
        return {}

    def _end_episode(self, episode_id: str, observation: Any, truncated: Any) -> dict:
        if not isinstance(truncated, bool):
            raise P.BadRequest(f"END_EPISODE: truncated must be a bool; received {truncated!r}.")
        self._check_observation("END_EPISODE: observation", observation)
        self.env.end_episode(episode_id, observation, truncated=truncated)
        return {}

    # ---- Local inference ---------------------------------------------------------------

    def _get_worker_args(self) -> dict:
        policies = {}
        for pid, policy in self.policies.items():
            policy_config, _ = encodable_subset(dict(getattr(policy, "config", None) or {}))
            policies[pid] = {
                "policy_class": policy_class_path(type(policy)),
                "observation_space": policy.observation_space,
                "action_space": policy.action_space,
                "config": policy_config,
            }
        config, dropped = encodable_subset(dict(self.config))
        return {"protocol_version": P.PROTOCOL_VERSION, "multiagent": self.multiagent,
                "policies": policies, "config": config, "dropped_config_keys": dropped}

    def _get_weights(self) -> dict:
        with self.policy_lock:
            return {"weights": {pid: p.get_weights() for pid, p in self.policies.items()}}

    def _report_samples(self, samples: Any, metrics: Any) -> dict:
        if not isinstance(samples, list) or not isinstance(metrics, list) or not all(
                isinstance(m, dict) for m in metrics):
            raise P.BadRequest("REPORT_SAMPLES takes samples as a list of batches and metrics as "
                               f"a list of dicts; received {type(samples).__name__} and "
                               f"{type(metrics).__name__}.")
        for i, batch in enumerate(samples):
            self.validator.check(batch, f"REPORT_SAMPLES: samples[{i}]")
        records = []
        for i, m in enumerate(metrics):
            try:
                records.append(to_rollout_metrics(m))
            except ValueError as e:
                raise P.BadRequest(f"REPORT_SAMPLES: metrics[{i}]: {e}") from None
        self.put_samples([batch for batch in samples if batch.count > 0])
        for m in records:
            self.metrics_queue.put(m)
        return {}

    def _check_observation(self, where: str, observation: Any) -> None:
        """Observations must be finite; single-agent ones in the observation space (the
        env's own checks give the shape errors of multi-agent observations)."""
        space = None if self.multiagent else next(iter(self.policies.values())).observation_space
        problem = observation_problem(space, observation)
        if problem:
            raise InvalidData(f"{where}: {problem}.")

