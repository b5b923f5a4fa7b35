"""RLlib 2.x's `MultiAgentPrioritizedReplayBuffer`: a prioritized buffer per policy.

As `MultiAgentReplayBuffer`, with `PrioritizedReplayBuffer`s underneath (alpha, and
the beta their `sample()` is called with, from `prioritized_replay_alpha/beta`). An
item added in independent mode gets the priority `weight` passed to `add()`, else the
mean of its `weights` column, else the largest so far; lockstep items get the largest.
`update_priorities({policy_id: (batch_indexes, td_errors)})` sets
`|td_error| + prioritized_replay_eps`.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = MultiAgentPrioritizedReplayBuffer(capacity=10, learning_starts=0, seed=0)
    >>> buffer.add(SampleBatch({"obs": np.arange(2.0)}))
    >>> buffer.update_priorities({"default_policy": (np.array([0]), np.array([1e-3]))})
    >>> obs = buffer.sample(1000).policy_batches["default_policy"]["obs"]
    >>> bool(0.9 < obs.mean() < 1.0)  # P(row 0) = 0.001 ** 0.6 / (0.001 ** 0.6 + 1) ~ 0.016
    True
"""

from typing import Any, Dict, Mapping, Optional, Union

import numpy as np

from tfrl.data.sample_batch import SampleBatch
from tfrl.execution.replay_buffers.multi_agent_replay_buffer import (MultiAgentReplayBuffer,
                                                                     ReplayMode)
from tfrl.execution.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from tfrl.execution.replay_buffers.replay_buffer import Item, StorageUnit


class MultiAgentPrioritizedReplayBuffer(MultiAgentReplayBuffer):
    """Prioritized replay buffers per policy id (see the module docstring).

    Args:
        capacity, storage_unit, num_shards, learning_starts, replay_mode,
            replay_sequence_length, replay_burn_in, replay_zero_init_states, seed:
            As for `MultiAgentReplayBuffer`.
        prioritized_replay_alpha: Prioritization exponent of the underlying buffers.
        prioritized_replay_beta: Importance-weight exponent of their samples.
        prioritized_replay_eps: Added to `|td_error|` in `update_priorities`.
        underlying_buffer_config: Replaces the default
            `{"type": PrioritizedReplayBuffer, "alpha": ..., "beta": ...}`.
        **kwargs: As for `MultiAgentReplayBuffer` (e.g. `min_size_for_sampling`).

    Raises:
        ValueError: As `MultiAgentReplayBuffer`, or for a negative `prioritized_replay_eps`.
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 num_shards: int = 1, learning_starts: Optional[int] = None,
                 replay_mode: Union[str, ReplayMode] = "independent",
                 replay_sequence_length: int = 1, replay_burn_in: int = 0,
                 replay_zero_init_states: bool = True, prioritized_replay_alpha: float = 0.6,
                 prioritized_replay_beta: float = 0.4, prioritized_replay_eps: float = 1e-6,
                 underlying_buffer_config: Optional[Mapping[str, Any]] = None,
                 seed: Optional[int] = None, **kwargs: Any):
        if underlying_buffer_config is None:
            underlying_buffer_config = {"type": PrioritizedReplayBuffer,
                                        "alpha": prioritized_replay_alpha,
                                        "beta": prioritized_replay_beta}
        if isinstance(prioritized_replay_eps, bool) or not isinstance(
                prioritized_replay_eps, (int, float, np.number)) or not np.isfinite(
                    prioritized_replay_eps) or prioritized_replay_eps < 0:
            raise ValueError(f"{type(self).__name__}(prioritized_replay_eps=...) must be a "
                             f"finite number >= 0; received {prioritized_replay_eps!r}.")
        super().__init__(capacity, storage_unit, num_shards, learning_starts, replay_mode,
                         replay_sequence_length=replay_sequence_length,
                         replay_burn_in=replay_burn_in,
                         replay_zero_init_states=replay_zero_init_states,
                         underlying_buffer_config=underlying_buffer_config, seed=seed,
                         **kwargs)
        self.prioritized_replay_eps = float(prioritized_replay_eps)

    def _add_to_underlying_buffer(self, policy_id: Any, batch: Item, **kwargs: Any) -> None:
        kwargs = {**self.underlying_buffer_call_args, **kwargs}
        for item in self._slices(batch):
            if isinstance(item, SampleBatch):  # independent mode: one policy's rows
                weight = None
                if "weights" in item and len(item["weights"]):
                    weight = float(np.mean(item["weights"]))
                item_kwargs = {"weight": weight, **kwargs}
            else:
                item_kwargs = {**kwargs, "weight": None}
            self.replay_buffers[policy_id].add(item, **item_kwargs)

    def update_priorities(self, prio_dict: Dict[Any, Any]) -> None:
        """Sets priorities `|td_error| + prioritized_replay_eps` per policy.

        Args:
            prio_dict: Policy id -> `(batch_indexes, td_errors)` of a sampled batch.

        Raises:
            KeyError: For a policy this buffer holds no items of.
            ValueError: As `PrioritizedReplayBuffer.update_priorities`.
        """
        for policy_id, (batch_indexes, td_errors) in prio_dict.items():
            if policy_id not in self.replay_buffers:
                raise KeyError(f"{type(self).__name__}.update_priorities(): no items of policy "
                               f"{policy_id!r} are stored; it holds {list(self.replay_buffers)}.")
            buffer = self.replay_buffers[policy_id]
            if not isinstance(buffer, PrioritizedReplayBuffer):
                raise TypeError(f"{type(self).__name__}.update_priorities(): the buffer of "
                                f"policy {policy_id!r} is a {type(buffer).__name__}, not a "
                                "PrioritizedReplayBuffer (see underlying_buffer_config).")
            priorities = np.abs(np.asarray(td_errors, dtype=np.float64))
            buffer.update_priorities(batch_indexes, priorities + self.prioritized_replay_eps)
