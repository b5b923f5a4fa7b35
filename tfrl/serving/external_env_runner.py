"""ExternalEnvRunner: serves an ExternalEnv with policies and turns its episodes into batches.

The loop behind both inference modes of the policy server: the server (remote
inference) and a `PolicyClient` (local inference) each own an ExternalEnv that clients
drive, and a runner thread that steps the generic sampling loop (`SamplingLoop`) over
the env's BaseEnv view: it polls, records each agent's steps with the loop's
`AgentCollector`, calls each policy's `compute_actions` once per poll (per explore
setting) for all waiting agents and sends the actions back. Finished episodes, and
chunks of `rollout_fragment_length` steps of an agent in a long one, are emitted once
per poll as one batch (each chunk postprocessed by its policy) with episode metrics.

What differs from a rollout worker's sampler (`_ServingLoop`, the loop's settings):
- per episode: the client's `training_enabled` decides for the whole episode whether
  its steps are trained on and explored with; bad data (observations or logged actions
  outside the mapped policy's spaces) drop that episode only, with its waiting caller
  told why (`reject_episode`);
- the batch format: raw observations cast to the policy's spaces (no preprocessors,
  filters or bounds checks), the ExternalEnv's string episode ids as `eps_id` and no
  other id columns, `t` counted per agent, each row's info the one that came with its
  observation, chunks cut per agent (`rollout_fragment_length` of its rows), an agent
  that was not observed at the episode's end leaves no last row, and an env step
  counts when an agent recorded a row in it;
- the narrower policy protocol below, called under `policy_lock`; postprocessing is
  `postprocess_trajectory(batch)` alone (no other agents' batches, no callbacks).

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
from typing import Any, Callable, Dict, List, Optional

from tfrl.env.external_env import ExternalEnv
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv
from tfrl.env.space_checks import action_error, observation_error
from tfrl.evaluation.callbacks import DefaultCallbacks
from tfrl.evaluation.sampling.collectors import AgentCollector, FragmentOutput
from tfrl.evaluation.sampling.loop import EnvState, SamplingLoop
from tfrl.evaluation.sampling.ops import PerfStats
from tfrl.policy.policy_config import policy_default
from tfrl.serving.policy_server_checks import space_range_error
from tfrl.utils.spaces.space_utils import to_numpy_batch, unbatch

logger = logging.getLogger(__name__)

# emit(batch or None, episode metrics): called once per poll that finished anything.
EmitFn = Callable[[Any, List[dict]], None]


class _PolicyView:
    """What the sampling loop reads of a worker, for the runner's policies: the policy
    map, a mapping fn in the loop's signature, and no preprocessors or filters."""

    def __init__(self, policies: Dict[str, Any], policy_mapping_fn: Optional[Callable],
                 worker: Any):
        self.policy_map = policies
        self.preprocessors: Dict[str, Any] = {}
        self.filters: Dict[str, Any] = {}
        self._user_fn = policy_mapping_fn
        self._worker = worker

    def policy_mapping_fn(self, agent_id: Any, episode: Any, worker: Any = None) -> str:
        """Calls the user's `fn(agent_id, episode_id, worker=worker)` (the ExternalEnv's
        episode id, not the Episode) and checks the id it returns."""
        if self._user_fn is None:
            return next(iter(self.policy_map))
        pid = self._user_fn(agent_id, episode.env_id, worker=self._worker)
        if pid not in self.policy_map:
            raise ValueError(f"policy_mapping_fn({agent_id!r}, ...) returned unknown policy id "
                             f"{pid!r}; known: {sorted(self.policy_map)}.")
        return pid


class _ServingLoop(SamplingLoop):
    """The generic sampling loop in the external runner's episode rules and batch format
    (see the module docstring); emits through `emit` once per poll."""

    agent_clock = True
    info_with_obs = True
    close_unobserved = False
    step_needs_rows = True
    agent_chunks = True

    def __init__(self, base_env: Any, view: _PolicyView, emit: EmitFn, multiagent: bool,
                 fragment_length: Optional[int], policy_lock: Any):
        super().__init__(
            worker=view, base_env=base_env, extra_batch_callback=lambda batch: None,
            callbacks=DefaultCallbacks(), perf_stats=PerfStats(),
            rollout_fragment_length=float("inf"), count_steps_by="env_steps",
            multiple_episodes_in_batch=True, horizon=None, soft_horizon=False,
            no_done_at_end=False, clip_rewards=None, normalize_actions=False,
            clip_actions=False, observation_fn=None, render=False,
            output=FragmentOutput(multiagent, any_lone_policy=True))
        self.emit = emit
        self.fragment_length = fragment_length
        self.policy_lock = policy_lock
        self._finished: List[tuple] = []  # (EnvState, policy id, chunk or None) of this poll

    def step(self) -> None:
        """One poll: record, act, send, then emit what finished."""
        super().step()
        self._emit()

    def forget(self, env_id: str) -> None:
        """Drops the episode `env_id` (ended, rejected or expired) and its rows."""
        self._active.pop(env_id, None)
        self._env_order.pop(env_id, None)  # an ExternalEnv never reuses an episode id

    # ---- record: per-episode decisions and checks ------------------------------------
    def _process_poll(self, obs, rewards, terms, truncs, infos, to_eval,
                      off_policy=None) -> None:
        admitted = {}
        for eid, agent_obs in obs.items():
            state = self.env_state(eid)
            if state.new:  # the client's training_enabled holds for the whole episode
                state.training = all(i.get("training_enabled", True)
                                     for i in infos[eid].values())
            problem = self._bad_data(state, agent_obs, (off_policy or {}).get(eid, {}))
            if problem:
                self._reject(eid, problem)
                continue
            admitted[eid] = agent_obs
            infos[eid] = {aid: _clean_info(info) for aid, info in infos[eid].items()}
        super()._process_poll(admitted, rewards, terms, truncs, infos, to_eval)

    def _end_episode(self, env_id, state: EnvState, hit_horizon: bool, to_eval) -> None:
        super()._end_episode(env_id, state, hit_horizon, to_eval)
        self.forget(env_id)

    def _bad_data(self, state: EnvState, agent_obs: dict, off_policy: dict) -> Optional[str]:
        """Why an agent's observation or logged action does not fit its policy, or None."""
        for aid, ob in agent_obs.items():
            policy = self.policy_map[state.episode.policy_for(aid)]
            problem = (observation_error(policy.observation_space, ob)
                       or space_range_error(policy.observation_space, ob, "observation"))
            if not problem and aid in off_policy:
                problem = (action_error(policy.action_space, off_policy[aid])
                           or space_range_error(policy.action_space, off_policy[aid], "action"))
            if problem:
                return f"agent {aid!r}: {problem}"
        return None

    def _reject(self, eid: str, problem: str) -> None:
        self.forget(eid)
        message = f"Episode {eid} was dropped because of bad data: {problem}."
        logger.warning(message)
        self.base_env.reject_episode(eid, ValueError(message))

    def _preprocess_groups(self, groups: Dict[str, list]) -> dict:
        return {(eid, aid): (raw, raw) for items in groups.values() for eid, aid, raw in items}

    def new_collector(self, episode: Any, agent_id: Any, pid: str) -> AgentCollector:
        policy = self.policy_map[pid]
        return AgentCollector(episode.agent_index(agent_id), pid, (False, False),
                              spaces=(policy.observation_space, policy.action_space),
                              id_columns=False)

    def _explore_for(self, state: EnvState, pid: str) -> bool:
        config = getattr(self.policy_map[pid], "config", None) or {}
        return state.training and bool(config.get("explore", policy_default("explore")))

    def _agent_chunk_due(self, coll: AgentCollector) -> bool:
        return coll.cut_due(self.fragment_length)

    def _chunk(self, episode: Any, coll: AgentCollector) -> Any:
        return coll.take_chunk(episode.env_id)

    def _postprocess_chunks(self, state: EnvState, chunks: Dict[Any, tuple]) -> None:
        # Postprocessed when the poll's actions are sent (`_emit`); an episode with no
        # chunk still counts its steps in the poll's batch.
        self._finished.extend((state, pid, batch) for pid, batch in chunks.values())
        if not chunks:
            self._finished.append((state, None, None))

    # ---- act: the narrower policy protocol -------------------------------------------
    def _compute_actions(self, to_eval: Dict[tuple, list]) -> Dict[tuple, tuple]:
        results = {}
        for (pid, explore), items in to_eval.items():
            policy = self.policy_map[pid]
            obs_batch = to_numpy_batch([item[2] for item in items], policy.observation_space)
            with self.policy_lock:
                actions, state_outs, extras = policy.compute_actions(obs_batch, explore=explore)
            if state_outs:
                raise NotImplementedError(
                    f"Policy {pid!r} returned RNN state outputs; serving recurrent policies "
                    "through external envs is not supported yet.")
            count = len(unbatch(actions))
            if count != len(items):
                raise RuntimeError(f"Policy {pid!r} returned {count} actions for "
                                   f"{len(items)} observations.")
            results[pid, explore] = ((actions, [], extras or {}), None)
        return results

    # ---- emit: one batch per poll ------------------------------------------------------
    def _emit(self) -> None:
        finished, self._finished = self._finished, []
        metrics = [_episode_metrics(m) for m in self.ready]
        self.ready = []
        output = self.output
        states: Dict[int, EnvState] = {}
        for state, pid, batch in finished:
            states[id(state)] = state
            if batch is None or not state.training:
                continue
            policy = self.policy_map[pid]
            if hasattr(policy, "postprocess_trajectory"):
                with self.policy_lock:
                    batch = policy.postprocess_trajectory(batch)
            output.add(pid, batch)
        if not output.batches and not metrics:
            return
        batch = None
        if output.batches:
            # The env steps of the episodes in the batch since they were last in one.
            output.env_steps = sum(s.episode.length - s.reported for s in states.values())
            batch = output.build()
        for state in states.values():
            state.reported = state.episode.length
        self.emit(batch, metrics)


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
        self.policy_lock = policy_lock or threading.Lock()
        self.error: Optional[BaseException] = None
        self.episode_idle_timeout = episode_idle_timeout
        self.expired_episodes = 0
        self._next_expiry_check = 0.0
        self._sampling = _ServingLoop(base_env, _PolicyView(policies, policy_mapping_fn, worker),
                                      emit, multiagent, rollout_fragment_length,
                                      self.policy_lock)
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
        """Drops the env's idle episodes and their rows (at most ~10 checks per
        `episode_idle_timeout`)."""
        timeout = self.episode_idle_timeout
        now = time.monotonic()
        if timeout is None or now < self._next_expiry_check:
            return
        self._next_expiry_check = now + min(timeout / 10, 1.0)
        expired = self.base_env.external_env.expire_idle_episodes(timeout)
        for eid in expired:
            self._sampling.forget(eid)
        if expired:
            self.expired_episodes += len(expired)
            logger.warning("Dropped %d episode(s) idle for more than %s s (%d so far): %s",
                           len(expired), timeout, self.expired_episodes,
                           ", ".join(e[:40] for e in expired[:5]))

    def _ended_episodes_pending(self) -> bool:
        return self.base_env.external_env.has_ended_episodes()

    def run_once(self) -> None:
        """Polls once, records the new data, computes and sends actions, emits batches."""
        self._sampling.step()


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


def _episode_metrics(metrics: Any) -> dict:
    """The dict a client uploads for a finished episode's RolloutMetrics (its reward the
    sum of the agents' rewards)."""
    return {
        "episode_length": metrics.episode_length,
        "episode_reward": float(sum(metrics.agent_rewards.values())),
        "agent_rewards": dict(metrics.agent_rewards),
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
