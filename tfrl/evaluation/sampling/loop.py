"""The generic sampling loop over any BaseEnv (multi-agent, external, vectorized).

One iteration: `poll()` the env; preprocess (worker.preprocessors) and filter
(worker.filters) the observations batch-wise per policy; record the completed steps
per agent; end episodes (env done or horizon); cut the fragment when it has
`rollout_fragment_length` steps (truncate mode); compute the actions of all ready
agents of a policy in ONE call per policy (one TFRunBuilder call when several TF
policies act); unsquash/clip them and `send_actions()`.

A sub-env whose episode ended is not reset by the loop: tfrl's BaseEnvs reset it on
the next `poll()` (reporting the reset observation with reward None). Only the horizon
resets a sub-env explicitly (`try_reset`).

`SamplingLoop.run()` is a generator of SampleBatch/MultiAgentBatch fragments and of one
`RolloutMetrics` per finished episode; `step()` is one iteration. `tfrl.serving`'s
external runner is this loop with other episode rules and batch format (a subclass
that sets the class switches and overrides the small hooks below).
"""

from typing import Any, Dict, Iterator, Optional

import numpy as np
import tree

from tfrl.env.base_env import ASYNC_RESET_RETURN
from tfrl.env.space_checks import stack_values
from tfrl.env.vector_transitions import SIMPLE_SPACES
from tfrl.evaluation.sampling.collectors import AgentCollector, postprocess_episode_chunks
from tfrl.evaluation.sampling.loop_core import LoopCore
from tfrl.evaluation.sampling.ops import check_reward, logged_action, now, read_only
from tfrl.utils.spaces.space_utils import to_numpy_batch


def hard_horizon_problem(base_env: Any, horizon: Any, soft_horizon: bool) -> Optional[str]:
    """Why a hard `horizon` cannot work on `base_env` (None if it can, or may).

    At the horizon the sampler truncates the episode and resets that sub-env alone
    (RLlib's semantics); a vector env that cannot reset single sub-envs on demand can
    only do so if its own step limit ends every episode first.
    """
    vector_env = getattr(base_env, "vector_env", None)
    if not horizon or horizon == float("inf") or soft_horizon or getattr(
            vector_env, "can_reset_sub_envs", True):
        return None
    limit = getattr(vector_env, "max_episode_steps", None)
    if limit is not None and limit <= horizon:
        return None  # the env truncates its episodes before the horizon
    env_name = type(getattr(vector_env, "env", vector_env)).__name__
    return (
        f"horizon={horizon} (a hard horizon) truncates an episode after {horizon} steps and "
        f"resets that sub-env alone, which {env_name} cannot do: it resets a sub-env only "
        "inside step(), after its episode ended"
        + ("" if limit is None else f" (its own limit is max_episode_steps={limit})")
        + f". Let the env cut episodes: gymnasium.make_vec(env_id, num_envs, "
        f"vectorization_mode='vector_entry_point', max_episode_steps={horizon}) truncates "
        f"them after {horizon} steps as the horizon would; or use "
        "vectorization_mode='sync' (its sub-envs reset one by one); or set soft_horizon=True "
        "to end episodes at the horizon without resetting the env."
    )


class EnvState:
    """An active episode of one sub-env (`episode`) and its agents' `collectors`.

    `order`: when the sub-env was first seen (fragments are cut in this order); `new`: no
    step recorded yet. For the external runner: `training` (trained on, decided for the
    whole episode) and `reported` (`episode.length` when its steps were last counted in
    an emitted batch).
    """

    __slots__ = ("episode", "collectors", "order", "new", "training", "reported")

    def __init__(self, episode: Any, order: int):
        self.episode = episode
        self.collectors: Dict[Any, AgentCollector] = {}
        self.order = order
        self.new = True
        self.training = True
        self.reported = 0


class SamplingLoop(LoopCore):
    """The generic loop (see the module docstring); arguments as `LoopCore`.

    One `step()` has three stages: record (`_process_poll`: episodes, rows, episode
    ends, fragment cuts), act (`_compute_actions`, `_actions_to_send`) and send. The
    class switches below choose the batch format: the defaults are the sampler's
    (RLlib's); the external runner sets the others.
    """

    # A row's `t`: the agent's own step count (True) or the episode's env step (False).
    agent_clock = False
    # A row's info: the one that came with its `obs` (True) or with `new_obs` (False).
    info_with_obs = False
    # At an episode's end, a last row for each agent that acted but was not observed.
    close_unobserved = True
    # An env step counts only if an agent recorded a row in it (else every poll of a
    # running episode does).
    step_needs_rows = False
    # Cut each agent's chunk when the agent is done or `_agent_chunk_due` (per-agent
    # fragments), instead of cutting every agent at episode ends and fragment cuts.
    agent_chunks = False

    def __init__(self, **settings: Any):
        super().__init__(**settings)
        self._active: Dict[Any, EnvState] = {}
        # Each env id's place in the cut order: the order in which ids first appeared
        # (a counter, not len(), so that forgetting ended ids keeps the others' places).
        self._env_order: Dict[Any, int] = {}
        self._next_order = 0

    def run(self) -> Iterator[Any]:
        """Yields fragments (SampleBatch/MultiAgentBatch) and RolloutMetrics, forever."""
        while True:
            self.step()
            if self.ready:
                yield from self.take_ready()

    def step(self) -> None:
        """Polls the env once, records what it returned, computes and sends actions;
        finished fragments and episode metrics go to `ready`."""
        perf = self.perf_stats
        t0 = now()
        obs, rewards, terms, truncs, infos, off_policy = self.base_env.poll()
        t1 = now()
        perf.env_wait_time += t1 - t0
        to_eval: Dict[tuple, list] = {}
        self._process_poll(obs, rewards, terms, truncs, infos, to_eval, off_policy)
        t2 = now()
        perf.raw_obs_processing_time += t2 - t1
        results = self._compute_actions(to_eval)
        t3 = now()
        perf.inference_time += t3 - t2
        actions = self._actions_to_send(to_eval, results, off_policy)
        for env_id in obs:
            # A sub-env whose episode goes on though none of its observed agents
            # acts (all of them are done) still steps, with no actions (as RLlib).
            if env_id in self._active and env_id not in actions:
                actions[env_id] = {}
        if actions:
            self.base_env.send_actions(actions)
        if self.render:
            self.base_env.try_render()
        perf.action_processing_time += now() - t3
        perf.iters += 1

    # ------------------------------------------------------------ observations
    def env_state(self, env_id: Any) -> EnvState:
        """The active episode of `env_id`, started if there is none."""
        state = self._active.get(env_id)
        if state is None:
            order = self._env_order.get(env_id)
            if order is None:
                order = self._env_order[env_id] = self._next_order
                self._next_order += 1
            state = self._active[env_id] = EnvState(self.new_episode(env_id), order)
        return state

    def _process_poll(self, obs, rewards, terms, truncs, infos, to_eval,
                      off_policy=None) -> None:
        # Phase 1: episodes, observation_fn, and the raw observations grouped by policy.
        groups: Dict[str, list] = {}
        env_obs = {}
        for env_id, agent_obs in obs.items():
            state = self.env_state(env_id)
            if self.observation_fn is not None:
                agent_obs = self._apply_observation_fn(agent_obs, state.episode)
            env_obs[env_id] = agent_obs
            for agent_id, raw in agent_obs.items():
                groups.setdefault(state.episode.policy_for(agent_id), []).append(
                    (env_id, agent_id, raw))
        filtered = self._preprocess_groups(groups)
        # Phase 2: per sub-env, in poll order: rows, episode ends, fragment cuts.
        for env_id, agent_obs in env_obs.items():
            self._process_env(env_id, agent_obs, filtered, rewards.get(env_id, {}),
                              terms.get(env_id, {}), truncs.get(env_id, {}),
                              infos.get(env_id, {}), to_eval)

    def _apply_observation_fn(self, agent_obs: dict, episode: Any) -> dict:
        result = self.observation_fn(agent_obs=agent_obs, worker=self.worker,
                                     base_env=self.base_env, policies=self.policy_map,
                                     episode=episode)
        if not isinstance(result, dict):
            raise ValueError(
                "observation_fn must return a dict agent_id -> observation. Received: "
                f"{type(result).__name__}. Return the (possibly rewritten) agent_obs dict."
            )
        return result

    def _preprocess_groups(self, groups: Dict[str, list]) -> dict:
        """`(env_id, agent_id) -> (filtered obs, raw obs)`; one batched preprocessor
        and filter call per policy."""
        out = {}
        for pid, items in groups.items():
            raws = [raw for _, _, raw in items]
            rows = self.preprocess_batch(pid, raws, lambda i: (
                f"env {items[i][0]!r}, agent {items[i][1]!r}", raws[i]))
            for (env_id, agent_id, raw), row in zip(items, rows):
                out[env_id, agent_id] = (row, raw)
        return out

    def preprocess_batch(self, pid: str, raws: list, describe_row) -> np.ndarray:
        """Checks, preprocesses and filters a list of raw observations of policy `pid`."""
        checker, prep, obs_filter = self.policy_tools(pid)
        space = checker.space
        if raws and isinstance(space, SIMPLE_SPACES):  # integers the cast would wrap: refused
            batch = stack_values(raws, space, lambda i: f"the observation of {describe_row(i)[0]}")
        else:
            batch = to_numpy_batch(raws, space)
        checker.check(batch, describe_row)
        if prep is not None:
            batch = prep.transform_batch(batch)
        return obs_filter.apply_batch(batch) if obs_filter is not None else batch

    def _process_env(self, env_id, agent_obs, filtered, env_rewards, env_terms,
                     env_truncs, env_infos, to_eval) -> None:
        state = self._active[env_id]
        episode = state.episode
        stepped = not state.new
        all_term = bool(env_terms.get("__all__", False))
        all_trunc = bool(env_truncs.get("__all__", False))
        if stepped and not self.step_needs_rows:
            episode.length += 1
        for agent_id, r in env_rewards.items():
            if r is not None:
                check_reward(r, env_id, agent_id, episode.length)
        episode.add_agent_rewards(env_rewards)
        hit_horizon = bool(stepped and self.horizon and episode.length >= self.horizon
                           and not (all_term or all_trunc))
        episode_end = all_term or all_trunc or hit_horizon
        rows = 0
        for agent_id, reward in env_rewards.items():
            coll = state.collectors.get(agent_id)
            if agent_id not in agent_obs and coll is not None and reward is not None:
                coll.pending_reward += reward
        # As RLlib: the env's common info under "__common__", each poll.
        episode.set_last_info("__common__", env_infos.get("__common__", {}))
        # A new episode's on_episode_start sees the raw reset observations and infos only
        # (RLlib's order): its observations and done flags are recorded after the hook.
        deferred = []
        for agent_id, raw in agent_obs.items():
            obs_row, _ = filtered[env_id, agent_id]
            coll = state.collectors.get(agent_id)
            pid = episode.policy_for(agent_id)
            if coll is None:
                coll = state.collectors[agent_id] = self.new_collector(episode, agent_id, pid)
            own_term = bool(env_terms.get(agent_id, False)) or all_term
            own_trunc = bool(env_truncs.get(agent_id, False)) or all_trunc
            term, trunc = own_term, own_trunc or hit_horizon
            info = env_infos.get(agent_id, {})
            if coll.pending is not None:
                reward = env_rewards.get(agent_id)
                # RLlib records done=False at a soft horizon (the env goes on; the
                # trajectory bootstraps from its next observation) and with no_done_at_end.
                keep = not ((self.no_done_at_end and episode_end)
                            or (hit_horizon and self.soft_horizon))
                coll.add_row(obs_row, 0.0 if reward is None else reward, term and keep,
                             trunc and keep,
                             episode.last_info_for(agent_id) if self.info_with_obs else info,
                             coll.steps if self.agent_clock else episode.length - 1)
                rows += 1
            episode.set_last_raw_obs(agent_id, raw)
            episode.set_last_info(agent_id, info)
            if state.new:
                deferred.append((agent_id, obs_row, term, trunc))
            else:
                episode.set_last_observation(agent_id, obs_row)
                episode.set_last_done(agent_id, term, trunc)
            done = own_term or own_trunc or (hit_horizon and not self.soft_horizon)
            if self.agent_chunks and (done or self._agent_chunk_due(coll)):
                self._postprocess_chunks(state, {agent_id: (pid, self._chunk(episode, coll))})
                if done:
                    del state.collectors[agent_id]
            if not done:
                to_eval.setdefault((pid, self._explore_for(state, pid)), []).append(
                    (env_id, agent_id, obs_row))
        if (episode_end and not (hit_horizon and self.soft_horizon)
                and self.close_unobserved):
            rows += self._close_unobserved(state, agent_obs, all_term,
                                           all_trunc or hit_horizon)
        if self.step_needs_rows:
            stepped = rows > 0
            episode.length += stepped
        # Every env step counts, also one with no agent observed (or none with a row),
        # as in RLlib: an env that observes no agent for a while still fills fragments.
        self.count_steps(1 if stepped else 0, rows)
        if state.new:
            state.new = False
            self.episode_started(episode, env_id)
            for agent_id, obs_row, term, trunc in deferred:
                episode.set_last_observation(agent_id, obs_row)
                episode.set_last_done(agent_id, term, trunc)
        elif self.callbacks_step:
            self.episode_step(episode, env_id)
        if episode_end:
            self._end_episode(env_id, state, hit_horizon, to_eval)
        if self.fragment_full():
            self._cut_fragment()

    def _close_unobserved(self, state: EnvState, agent_obs: dict, term: bool,
                          trunc: bool) -> int:
        """At the episode's end, gives each agent that acted but got no observation since
        (still alive when the episode ended) a last row, as RLlib does: its next
        observation is its last one, with the episode's done flags. Returns the rows
        added."""
        episode = state.episode
        keep = not self.no_done_at_end
        added = 0
        for agent_id, coll in state.collectors.items():
            if coll.pending is None or agent_id in agent_obs:
                continue
            coll.add_row(episode.last_observation_for(agent_id), 0.0, term and keep,
                         trunc and keep, {}, episode.length - 1)
            added += 1
        return added

    # ---------------------------------------------------------------- episodes
    def new_collector(self, episode: Any, agent_id: Any, pid: str) -> AgentCollector:
        """The collector of an agent's rows, made at its first observation."""
        return AgentCollector(episode.agent_index(agent_id), pid, self.prev_columns(pid))

    def _explore_for(self, state: EnvState, pid: str) -> Any:
        """The `explore` argument of the agent's `compute_actions` call."""
        return self.explore

    def _agent_chunk_due(self, coll: AgentCollector) -> bool:
        """With `agent_chunks`: whether a running agent's chunk is cut now."""
        return False

    def _chunk(self, episode: Any, coll: AgentCollector) -> Any:
        """The agent's rows since its last chunk as a SampleBatch (None if none)."""
        if not coll.rows:
            return None
        return coll.build(episode.episode_id, episode.env_id, self.unroll_id(),
                          self.clip_rewards, self.zero_action(coll.policy_id))

    def _build_chunks(self, state: EnvState) -> Dict[Any, tuple]:
        return {agent_id: (coll.policy_id, self._chunk(state.episode, coll))
                for agent_id, coll in state.collectors.items() if coll.rows}

    def _postprocess_chunks(self, state: EnvState, chunks: Dict[Any, tuple]) -> None:
        """Postprocesses chunks of one episode (agent id -> (policy id, batch)) into the
        output (called at episode ends and fragment cuts, and per agent with
        `agent_chunks`)."""
        if chunks:
            postprocess_episode_chunks(chunks, state.episode, self.policy_map,
                                       self.callbacks, self.worker, self.output)

    def _end_episode(self, env_id, state: EnvState, hit_horizon: bool, to_eval) -> None:
        episode = state.episode
        self._postprocess_chunks(state, self._build_chunks(state))
        self.episode_finished(episode, env_id)
        if hit_horizon and self.soft_horizon:
            episode.soft_reset()
            for agent_id, coll in state.collectors.items():
                coll.restart()
                episode.set_last_done(agent_id, False, False)
            return  # (no on_episode_start: the same Episode goes on, as in RLlib)
        del self._active[env_id]
        if getattr(self.base_env, "env_ids_are_episode_ids", False):
            self._env_order.pop(env_id, None)  # the id never comes back: forget it
        for key in list(to_eval):
            to_eval[key] = [item for item in to_eval[key] if item[0] != env_id]
        if hit_horizon:
            self._reset_for_horizon(env_id, to_eval)

    def _reset_for_horizon(self, env_id, to_eval) -> None:
        try:
            result = self.base_env.try_reset(env_id)
        except RuntimeError as e:
            raise ValueError(
                f"horizon={self.horizon} needs to reset sub-env {env_id!r} alone, which this "
                f"env cannot do: {e} Use the env's own time limit (e.g. max_episode_steps) "
                "or soft_horizon=True instead."
            ) from e
        if result is None:
            raise ValueError(
                f"Setting episode horizon requires reset() support from the environment: "
                f"try_reset({env_id!r}) of {type(self.base_env).__name__} returned None."
            )
        if isinstance(result, str) and result == ASYNC_RESET_RETURN:
            return  # the reset observation arrives with a later poll()
        reset_obs, reset_infos = result
        for eid, agent_obs in reset_obs.items():
            self._active.pop(eid, None)
            self._process_poll({eid: agent_obs}, {}, {}, {}, reset_infos, to_eval)

    def _cut_fragment(self) -> None:
        for state in sorted(self._active.values(), key=lambda s: s.order):
            self._postprocess_chunks(state, self._build_chunks(state))
        self.emit_fragment()

    # ------------------------------------------------------------------ acting
    def _compute_actions(self, to_eval: Dict[tuple, list]) -> Dict[tuple, tuple]:
        """`(policy id, explore) -> ((actions, state_outs, extras), state_ins)` for the
        rows `to_eval` holds under that key."""
        inputs = {}
        for key, items in to_eval.items():
            pid = key[0]
            policy = self.policy_map[pid]
            states = [self._active[env_id].episode.rnn_state_for(agent_id)
                      for env_id, agent_id, _ in items]
            state_batches = ([np.stack(column) for column in zip(*states)]
                             if states and states[0] else None)
            prev_a, prev_r = self.prev_columns(pid)
            prev_action_batch = prev_reward_batch = None
            if prev_a or prev_r:
                prevs = [self._active[env_id].collectors[agent_id].prev_inputs(
                    self.zero_action(pid), self.clip_rewards) for env_id, agent_id, _ in items]
                if prev_a:
                    prev_action_batch = to_numpy_batch([p[0] for p in prevs])
                if prev_r:
                    prev_reward_batch = np.asarray([p[1] for p in prevs], np.float32)
            obs_batch = np.stack([o for _, _, o in items])
            inputs[key] = (policy, obs_batch, state_batches, prev_action_batch,
                           prev_reward_batch, items)
        if len(inputs) > 1 and all(self.run_builder_ok(p[0]) for p in inputs.values()):
            return self.run_with_builder(inputs)
        return {key: (policy.compute_actions(
                    obs, state_batches, prev_action_batch=pa, prev_reward_batch=pr,
                    episodes=[self._active[e].episode for e, _, _ in items],
                    explore=key[1], timestep=policy.global_timestep), state_batches)
                for key, (policy, obs, state_batches, pa, pr, items) in inputs.items()}

    def _actions_to_send(self, to_eval, results, off_policy) -> Dict[Any, dict]:
        send: Dict[Any, dict] = {}
        for key, items in to_eval.items():
            pid = key[0]
            (actions, state_outs, extras), state_ins = results[key]
            if isinstance(actions, list):  # one action per row (as RLlib reads a list)
                actions = np.asarray(actions)
            env_actions = self.action_processor(pid)(actions)
            simple = not isinstance(actions, (dict, tuple, list))
            for i, (env_id, agent_id, obs_row) in enumerate(items):
                state = self._active[env_id]
                episode = state.episode
                action = actions[i] if simple else tree.map_structure(lambda a: a[i], actions)
                env_action = read_only(env_actions[i]) if simple else tree.map_structure(
                    lambda a: read_only(a[i]), env_actions)
                action = logged_action(off_policy, env_id, agent_id, action)
                row_extras = {k: v[i] for k, v in extras.items()}
                s_in = [s[i] for s in state_ins] if state_ins else None
                s_out = [s[i] for s in state_outs] if state_outs else None
                if s_out:
                    episode.set_rnn_state(agent_id, s_out)
                episode.set_last_action(agent_id, action)
                episode.set_last_extra_action_outs(agent_id, row_extras)
                state.collectors[agent_id].pending = (obs_row, action, row_extras, s_in, s_out)
                send.setdefault(env_id, {})[agent_id] = env_action
        return send

