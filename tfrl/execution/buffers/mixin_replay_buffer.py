"""`MixInMultiAgentReplayBuffer`: new batches, each returned once, mixed with replayed ones.

RLlib 1.x's buffer for IMPALA/APPO-style replay mixing (`ray.rllib.execution.buffers.
mixin_replay_buffer`). Every added batch goes into its policy's `SimpleReplayBuffer` (a
ring of `capacity` batches) and is returned by the next `replay()`, together with old
batches in the proportion `replay_ratio = old / (old + new)`: for `n` new batches,
`replay()` appends replayed ones while `random.random() < n * p` (`p = ratio / (1 -
ratio)`, decreased by 1 per replayed batch), so 0.5 gives one old batch per new one.
`replay_ratio` 0 returns only new batches; 1 returns one replayed batch per call.

Example:
    >>> import random
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> random.seed(0)
    >>> buffer = MixInMultiAgentReplayBuffer(capacity=10, replay_ratio=0.5)
    >>> buffer.add(SampleBatch({"obs": [1.0]}))
    >>> buffer.replay()["obs"].tolist()  # the new batch and one replayed (the same one)
    [1.0, 1.0]
    >>> buffer.replay() is None  # nothing new to mix with
    True
"""

import collections
import random
from typing import Any, Dict, List, Optional, Union, cast

from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch, concat_samples
from tfrl.execution.replay_buffers.multi_agent_replay_buffer import ReplayMode, _to_replay_mode
from tfrl.execution.replay_buffers.replay_buffer import ALL_POLICIES
from tfrl.execution.replay_ops import SimpleReplayBuffer
from tfrl.utils.checks import check_int


class MixInMultiAgentReplayBuffer:
    """Replay mixing per policy (see the module docstring).

    Args:
        capacity: Batches kept per policy (>= 1).
        replay_ratio: Share of replayed batches in what `replay()` returns, in [0, 1].
        replay_mode: "independent" (a buffer per policy) or "lockstep" (one buffer of
            MultiAgentBatches under `ALL_POLICIES`).

    Raises:
        ValueError: For a capacity < 1, a ratio outside [0, 1] or an unknown mode.
    """

    def __init__(self, capacity: int, replay_ratio: float,
                 replay_mode: Union[str, ReplayMode] = ReplayMode.INDEPENDENT):
        name = type(self).__name__
        check_int(capacity, f"{name}(capacity=...)", 1, "batches")
        if isinstance(replay_ratio, bool) or not isinstance(replay_ratio, (int, float)) \
                or not 0.0 <= replay_ratio <= 1.0:
            raise ValueError(f"{name}(replay_ratio=...) must be a number in [0, 1] (the share "
                             f"of replayed batches); received {replay_ratio!r}.")
        self.capacity = int(capacity)
        self.replay_ratio = float(replay_ratio)
        self.replay_proportion: Optional[float] = (
            None if self.replay_ratio == 1.0 else self.replay_ratio / (1.0 - self.replay_ratio))
        self.replay_mode = _to_replay_mode(name, replay_mode)
        self.replay_buffers: Dict[Any, SimpleReplayBuffer] = collections.defaultdict(
            lambda: SimpleReplayBuffer(num_slots=self.capacity))
        self.last_added_batches: Dict[Any, List[types.Batch]] = collections.defaultdict(list)
        self.num_added = 0

    def add(self, batch: types.Batch) -> None:
        """Stores `batch` (a SampleBatch counts as `default_policy`'s) and queues it for
        the next `replay()`.

        Raises:
            TypeError: If `batch` is neither batch class.
        """
        if not isinstance(batch, (SampleBatch, MultiAgentBatch)):
            raise TypeError(f"{type(self).__name__}.add() takes a SampleBatch or "
                            f"MultiAgentBatch; received {type(batch).__name__}.")
        multi = batch.copy().as_multi_agent()
        if self.replay_mode is ReplayMode.LOCKSTEP:
            per_policy: Dict[Any, types.Batch] = {ALL_POLICIES: multi}
        else:
            per_policy = dict(multi.policy_batches)
        for policy_id, policy_batch in per_policy.items():
            self.replay_buffers[policy_id].add_batch(policy_batch)
            self.last_added_batches[policy_id].append(policy_batch)
        self.num_added += multi.count

    add_batch = add  # RLlib 1.x's name

    def replay(self, policy_id: Any = DEFAULT_POLICY_ID) -> Optional[types.Batch]:
        """The batches added since the last call plus replayed ones, concatenated.

        Returns None if the policy's buffer is empty, or nothing was added since the last
        call and `replay_ratio` < 1.

        Raises:
            ValueError: In lockstep mode, for a `policy_id` other than `ALL_POLICIES`.
        """
        if self.replay_mode is ReplayMode.LOCKSTEP and policy_id != ALL_POLICIES:
            raise ValueError(f"{type(self).__name__}.replay(policy_id={policy_id!r}): in "
                             f"lockstep mode all policies replay together; pass "
                             f"policy_id={ALL_POLICIES!r}.")
        buffer = self.replay_buffers[policy_id]
        if len(buffer) == 0 or (not self.last_added_batches[policy_id]
                                and self.replay_ratio < 1.0):
            return None
        output = self.last_added_batches[policy_id]
        self.last_added_batches[policy_id] = []
        if self.replay_ratio == 0.0:
            return concat_samples(output)
        if self.replay_proportion is None:  # ratio 1: only replayed batches
            return buffer.replay()
        proportion = len(output) * self.replay_proportion
        while random.random() < proportion:
            proportion -= 1
            # Not None: the buffer holds batches (checked above).
            output.append(cast(types.Batch, buffer.replay()))
        return concat_samples(output)
