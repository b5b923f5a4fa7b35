"""ExternalEnvRunner: serves an ExternalEnv with policies and turns its episodes into batches.

The loop behind both inference modes of the policy server: the server (remote
inference) and a `PolicyClient` (local inference) each own an ExternalEnv that clients
drive, and a runner thread that polls the env's BaseEnv view, calls each policy's
`compute_actions` once per poll (per explore setting) for all waiting agents, sends
the actions back, and records each agent's steps with the sampling loop's
`AgentCollector` (the batches keep the ExternalEnv's string episode ids). Finished episodes,
and fragments of `rollout_fragment_length` steps of long ones, are emitted as
SampleBatches (postprocessed by their policy) together with episode metrics.

Policy protocol used here (the later Keras `Policy` satisfies it):
`observation_space`, `action_space`, `config` (dict);
`compute_actions(obs_batch, explore=bool) -> (actions, state_outs, extra_fetches)`
with batched numpy structs, `state_outs == []` (no RNN state), `extra_fetches` a dict
of batched arrays (stored per step as extra model outputs); optionally
`postprocess_trajectory(batch, other_agent_batches=None, episode=None)`.
"""

import logging
import threading
import time
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional

from tfrl.env.external_env import ExternalEnv
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv
from tfrl.serving.policy_server_checks import space_range_error
from tfrl.policy.policy_config import policy_default
from tfrl.env.space_checks import action_error, observation_error
from tfrl.evaluation.sampling.collectors import AgentCollector, FragmentOutput
from tfrl.evaluation.sampling.ops import logged_action
from tfrl.utils.spaces.space_utils import to_numpy_batch, unbatch

logger = logging.getLogger(__name__)

# emit(batch or None, episode metrics): called once per poll that finished anything.
EmitFn = Callable[[Any, List[dict]], None]


class _AgentRecord:
    """One agent of an episode: its policy, the sampling loop's collector of its rows,
    and the `t` and info (of the observation it acts on) of its next row."""

    def __init__(self, policy_id: str, collector: AgentCollector):
        self.policy_id = policy_id
        self.collector = collector
        self.t = 0
        self.info: dict = {}
        self.started = False


class _EpisodeRecord:
    def __init__(self, training_enabled: bool):
        self.training_enabled = training_enabled
        self.agents: Dict[Any, _AgentRecord] = {}
        self.agent_rewards: Dict[tuple, float] = defaultdict(float)
        self.env_steps = 0
        self.unreported_env_steps = 0


class ExternalEnvRunner:
    """Drives the BaseEnv of an ExternalEnv with policies in a background thread.

    Args:
        base_env: `external_env.to_base_env(...)`.
        policies: Policy id -> policy (see the module doc for the protocol).
        emit: Receives `(batch, metrics)`: a SampleBatch (MultiAgentBatch if
            `multiagent`) of finished training data or None, and a list of metrics
            dicts of finished episodes.
        policy_mapping_fn: `fn(agent_id, episode_id, worker=worker) -> policy id`,
            called once per agent and episode; None maps everything to the only policy.
        multiagent: Emit MultiAgentBatches instead of SampleBatches.
        rollout_fragment_length: Emit ongoing episodes in chunks of this many steps;
            None only emits whole episodes.
        policy_lock: Held around every policy call (weights may be set concurrently).
        worker: Passed to `policy_mapping_fn`.
        episode_idle_timeout: Seconds after which an episode its simulator stopped
            calling is dropped (`ExternalEnv.expire_idle_episodes`; counted in
            `expired_episodes`); None keeps episodes until they end.
    """

    def __init__(self, base_env: Any, policies: Dict[str, Any], emit: EmitFn, *,
                 policy_mapping_fn: Optional[Callable] = None, multiagent: bool = False,
                 rollout_fragment_length: Optional[int] = None,
                 policy_lock: Optional[threading.Lock] = None, worker: Any = None,
                 episode_idle_timeout: Optional[float] = None):
        if policy_mapping_fn is None and len(policies) != 1:
            raise ValueError(
                f"A policy_mapping_fn is needed to serve several policies; received policies "
                f"{sorted(policies)} and policy_mapping_fn=None."
            )
        self.base_env = base_env
        self.policies = policies
        self.emit = emit
        self.policy_mapping_fn = policy_mapping_fn
        self.multiagent = multiagent
        self.rollout_fragment_length = rollout_fragment_length
        self.policy_lock = policy_lock or threading.Lock()
        self.worker = worker
        self.error: Optional[BaseException] = None
        self.episode_idle_timeout = episode_idle_timeout
        self.expired_episodes = 0
        self._next_expiry_check = 0.0
        self._episodes: Dict[str, _EpisodeRecord] = {}
        # The sampling loop's per-policy output: postprocessed chunks -> emitted batch.
        self._output = FragmentOutput(multiagent, any_lone_policy=True)
        self._stop_event = threading.Event()
        self._drain_requested = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ExternalEnvRunner", daemon=True)

    def start(self) -> None:
        """Starts the background thread."""
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        """The background thread (started by `start`, ended by `stop`)."""
        return self._thread

    def stop(self, timeout: float = 10.0, drain: bool = True) -> None:
        """Stops the env (waiting callers raise RuntimeError) and joins the thread.

        Args:
            timeout: Seconds to wait for draining, and again for the thread to end.
            drain: First process (and emit) episodes that already ended but were not
                polled yet, so that nothing finished is lost.
        """
        if drain and self._thread.is_alive():
            self._drain_requested.set()
            self.base_env.interrupt_poll()
            self._thread.join(timeout)
        self._stop_event.set()
        self.base_env.stop()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        try:
            while not self._stop_event.is_set():
                if self._drain_requested.is_set() and not self._ended_episodes_pending():
                    return
                self.run_once()
                self._expire_idle_episodes()
        except BaseException as e:  # pylint: disable=broad-except
            self.error = e
            logger.exception("ExternalEnvRunner failed; stopping its env.")
            self.base_env.stop()

    def _expire_idle_episodes(self) -> None:
        """Drops the env's idle episodes and their records (at most ~10 checks per
        `episode_idle_timeout`)."""
        timeout = self.episode_idle_timeout
        now = time.monotonic()
        if timeout is None or now < self._next_expiry_check:
            return
        self._next_expiry_check = now + min(timeout / 10, 1.0)
        expired = self.base_env.external_env.expire_idle_episodes(timeout)
        for eid in expired:
            self._episodes.pop(eid, None)
        if expired:
            self.expired_episodes += len(expired)
            logger.warning("Dropped %d episode(s) idle for more than %s s (%d so far): %s",
                           len(expired), timeout, self.expired_episodes,
                           ", ".join(e[:40] for e in expired[:5]))

    def _ended_episodes_pending(self) -> bool:
        return self.base_env.external_env.has_ended_episodes()

    def run_once(self) -> None:
        """Polls once, records the new data, computes and sends actions, emits batches."""
        obs, rewards, terminateds, truncateds, infos, off_policy = self.base_env.poll()
        to_act = defaultdict(list)  # (policy id, explore) -> [(env id, agent id, obs)]
        finished: List[tuple] = []  # (policy id, SampleBatch chunk or None, episode record)
        metrics: List[dict] = []
        for eid, agent_obs in obs.items():
            record = self._episodes.get(eid)
            if record is None:
                training = all(i.get("training_enabled", True) for i in infos[eid].values())
                record = self._episodes[eid] = _EpisodeRecord(training)
            problem = self._map_and_check(eid, record, agent_obs, off_policy.get(eid, {}))
            if problem:
                self._reject(eid, problem)
                continue
            all_done = terminateds[eid]["__all__"] or truncateds[eid]["__all__"]
            stepped = False
            for aid, agent_ob in agent_obs.items():
                agent = record.agents[aid]
                info = _clean_info(infos[eid].get(aid))
                if not agent.started:
                    agent.started = True
                else:
                    reward = rewards[eid].get(aid)
                    reward = 0.0 if reward is None else float(reward)
                    agent.collector.add_row(agent_ob, reward, bool(terminateds[eid].get(aid)),
                                            bool(truncateds[eid].get(aid)), agent.info, agent.t)
                    agent.t += 1
                    record.agent_rewards[(aid, agent.policy_id)] += reward
                    stepped = True
                agent.info = info
                if all_done or terminateds[eid].get(aid) or truncateds[eid].get(aid):
                    finished.append((agent.policy_id, agent.collector.take_chunk(eid), record))
                    del record.agents[aid]
                    continue
                if agent.collector.cut_due(self.rollout_fragment_length):
                    finished.append((agent.policy_id, agent.collector.take_chunk(eid), record))
                explore = record.training_enabled and self._explore(agent.policy_id)
                to_act[(agent.policy_id, explore)].append((eid, aid, agent_ob))
            if stepped:
                record.env_steps += 1
                record.unreported_env_steps += 1
            if all_done:
                # Agents without a final observation end where they last acted.
                finished.extend((a.policy_id, a.collector.take_chunk(eid), record)
                                for a in record.agents.values() if a.started)
                metrics.append(_episode_metrics(record))
                del self._episodes[eid]
        self._act(to_act, off_policy)
        self._emit(finished, metrics)

    # ---- Steps of run_once -----------------------------------------------------------

    def _map_and_check(self, eid: str, record: _EpisodeRecord, agent_obs: dict,
                       off_policy: dict) -> Optional[str]:
        """Creates records of new agents; returns why the data are bad, or None."""
        for aid, ob in agent_obs.items():
            agent = record.agents.get(aid)
            if agent is None:
                agent = record.agents[aid] = self._new_agent(eid, aid, len(record.agents))
            policy = self.policies[agent.policy_id]
            problem = (observation_error(policy.observation_space, ob)
                       or space_range_error(policy.observation_space, ob, "observation"))
            if not problem and aid in off_policy:
                problem = (action_error(policy.action_space, off_policy[aid])
                           or space_range_error(policy.action_space, off_policy[aid], "action"))
            if problem:
                return f"agent {aid!r}: {problem}"
        return None

    def _new_agent(self, eid: str, aid: Any, index: int) -> _AgentRecord:
        if self.policy_mapping_fn is None:
            pid = next(iter(self.policies))
        else:
            pid = self.policy_mapping_fn(aid, eid, worker=self.worker)
            if pid not in self.policies:
                raise ValueError(f"policy_mapping_fn({aid!r}, ...) returned unknown policy id "
                                 f"{pid!r}; known: {sorted(self.policies)}.")
        policy = self.policies[pid]
        return _AgentRecord(pid, AgentCollector(
            index, pid, (False, False), spaces=(policy.observation_space, policy.action_space),
            id_columns=False))

    def _reject(self, eid: str, problem: str) -> None:
        del self._episodes[eid]
        message = f"Episode {eid} was dropped because of bad data: {problem}."
        logger.warning(message)
        self.base_env.reject_episode(eid, ValueError(message))

    def _explore(self, pid: str) -> bool:
        config = getattr(self.policies[pid], "config", None) or {}
        return bool(config.get("explore", policy_default("explore")))

    def _act(self, to_act: dict, off_policy: dict) -> None:
        actions_to_send = defaultdict(dict)
        for (pid, explore), rows in to_act.items():
            policy = self.policies[pid]
            obs_batch = to_numpy_batch([r[2] for r in rows], policy.observation_space)
            with self.policy_lock:
                actions, state_outs, extras = policy.compute_actions(obs_batch, explore=explore)
            if state_outs:
                raise NotImplementedError(
                    f"Policy {pid!r} returned RNN state outputs; serving recurrent policies "
                    "through external envs is not supported yet.")
            actions = unbatch(actions)
            extras_rows = {k: unbatch(v) for k, v in (extras or {}).items()}
            if len(actions) != len(rows):
                raise RuntimeError(f"Policy {pid!r} returned {len(actions)} actions for "
                                   f"{len(rows)} observations.")
            for i, (eid, aid, ob) in enumerate(rows):
                action = logged_action(off_policy, eid, aid, actions[i])
                self._episodes[eid].agents[aid].collector.pending = (
                    ob, action, {k: v[i] for k, v in extras_rows.items()}, None, None)
                actions_to_send[eid][aid] = action
        if actions_to_send:
            self.base_env.send_actions(dict(actions_to_send))

    def _emit(self, finished: List[tuple], metrics: List[dict]) -> None:
        output = self._output
        records = {}
        for pid, batch, record in finished:
            records[id(record)] = record
            if batch is None or not record.training_enabled:
                continue
            policy = self.policies[pid]
            if hasattr(policy, "postprocess_trajectory"):
                with self.policy_lock:
                    batch = policy.postprocess_trajectory(batch)
            output.add(pid, batch)
        if not output.batches and not metrics:
            return
        batch = None
        if output.batches:
            output.env_steps = sum(r.unreported_env_steps for r in records.values())
            batch = output.build()
        for record in records.values():
            record.unreported_env_steps = 0
        self.emit(batch, metrics)


def fragment_length(config: dict) -> Optional[int]:
    """Steps per emitted chunk from an algorithm config; None for whole episodes only.

    `batch_mode="complete_episodes"` gives None; otherwise `rollout_fragment_length`
    (default 200; non-positive or non-int values such as "auto" also give 200).
    """
    if config.get("batch_mode") == "complete_episodes":
        return None
    length = config.get("rollout_fragment_length", 200)
    valid = isinstance(length, int) and not isinstance(length, bool) and length > 0
    return length if valid else 200


def _clean_info(info: Optional[dict]) -> dict:
    if not info:
        return {}
    if "training_enabled" in info:
        info = {k: v for k, v in info.items() if k != "training_enabled"}
    return info


def _episode_metrics(record: _EpisodeRecord) -> dict:
    """A RolloutMetrics-like dict of a finished episode."""
    return {
        "episode_length": record.env_steps,
        "episode_reward": float(sum(record.agent_rewards.values())),
        "agent_rewards": dict(record.agent_rewards),
        "custom_metrics": {},
        "perf_stats": {},
        "hist_data": {},
        "media": {},
    }


class _ServingEnv(ExternalEnv):
    """An ExternalEnv driven by remote callers; its thread just lives until stopped."""

    def run(self) -> None:
        self.wait_until_stopped()


class _ServingMultiAgentEnv(ExternalMultiAgentEnv):
    """The multi-agent `_ServingEnv`."""

    def run(self) -> None:
        self.wait_until_stopped()


def make_serving_env(multiagent: bool, action_space: Any, observation_space: Any,
                     max_concurrent: int = 100) -> ExternalEnv:
    """An ExternalEnv (ExternalMultiAgentEnv if `multiagent`) for callers outside its thread."""
    cls = _ServingMultiAgentEnv if multiagent else _ServingEnv
    return cls(action_space, observation_space, max_concurrent)
