"""MultiAgentBatch: per-policy SampleBatches collected over the same env steps."""

from collections import defaultdict
from typing import Any, Dict, List, Sequence, Union

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.policy.sample_batch import (
    _DEFAULT_COMPRESS_COLUMNS,
    DEFAULT_POLICY_ID,
    SampleBatch,
)

PolicyID = str


class MultiAgentBatch:
    """A batch of experiences from several agents, one SampleBatch per policy.

    Args:
        policy_batches: Policy id -> SampleBatch of that policy's agent steps.
        env_steps: Number of env steps the batch covers (each env step holds one
            or more agent steps).

    Attributes:
        policy_batches: As given.
        count: The number of env steps.
    """

    def __init__(self, policy_batches: Dict[PolicyID, SampleBatch], env_steps: int):
        if not isinstance(policy_batches, dict):
            raise TypeError(
                "MultiAgentBatch(policy_batches=...) takes a dict of policy id -> "
                f"SampleBatch; received {type(policy_batches).__name__}."
            )
        for pid, batch in policy_batches.items():
            if not isinstance(batch, SampleBatch):
                raise TypeError(
                    f"MultiAgentBatch: the batch of policy {pid!r} must be a SampleBatch; "
                    f"received {type(batch).__name__}. Wrap dicts with SampleBatch(...)."
                )
        if isinstance(env_steps, bool) or not isinstance(env_steps, (int, np.integer)) \
                or env_steps < 0:
            raise ValueError(
                f"MultiAgentBatch(env_steps=...) must be an int >= 0; received {env_steps!r}."
            )
        self.policy_batches = policy_batches
        self.count = int(env_steps)

    def env_steps(self) -> int:
        """The number of env steps (each holds one or more agent steps)."""
        return self.count

    def agent_steps(self) -> int:
        """The number of agent steps, summed over all policies."""
        return sum(len(b) for b in self.policy_batches.values())

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"MultiAgentBatch({self.policy_batches!r}, env_steps={self.count})"

    def as_multi_agent(self) -> "MultiAgentBatch":
        """This batch itself."""
        return self

    def copy(self) -> "MultiAgentBatch":
        """A deep copy (every policy batch copied)."""
        return MultiAgentBatch(
            {pid: b.copy() for pid, b in self.policy_batches.items()}, self.count
        )

    def size_bytes(self) -> int:
        """Bytes held by all policy batches."""
        return sum(b.size_bytes() for b in self.policy_batches.values())

    def compress(self, bulk: bool = False, columns=_DEFAULT_COMPRESS_COLUMNS) -> None:
        """Compresses every policy batch in place (see `SampleBatch.compress`)."""
        for batch in self.policy_batches.values():
            batch.compress(bulk=bulk, columns=columns)

    def decompress_if_needed(self, columns=_DEFAULT_COMPRESS_COLUMNS) -> "MultiAgentBatch":
        """Decompresses every policy batch in place; returns self."""
        for batch in self.policy_batches.values():
            batch.decompress_if_needed(columns)
        return self

    @staticmethod
    def wrap_as_needed(
        policy_batches: Dict[PolicyID, SampleBatch], env_steps: int
    ) -> Union[SampleBatch, "MultiAgentBatch"]:
        """The default policy's SampleBatch if it is the only one, else a MultiAgentBatch.

        An empty dict gives an empty MultiAgentBatch.
        """
        if len(policy_batches) == 1 and DEFAULT_POLICY_ID in policy_batches:
            return policy_batches[DEFAULT_POLICY_ID]
        return MultiAgentBatch(policy_batches=policy_batches, env_steps=env_steps)

    @staticmethod
    def concat_samples(samples: Sequence[Any]) -> "MultiAgentBatch":
        """Concatenates MultiAgentBatches policy by policy; env steps are summed.

        Empty SampleBatches among the inputs are ignored.

        Raises:
            ValueError: If a non-empty input is not a MultiAgentBatch.
        """
        per_policy = defaultdict(list)
        env_steps = 0
        for s in samples:
            if isinstance(s, SampleBatch) and len(s) == 0:
                continue
            if not isinstance(s, MultiAgentBatch):
                raise ValueError(
                    "`MultiAgentBatch.concat_samples()` can only concat MultiAgentBatch "
                    f"types, not {type(s).__name__}! Convert SampleBatches with "
                    "`batch.as_multi_agent()` first."
                )
            for pid, batch in s.policy_batches.items():
                per_policy[pid].append(batch)
            env_steps += s.env_steps()
        return MultiAgentBatch(
            {pid: SampleBatch.concat_samples(b) for pid, b in per_policy.items()}, env_steps
        )

    def timeslices(self, k: int) -> List["MultiAgentBatch"]:
        """Slices of `k` env steps each, holding every agent's rows of those steps.

        Rows are ordered by (eps_id, t, agent_index); rows with equal (eps_id, t) form
        one env step ("lockstep" order). A slice may mix envs and episodes; the last
        slice holds the remaining env steps.

        Args:
            k: Env steps per slice.

        Raises:
            ValueError: If `k` is not a positive int, a policy batch lacks the
                `eps_id`, `t` or `agent_index` column, or the batch has no rows.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"MultiAgentBatch.timeslices(k) needs an int k >= 1; received {k!r}.")
        needed = (Columns.EPS_ID, Columns.T, Columns.AGENT_INDEX)
        steps = []
        for p_index, (pid, batch) in enumerate(self.policy_batches.items()):
            missing = [c for c in needed if c not in batch]
            if missing:
                raise ValueError(
                    f"MultiAgentBatch.timeslices() needs columns {list(needed)} in every "
                    f"policy batch; policy {pid!r} lacks {missing}."
                )
            eps = batch[Columns.EPS_ID].tolist()
            ts = batch[Columns.T].tolist()
            agents = batch[Columns.AGENT_INDEX].tolist()
            steps.extend(zip(eps, ts, agents, [p_index] * len(eps), range(len(eps))))
        if not steps:
            raise ValueError("MultiAgentBatch.timeslices() received a batch without rows.")
        steps.sort()

        pids = list(self.policy_batches)
        slices = []
        rows = defaultdict(list)
        env_steps, last = 0, None
        for eps_id, t, _, p_index, row in steps:
            if (eps_id, t) != last:
                if env_steps == k:
                    slices.append(self._take(pids, rows, env_steps))
                    rows, env_steps = defaultdict(list), 0
                env_steps += 1
                last = (eps_id, t)
            rows[p_index].append(row)
        slices.append(self._take(pids, rows, env_steps))
        return slices

    def _take(self, pids, rows, env_steps) -> "MultiAgentBatch":
        batches = {}
        for p_index, idx in rows.items():
            batch = self.policy_batches[pids[p_index]]
            idx = np.asarray(idx)
            batches[pids[p_index]] = batch._new(
                {key: tree.map_structure(lambda v: np.asarray(v)[idx], value)
                 for key, value in batch.items()}
            )
        return MultiAgentBatch(batches, env_steps)
