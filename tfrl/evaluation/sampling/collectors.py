"""Turning recorded steps into postprocessed batches: per-agent trajectory chunks, their
postprocessing per episode, and the per-policy output of one sampled fragment.

Both sampling loops (the generic `loop` and the array-based `vector_loop`)
produce per-agent trajectory chunks as column dicts and hand them to
`postprocess_episode_chunks`, so the batches they build are identical.
`tfrl.serving`'s external runner (the generic loop in the external runner's batch
format) uses them with the hooks `spaces`, `id_columns` and `any_lone_policy`.

A chunk whose agent's last info says `training_enabled=False` (RLlib's rule, used by
policy clients and by envs that mark steps not to learn from) is left out: not
postprocessed, not in the batch; its steps still count as sampled.

Columns of a chunk before postprocessing: `obs`, `new_obs`, `actions`,
`rewards` (float32, clipped), `terminateds`, `truncateds`, `dones`, `infos`, `eps_id`
(int64), `unroll_id`, `agent_index`, `t`, `env_id`, `prev_actions`/`prev_rewards` (if
the policy's view requirements name them), the policy's extra action outputs, and
`state_in_<i>`/`state_out_<i>` for recurrent policies.
"""

from typing import Any, Dict, List, Optional

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.evaluation.sampling.ops import clip_rewards_array
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, SampleBatch, concat_samples
from tfrl.utils.spaces.space_utils import batch as stack_structs
from tfrl.utils.spaces.space_utils import to_numpy_batch


def wants_prev_columns(policy: Any) -> tuple:
    """`(prev_actions?, prev_rewards?)`: which of the columns the policy's view
    requirements name (they are recorded and passed to `compute_actions`)."""
    requirements = getattr(policy, "view_requirements", None) or {}
    return Columns.PREV_ACTIONS in requirements, Columns.PREV_REWARDS in requirements


def shifted(values: np.ndarray, first: Any) -> np.ndarray:
    """`[first, values[0], ..., values[-2]]` (prev_actions/prev_rewards of a chunk)."""
    values = np.asarray(values)
    out = np.empty_like(values)
    out[1:] = values[:-1]
    out[0] = first
    return out


_SHORTCUT_OK: Optional[bool] = None  # does `sample_batch_from_columns`' shortcut hold?
_EMPTY_STATE: Dict[str, Any] = {}  # the attributes of a new, empty SampleBatch
_MUTABLE_STATE: List[str] = []  # those of them that hold a set, dict or list


def sample_batch_from_columns(data: Dict[str, Any], count: int) -> SampleBatch:
    """`SampleBatch(data)` for columns known to be well-formed (numpy arrays of `count`
    rows, no sequences), without re-validating every column.

    The first call builds the batch both ways and keeps using the shortcut only if it
    gives the same object state as the constructor.
    """
    global _SHORTCUT_OK
    if _SHORTCUT_OK is False:
        return SampleBatch(data)
    if not _EMPTY_STATE:
        _EMPTY_STATE.update(vars(SampleBatch()))
        _MUTABLE_STATE.extend(k for k, v in _EMPTY_STATE.items()
                              if isinstance(v, (set, dict, list)))
    fast = SampleBatch.__new__(SampleBatch)
    state = fast.__dict__
    state.update(_EMPTY_STATE)
    for key in _MUTABLE_STATE:  # new empty containers, not the shared ones
        state[key] = _EMPTY_STATE[key].copy()
    dict.update(fast, data)
    fast.count = count
    if _SHORTCUT_OK is None:
        reference = SampleBatch(dict(data))
        _SHORTCUT_OK = (reference.count == count and list(reference) == list(fast)
                        and all(dict.__getitem__(reference, k) is v for k, v in data.items())
                        and vars(reference).keys() == vars(fast).keys()
                        and all(_same_attr(vars(reference)[k], vars(fast)[k])
                                for k in vars(reference)))
        return reference
    return fast


def _same_attr(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return a is b


def _stack(values: list, space: Any = None) -> Any:
    if space is not None:
        return to_numpy_batch(values, space)
    first = values[0]
    if isinstance(first, (dict, tuple)):
        return stack_structs(values)
    return np.stack(values) if isinstance(first, np.ndarray) else np.asarray(values)


def _object_array(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class AgentCollector:
    """Rows of one agent in one episode, since the last chunk was built.

    Args:
        agent_index: The agent's index in its episode.
        policy_id: The agent's policy.
        prev_columns: `(record prev_actions, record prev_rewards)`.
        spaces: `(observation space, action space)` to batch `obs`/`new_obs` and
            `actions` in (their dtypes), for raw env values; None stacks them as given.
        id_columns: Write the sampler's id columns (`eps_id` as int64, `unroll_id`,
            `agent_index`, `env_id`); False writes `eps_id` as given (an ExternalEnv's
            string ids) and leaves the others out (the external runner's batches).
    """

    __slots__ = ("agent_index", "policy_id", "prev_columns", "spaces", "id_columns", "rows",
                 "steps", "last_action", "last_reward", "pending", "pending_reward")

    def __init__(self, agent_index: int, policy_id: str, prev_columns: tuple,
                 spaces: Optional[tuple] = None, id_columns: bool = True):
        self.agent_index = agent_index
        self.policy_id = policy_id
        self.prev_columns = prev_columns
        self.spaces = spaces or (None, None)
        self.id_columns = id_columns
        self.rows: List[tuple] = []
        self.steps = 0  # rows added in the episode (all chunks)
        self.last_action: Any = None  # the action before the chunk's first row
        self.last_reward = 0.0
        # (obs, action, extras, state_in, state_out) waiting for the next observation.
        self.pending: Optional[tuple] = None
        self.pending_reward = 0.0  # rewards given while the agent was not observed

    def restart(self) -> None:
        """Starts the agent's next (soft-reset) episode: no previous action or reward."""
        self.last_action, self.last_reward = None, 0.0

    def add_row(self, new_obs: Any, reward: float, terminated: bool, truncated: bool,
                info: dict, t: int) -> None:
        """Completes the pending step with what the env returned for it.

        `t` is the row's timestep: the env step of the episode at which `new_obs`
        arrived, minus one (RLlib's multi-agent `t`: env steps, not the agent's own
        step count, so agents acting in turn have gaps in `t`).
        """
        obs, action, extras, state_in, state_out = self.pending
        self.rows.append((obs, new_obs, action, reward + self.pending_reward, terminated,
                          truncated, info, extras, state_in, state_out, t))
        self.pending = None
        self.pending_reward = 0.0
        self.steps += 1

    def prev_inputs(self, zero_action: Any, clip_rewards: Any) -> tuple:
        """`(previous action, previous reward)` of the agent's next step (zeros at the
        start of an episode), as `compute_actions` receives them."""
        if self.rows:
            row = self.rows[-1]
            return row[2], float(clip_rewards_array(np.asarray([row[3]]), clip_rewards)[0])
        action = zero_action if self.last_action is None else self.last_action
        return action, float(self.last_reward)

    def cut_due(self, fragment_length: Optional[int]) -> bool:
        """Whether the agent's own rows fill a fragment of `fragment_length` steps
        (per-agent cuts, as the external runner emits; None or 0 never cuts)."""
        return bool(fragment_length) and len(self.rows) >= fragment_length

    def take_chunk(self, eps_id: Any) -> Optional[SampleBatch]:
        """The rows since the last chunk as a SampleBatch with `eps_id` as episode and
        env id, no reward clipping and no previous action (None if there are no rows);
        starts a new, empty chunk."""
        return self.build(eps_id, eps_id, 0, None, None) if self.rows else None

    def build(self, eps_id: int, env_id: Any, unroll_id: int,
              clip_rewards: Any, zero_action: Any) -> SampleBatch:
        """The chunk's columns as a SampleBatch; starts a new, empty chunk."""
        rows, self.rows = self.rows, []
        n = len(rows)
        (obs, new_obs, actions, rewards, terms, truncs, infos, extras, s_in, s_out,
         ts) = zip(*rows)
        obs_space, action_space = self.spaces
        actions = _stack(list(actions), action_space)
        raw_rewards = np.asarray(rewards, np.float64)
        terms = np.asarray(terms, bool)
        truncs = np.asarray(truncs, bool)
        data = {
            Columns.OBS: _stack(list(obs), obs_space),
            Columns.NEXT_OBS: _stack(list(new_obs), obs_space),
            Columns.ACTIONS: actions,
            Columns.REWARDS: clip_rewards_array(raw_rewards, clip_rewards),
            Columns.TERMINATEDS: terms,
            Columns.TRUNCATEDS: truncs,
            Columns.DONES: terms | truncs,
            Columns.INFOS: _object_array(list(infos)),
            Columns.EPS_ID: np.full(n, eps_id, np.int64 if self.id_columns else None),
            Columns.UNROLL_ID: np.full(n, unroll_id, np.int64),
            Columns.AGENT_INDEX: np.full(n, self.agent_index, np.int64),
            Columns.T: np.asarray(ts, np.int64),
            Columns.ENV_ID: np.full(n, env_id) if isinstance(env_id, (int, np.integer))
            else _object_array([env_id] * n),
        }
        if not self.id_columns:
            for key in (Columns.UNROLL_ID, Columns.AGENT_INDEX, Columns.ENV_ID):
                del data[key]
        if self.prev_columns[0]:
            first = zero_action if self.last_action is None else self.last_action
            data[Columns.PREV_ACTIONS] = tree.map_structure(
                lambda a, f: shifted(a, f), actions, first)
        if self.prev_columns[1]:
            data[Columns.PREV_REWARDS] = shifted(data[Columns.REWARDS], self.last_reward)
        self.last_action = tree.map_structure(lambda a: a[-1], actions)
        self.last_reward = data[Columns.REWARDS][-1]
        if extras[0]:
            for key in extras[0]:
                data[key] = _stack([e[key] for e in extras])
        for i in range(len(s_in[0] or ())):
            data[f"state_in_{i}"] = np.stack([s[i] for s in s_in])
            data[f"state_out_{i}"] = np.stack([s[i] for s in s_out])
        return sample_batch_from_columns(data, n)


def training_enabled(batch: SampleBatch) -> bool:
    """Whether a trajectory chunk may be trained on: False if the info of its last row
    (the agent's last info when the chunk was cut) holds a false `training_enabled`
    (RLlib's sampler skips such chunks at postprocessing)."""
    infos = batch.get(Columns.INFOS)
    if infos is None or not len(infos):
        return True
    last = infos[-1]
    return not (isinstance(last, dict) and not last.get("training_enabled", True))


def postprocess_episode_chunks(batches: Dict[Any, tuple], episode: Any, policy_map: Any,
                               callbacks: Any, worker: Any, output: "FragmentOutput") -> None:
    """Postprocesses the chunks of one episode's agents and adds them to `output`.

    Each agent's policy sees the other agents' chunks (`other_agent_batches`,
    agent id -> `(policy, batch)`); then `callbacks.on_postprocess_trajectory` runs for
    each agent in order of `batches`. Chunks not to train on (`training_enabled`) are
    only shown to the other agents.

    Args:
        batches: Agent id -> `(policy_id, SampleBatch)` (chunks with at least one row).
        episode: The Episode.
        policy_map: Policy id -> Policy.
        callbacks: A DefaultCallbacks instance.
        worker: Passed to the callbacks.
        output: Receives the postprocessed batches.
    """
    pre = {agent_id: (policy_map[pid], batch) for agent_id, (pid, batch) in batches.items()}
    batches = {agent_id: item for agent_id, item in batches.items()
               if training_enabled(item[1])}
    post = {}
    for agent_id, (pid, batch) in batches.items():
        policy = policy_map[pid]
        exploration = getattr(policy, "exploration", None)
        if exploration is not None and hasattr(exploration, "postprocess_trajectory"):
            exploration.postprocess_trajectory(policy, batch, None)
        others = {a: pb for a, pb in pre.items() if a != agent_id}
        post[agent_id] = policy.postprocess_trajectory(batch, others, episode)
    for agent_id, (pid, _) in batches.items():
        callbacks.on_postprocess_trajectory(
            worker=worker, episode=episode, agent_id=agent_id, policy_id=pid,
            policies=policy_map, postprocessed_batch=post[agent_id], original_batches=pre)
    for agent_id, (pid, _) in batches.items():
        drop_untrained_columns(post[agent_id], policy_map[pid], worker)
        output.add(pid, post[agent_id])


def postprocess_single_chunk(agent_id: Any, policy_id: str, batch: SampleBatch, episode: Any,
                             policy_map: Any, callbacks: Any, worker: Any,
                             output: "FragmentOutput", call_callback: bool = True) -> None:
    """`postprocess_episode_chunks` for an episode with one agent (no other agents'
    batches), skipping `on_postprocess_trajectory` if `call_callback` is False (the
    callbacks do not override it)."""
    if not training_enabled(batch):
        return
    policy = policy_map[policy_id]
    exploration = getattr(policy, "exploration", None)
    if exploration is not None and hasattr(exploration, "postprocess_trajectory"):
        exploration.postprocess_trajectory(policy, batch, None)
    post = policy.postprocess_trajectory(batch, {}, episode)
    if call_callback:
        callbacks.on_postprocess_trajectory(
            worker=worker, episode=episode, agent_id=agent_id, policy_id=policy_id,
            policies=policy_map, postprocessed_batch=post,
            original_batches={agent_id: (policy, batch)})
    drop_untrained_columns(post, policy, worker)
    output.batches.setdefault(policy_id, []).append(post)


def drop_untrained_columns(batch: Any, policy: Any, worker: Any) -> None:
    """Removes `new_obs` from a postprocessed batch if the policy's view requirement
    marks it `used_for_training=False` (RLlib's rule: PG, A2C and PPO read it only to
    bootstrap in postprocessing), unless the worker keeps every column
    (`keeps_all_columns`: it writes offline data or estimates off-policy returns)."""
    requirement = (getattr(policy, "view_requirements", None) or {}).get(Columns.NEXT_OBS)
    if (requirement is not None and not requirement.used_for_training
            and Columns.NEXT_OBS in batch and not getattr(worker, "keeps_all_columns", False)):
        del batch[Columns.NEXT_OBS]


class FragmentOutput:
    """Postprocessed chunks per policy, and the step counts of the fragment.

    Args:
        multiagent: Always build a MultiAgentBatch (else a SampleBatch when only
            `default_policy` has data).
        any_lone_policy: Without `multiagent`, build a SampleBatch when only one policy
            has data, whatever its id (the external runner's single-agent output).
    """

    def __init__(self, multiagent: bool, any_lone_policy: bool = False):
        self.multiagent = multiagent
        self.any_lone_policy = any_lone_policy
        self.batches: Dict[str, List[SampleBatch]] = {}
        self.env_steps = 0
        self.agent_steps = 0

    def add(self, policy_id: str, batch: SampleBatch) -> None:
        self.batches.setdefault(policy_id, []).append(batch)

    def build(self) -> Any:
        """The fragment's SampleBatch or MultiAgentBatch; resets this output.

        A fragment whose steps were all left out (`training_enabled`) is an empty
        MultiAgentBatch counting its env steps, as RLlib's."""
        policy_batches = {pid: (b[0] if len(b) == 1 else concat_samples(b))
                          for pid, b in self.batches.items()}
        env_steps = self.env_steps
        self.batches, self.env_steps, self.agent_steps = {}, 0, 0
        if not self.multiagent and len(policy_batches) == 1 and (
                self.any_lone_policy or DEFAULT_POLICY_ID in policy_batches):
            return next(iter(policy_batches.values()))
        return MultiAgentBatch(policy_batches, env_steps)
