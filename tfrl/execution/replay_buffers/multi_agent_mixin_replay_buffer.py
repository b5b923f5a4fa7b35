"""RLlib 2.x's `MultiAgentMixInReplayBuffer`: new items, each returned once, mixed with
replayed ones in a given ratio.

A prioritized multi-agent buffer (independent mode) that also queues every item it
stores. `sample(num_items)` returns, per policy, up to `num_items * (1 - replay_ratio)`
queued new items (rounded up or down at random so that the mean is exact) plus old items
drawn from the policy's buffer: `num_items - new` of them when the queue had enough new
items, else about `new * ratio / (1 - ratio)` (at most that). `replay_ratio` 0 returns
only new items; 1 only replayed ones.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = MultiAgentMixInReplayBuffer(capacity=10, replay_ratio=0.5,
    ...                                      learning_starts=0, seed=0)
    >>> buffer.add(SampleBatch({"obs": [1.0]}))
    >>> buffer.sample(2).policy_batches["default_policy"]["obs"].tolist()  # new + replayed
    [1.0, 1.0]
"""

import collections
import random
from typing import Any, Dict, List, Optional, Union

import numpy as np

from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from tfrl.execution.replay_buffers.multi_agent_prioritized_replay_buffer import (
    MultiAgentPrioritizedReplayBuffer)
from tfrl.execution.replay_buffers.replay_buffer import Item, StorageUnit


def _round_up_or_down(value: float, ratio: float) -> int:
    """`value * ratio` rounded up with probability of its fraction, else down (so the mean
    is `value * ratio`)."""
    product = value * ratio
    if random.uniform(0, 1) < product % 1:
        return int(np.ceil(product))
    return int(np.floor(product))


def _as_multi_agent(batch: Item) -> MultiAgentBatch:
    return batch if isinstance(batch, MultiAgentBatch) else batch.as_multi_agent()


class MultiAgentMixInReplayBuffer(MultiAgentPrioritizedReplayBuffer):
    """Replay mixing over prioritized per-policy buffers (see the module docstring).

    Args:
        capacity, storage_unit, num_shards, prioritized_replay_alpha,
            prioritized_replay_beta, prioritized_replay_eps, learning_starts
            (`min_size_for_sampling`), replay_sequence_length, replay_burn_in,
            replay_zero_init_states, underlying_buffer_config, seed: As for
            `MultiAgentPrioritizedReplayBuffer` (the replay mode is "independent").
        replay_ratio: Share of replayed items in a sample, in [0, 1].
        **kwargs: As for `MultiAgentPrioritizedReplayBuffer`.

    Raises:
        ValueError: For a `replay_ratio` outside [0, 1], or as the parent.
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 num_shards: int = 1, prioritized_replay_alpha: float = 0.6,
                 prioritized_replay_beta: float = 0.4, prioritized_replay_eps: float = 1e-6,
                 learning_starts: Optional[int] = None, replay_sequence_length: int = 1,
                 replay_burn_in: int = 0, replay_zero_init_states: bool = True,
                 replay_ratio: float = 0.66, underlying_buffer_config: Optional[Dict] = None,
                 seed: Optional[int] = None, **kwargs: Any):
        if isinstance(replay_ratio, bool) or not isinstance(replay_ratio, (int, float)) \
                or not 0.0 <= replay_ratio <= 1.0:
            raise ValueError(f"{type(self).__name__}(replay_ratio=...) must be a number in "
                             f"[0, 1]; received {replay_ratio!r}.")
        kwargs.pop("replay_mode", None)  # independent only, as RLlib's
        super().__init__(capacity, storage_unit, num_shards, learning_starts, "independent",
                         replay_sequence_length, replay_burn_in, replay_zero_init_states,
                         prioritized_replay_alpha, prioritized_replay_beta,
                         prioritized_replay_eps, underlying_buffer_config, seed, **kwargs)
        self.replay_ratio = float(replay_ratio)
        self.last_added_batches: Dict[Any, List[Item]] = collections.defaultdict(list)

    def _add_to_underlying_buffer(self, policy_id: Any, batch: Item, **kwargs: Any) -> None:
        kwargs = {**self.underlying_buffer_call_args, **kwargs}
        for item in self._slices(batch):
            self.replay_buffers[policy_id].add(item, **kwargs)
            self.last_added_batches[policy_id].append(item)

    def _ready(self, policy_id: Any) -> bool:
        if len(self.replay_buffers[policy_id]) == 0 and self.replay_ratio > 0.0:
            return False
        return bool(self.last_added_batches[policy_id]) or self.replay_ratio >= 1.0

    def _mix(self, policy_id: Any, num_items: int, **kwargs: Any) -> MultiAgentBatch:
        max_new = _round_up_or_down(num_items, 1 - self.replay_ratio)
        queue = self.last_added_batches[policy_id]
        output: List[Item] = queue[:max_new]
        self.last_added_batches[policy_id] = queue[max_new:]
        buffer = self.replay_buffers[policy_id]
        if self.replay_ratio == 0.0:
            return MultiAgentBatch.concat_samples([_as_multi_agent(b) for b in output])
        if self.replay_ratio == 1.0:
            return _as_multi_agent(buffer.sample(num_items, **kwargs))
        num_new = len(output)
        if np.isclose(num_new, num_items * (1 - self.replay_ratio)):
            num_old = num_items - max_new
        else:
            num_old = min(num_items - max_new,
                          _round_up_or_down(num_new, self.replay_ratio / (1 - self.replay_ratio)))
        if num_old > 0:
            old = buffer.sample(num_old, **kwargs)
            if output and isinstance(old, SampleBatch) and isinstance(output[0], SampleBatch):
                # The new items' columns (replayed ones also carry weights/batch_indexes).
                old = SampleBatch({k: old[k] for k in output[0].keys()})
            output.append(old)
        return MultiAgentBatch.concat_samples([_as_multi_agent(b) for b in output])

    def sample(self, num_items: int, policy_id: Optional[Any] = DEFAULT_POLICY_ID,
               **kwargs: Any) -> MultiAgentBatch:
        """New items of `policy_id` (None: of every policy) mixed with replayed ones.

        Returns an empty MultiAgentBatch before `learning_starts`, or when there is
        nothing to mix (no new items and `replay_ratio` < 1, or an empty buffer).
        """
        kwargs = {**self.underlying_buffer_call_args, **kwargs}
        if self._num_added < self.replay_starts:
            return MultiAgentBatch({}, 0)
        policies = list(self.replay_buffers) if policy_id is None else [policy_id]
        samples = [self._mix(pid, num_items, **kwargs) for pid in policies if self._ready(pid)]
        samples = [s for s in samples if s.count]
        if not samples:
            return MultiAgentBatch({}, 0)
        return MultiAgentBatch.concat_samples(samples)
