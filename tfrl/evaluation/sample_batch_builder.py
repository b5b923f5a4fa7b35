"""Row-wise builders of SampleBatches (single agent) and MultiAgentBatches."""

import logging
from collections import defaultdict
from typing import Any, Dict, Optional, Union

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import SampleBatch, next_unroll_id
from tfrl.data.batch_ops import to_array

logger = logging.getLogger(__name__)

_DUMMY_AGENT_ID = "agent0"


def _to_float_array(values: list, key: str) -> Any:
    array = to_array(values, key)
    if isinstance(array, np.ndarray) and array.dtype == np.float64:
        return array.astype(np.float32)
    return array


class SampleBatchBuilder:
    """Collects rows (`add_values`) or batches (`add_batch`) into one SampleBatch.

    Attributes:
        buffers: Column name -> list of row values.
        count: Number of rows added since the last `build_and_reset`.
    """

    def __init__(self):
        self.buffers: Dict[str, list] = defaultdict(list)
        self.count = 0

    def add_values(self, **values: Any) -> None:
        """Appends one row; every row must carry the same columns."""
        for key, value in values.items():
            self.buffers[key].append(value)
        self.count += 1

    def add_batch(self, batch: SampleBatch) -> None:
        """Appends all rows of `batch`."""
        for key, value in batch.items():
            if key == Columns.SEQ_LENS or key.startswith("state_in_"):
                raise ValueError(
                    "SampleBatchBuilder.add_batch() takes per-timestep batches; received "
                    f"a sequence batch with column '{key}'."
                )
            if isinstance(value, np.ndarray):
                self.buffers[key].extend(value)
            else:
                self.buffers[key].extend(
                    tree.map_structure(lambda v: v[i], value) for i in range(batch.count)
                )
        self.count += batch.count

    def build_and_reset(self) -> SampleBatch:
        """Builds the SampleBatch (float64 -> float32) and empties the builder.

        Adds an `unroll_id` column (one id per build) if the rows have none.

        Raises:
            ValueError: If some column got fewer or more rows than others.
        """
        ragged = {k: len(v) for k, v in self.buffers.items() if len(v) != self.count}
        if ragged:
            raise ValueError(
                f"SampleBatchBuilder got {self.count} rows but columns {ragged} have a "
                "different number of values; add_values() must receive every column "
                "in every row."
            )
        batch = SampleBatch({k: _to_float_array(v, k) for k, v in self.buffers.items()})
        if Columns.UNROLL_ID not in batch:
            batch[Columns.UNROLL_ID] = np.repeat(next_unroll_id(), batch.count)
        self.buffers = defaultdict(list)
        self.count = 0
        return batch


class MultiAgentSampleBatchBuilder:
    """Per-agent rows in, per-policy batches out (an M:N agent-to-policy mapping).

    Each agent's rows go to its own builder; when postprocessing runs, the agent's
    trajectory is postprocessed by its policy and moved into that policy's builder.

    Args:
        policy_map: Policy id -> policy. A policy needs `postprocess_trajectory(
            batch, other_agent_batches, episode)` and may have an `exploration` with
            `postprocess_trajectory(policy, batch, session)`.
        clip_rewards: True: rewards become their sign; a number c: clipped to
            [-c, c]; False/None: unchanged.
        callbacks: Object with `on_postprocess_trajectory(...)`, or None.
    """

    _warned = False

    def __init__(self, policy_map: Dict[str, Any], clip_rewards: Union[bool, float],
                 callbacks: Any = None):
        if not MultiAgentSampleBatchBuilder._warned:
            logger.info(
                "MultiAgentSampleBatchBuilder is superseded by episode collectors "
                "(SingleAgentEpisode); it stays for RLlib compatibility."
            )
            MultiAgentSampleBatchBuilder._warned = True
        self.policy_map = policy_map
        self.clip_rewards = clip_rewards
        self.callbacks = callbacks
        self.policy_builders = {pid: SampleBatchBuilder() for pid in policy_map}
        self.agent_builders: Dict[Any, SampleBatchBuilder] = {}
        self.agent_to_policy: Dict[Any, str] = {}
        # Env steps, counted by the caller.
        self.count = 0

    def total(self) -> int:
        """Agent steps added and not yet postprocessed."""
        return sum(b.count for b in self.agent_builders.values())

    def has_pending_agent_data(self) -> bool:
        """Whether some agent has rows that were not postprocessed yet."""
        return len(self.agent_builders) > 0

    def add_values(self, agent_id: Any, policy_id: str, **values: Any) -> None:
        """Adds one row of `agent_id`, whose trajectory belongs to `policy_id`."""
        if policy_id not in self.policy_builders:
            raise ValueError(
                f"Unknown policy_id {policy_id!r} for agent {agent_id!r}; known policies: "
                f"{sorted(self.policy_builders)}."
            )
        if agent_id not in self.agent_builders:
            self.agent_builders[agent_id] = SampleBatchBuilder()
            self.agent_to_policy[agent_id] = policy_id
        elif self.agent_to_policy[agent_id] != policy_id:
            raise ValueError(
                f"Agent {agent_id!r} is mapped to policy {self.agent_to_policy[agent_id]!r} "
                f"in this trajectory; received policy_id={policy_id!r}."
            )
        if agent_id != _DUMMY_AGENT_ID:
            values[Columns.AGENT_ID] = agent_id
        self.agent_builders[agent_id].add_values(**values)

    def _clip(self, rewards: np.ndarray) -> np.ndarray:
        if self.clip_rewards is True:
            return np.sign(rewards)
        if self.clip_rewards:
            return np.clip(rewards, -self.clip_rewards, self.clip_rewards)
        return rewards

    def postprocess_batch_so_far(self, episode: Optional[Any] = None) -> None:
        """Postprocesses every pending agent trajectory into its policy's builder.

        Raises:
            ValueError: If an agent's rows span more than one trajectory.
        """
        pre_batches = {}
        for agent_id, builder in self.agent_builders.items():
            policy = self.policy_map[self.agent_to_policy[agent_id]]
            batch = builder.build_and_reset()
            if Columns.REWARDS in batch:
                batch[Columns.REWARDS] = self._clip(batch[Columns.REWARDS])
            pre_batches[agent_id] = (policy, batch)

        post_batches = {}
        for agent_id, (policy, batch) in pre_batches.items():
            multi_eps = Columns.EPS_ID in batch and len(np.unique(batch[Columns.EPS_ID])) > 1
            if not batch.is_single_trajectory() or multi_eps:
                raise ValueError(
                    "Batches sent to postprocessing must only contain steps from a single "
                    f"trajectory; agent {agent_id!r} has rows of several episodes: {batch}."
                )
            others = {a: pb for a, pb in pre_batches.items() if a != agent_id}
            exploration = getattr(policy, "exploration", None)
            if exploration is not None and hasattr(exploration, "postprocess_trajectory"):
                exploration.postprocess_trajectory(policy, batch, None)
            post_batches[agent_id] = policy.postprocess_trajectory(batch, others, episode)

        for agent_id in sorted(post_batches, key=repr):
            policy_id = self.agent_to_policy[agent_id]
            if self.callbacks is not None:
                self.callbacks.on_postprocess_trajectory(
                    worker=getattr(episode, "worker", None),
                    episode=episode,
                    agent_id=agent_id,
                    policy_id=policy_id,
                    policies=self.policy_map,
                    postprocessed_batch=post_batches[agent_id],
                    original_batches=pre_batches,
                )
            self.policy_builders[policy_id].add_batch(post_batches[agent_id])
        self.agent_builders.clear()
        self.agent_to_policy.clear()

    def build_and_reset(self, episode: Optional[Any] = None):
        """Postprocesses pending rows and returns the per-policy batches.

        Returns:
            The default policy's SampleBatch if it is the only policy with data,
            else a MultiAgentBatch with `env_steps = self.count`.
        """
        self.postprocess_batch_so_far(episode)
        policy_batches = {
            pid: b.build_and_reset() for pid, b in self.policy_builders.items() if b.count > 0
        }
        env_steps, self.count = self.count, 0
        return MultiAgentBatch.wrap_as_needed(policy_batches, env_steps)
