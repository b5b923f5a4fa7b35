"""RLlib 2.x's `MultiAgentReplayBuffer`: one underlying buffer per policy (or one for all).

`add(batch)` turns a SampleBatch into a MultiAgentBatch of `default_policy`, cuts each
policy's rows into items of `storage_unit` and stores them in that policy's buffer
(created on first use from `underlying_buffer_config`, a `ReplayBuffer` by default):

- "timesteps": slices of `replay_sequence_length` rows (RLlib 1.x's
  `LocalReplayBuffer` slicing; 1: single timesteps);
- "sequences": sequences of at most `replay_sequence_length` rows, along `seq_lens` (or
  along episodes, without `seq_lens` or with `replay_sequence_override=False`);
- "episodes": complete episodes; "fragments": the policy's rows as one item.

`replay_mode="lockstep"` keeps whole env steps of all policies together
(`MultiAgentBatch.timeslices`) in one buffer under `ALL_POLICIES`; "independent" (the
default) samples each policy's buffer on its own. `sample(n)` returns a MultiAgentBatch
with `n` items per policy, an empty one before `learning_starts` timesteps were added.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> buffer = MultiAgentReplayBuffer(capacity=10, learning_starts=0, seed=0)
    >>> buffer.add(SampleBatch({"obs": np.arange(4.0)}))
    >>> len(buffer), buffer.sample(3).policy_batches["default_policy"].count
    (4, 3)
"""

import collections
import enum
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, cast

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.execution.replay_buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from tfrl.execution.replay_buffers.replay_buffer import (ALL_POLICIES, Item, ReplayBuffer,
                                                         StorageUnit, complete_episodes)
from tfrl.utils.checks import check_int

# Names `underlying_buffer_config["type"]` may give as a string.
BUFFER_TYPES: Dict[str, type] = {"ReplayBuffer": ReplayBuffer,
                                 "PrioritizedReplayBuffer": PrioritizedReplayBuffer}


class ReplayMode(enum.Enum):
    """How a multi-agent buffer stores and samples the policies' rows."""

    LOCKSTEP = "lockstep"
    INDEPENDENT = "independent"




def sequence_items(batch: SampleBatch, max_seq_len: int, use_seq_lens: bool,
                   zero_init_states: bool) -> List[SampleBatch]:
    """`batch` cut into sequences of at most `max_seq_len` rows, one batch each (with
    `seq_lens` [its length]).

    Cut along the batch's `seq_lens` if `use_seq_lens` and it has them, else along its
    episodes; each piece every `max_seq_len` rows. `state_in_*` columns keep the row of
    each sequence's start (zeros with `zero_init_states`); `state_out_*` are dropped.
    """
    seq_lens = batch.get(Columns.SEQ_LENS) if use_seq_lens else None
    flat = SampleBatch({k: v for k, v in batch.items()
                        if k != Columns.SEQ_LENS and not k.startswith("state_")})
    if seq_lens is not None:
        ends = np.cumsum(np.asarray(seq_lens, dtype=np.int64)).tolist()
        pieces = [(a, b) for a, b in zip([0] + ends[:-1], ends) if b > a]
    else:
        pieces, start = [], 0
        for episode in flat.split_by_episode():
            pieces.append((start, start + episode.count))
            start += episode.count
    out = []
    for a, b in pieces:
        for s in range(a, b, max_seq_len):
            e = min(s + max_seq_len, b)
            columns = dict(flat[s:e].items())
            for key, value in batch.items():
                if key.startswith("state_in_"):
                    first = np.asarray(value)[s:s + 1]
                    columns[key] = np.zeros_like(first) if zero_init_states else first
            columns[Columns.SEQ_LENS] = np.array([e - s], dtype=np.int32)
            out.append(SampleBatch(columns))
    return out


def _to_replay_mode(owner: str, replay_mode: Any) -> ReplayMode:
    for mode in ReplayMode:
        if replay_mode is mode or replay_mode == mode.value:
            return mode
    raise ValueError(f"{owner}(replay_mode=...) must be 'independent' or 'lockstep'; "
                     f"received {replay_mode!r}.")


class MultiAgentReplayBuffer(ReplayBuffer):
    """Replay buffers per policy id (see the module docstring).

    Args:
        capacity: Timesteps kept in all shards (each underlying buffer holds
            `capacity // num_shards`).
        storage_unit: "timesteps", "sequences", "episodes" or "fragments".
        num_shards: Shards the experiences are spread over (this one included).
        learning_starts: Timesteps to add before `sample()` returns data (RLlib 2.x's
            `min_size_for_sampling`, accepted as an alias), divided by `num_shards`.
        replay_mode: "independent" or "lockstep" (not with "sequences"/"episodes").
        replay_sequence_override: "sequences": cut along the batch's `seq_lens` where it
            has them (True), or always along its episodes (False).
        replay_sequence_length: Rows per item for "timesteps" and "sequences".
        replay_burn_in: Must be 0 (overlapping burn-in sequences are not supported).
        replay_zero_init_states: "sequences": zero `state_in_*` at each sequence start.
        underlying_buffer_config: `{"type": buffer class (or its name), **constructor
            and call arguments}` of the per-policy buffers; the entries are also passed
            to their `add()`/`sample()` calls (RLlib's behaviour).
        seed: Seed of the underlying buffers' RNGs (None: drawn from numpy's global RNG).
        **kwargs: Ignored (RLlib's forward-compatibility arguments).

    Raises:
        ValueError: For an invalid argument (each named in the message).
    """

    def __init__(self, capacity: int = 10000, storage_unit: Union[str, StorageUnit] = "timesteps",
                 num_shards: int = 1, learning_starts: Optional[int] = None,
                 replay_mode: Union[str, ReplayMode] = "independent",
                 replay_sequence_override: bool = True, replay_sequence_length: int = 1,
                 replay_burn_in: int = 0, replay_zero_init_states: bool = True,
                 underlying_buffer_config: Optional[Mapping[str, Any]] = None,
                 seed: Optional[int] = None, *, min_size_for_sampling: Optional[int] = None,
                 **kwargs: Any):
        name = type(self).__name__
        super().__init__(capacity, storage_unit, seed=seed)
        self.num_shards = check_int(num_shards, f"{name}(num_shards=...)", 1)
        if learning_starts is not None and min_size_for_sampling is not None:
            raise ValueError(f"{name}: received learning_starts={learning_starts!r} and "
                             f"min_size_for_sampling={min_size_for_sampling!r}; they are one "
                             "setting (RLlib 1.x and 2.x names), pass one.")
        starts = min_size_for_sampling if learning_starts is None else learning_starts
        starts = check_int(1000 if starts is None else starts, f"{name}(learning_starts=...)", 0)
        self.replay_starts = starts // self.num_shards
        self.replay_sequence_override = bool(replay_sequence_override)
        self.replay_sequence_length = check_int(replay_sequence_length,
                                                f"{name}(replay_sequence_length=...)", 1)
        self.replay_burn_in = check_int(replay_burn_in, f"{name}(replay_burn_in=...)", 0)
        if self.replay_burn_in:
            raise ValueError(f"{name}(replay_burn_in={replay_burn_in}): burn-in sequences are "
                             "not supported; pass 0.")
        self.replay_zero_init_states = bool(replay_zero_init_states)
        self.replay_mode = _to_replay_mode(name, replay_mode)
        if self.replay_mode is ReplayMode.LOCKSTEP and self.storage_unit in (
                StorageUnit.SEQUENCES, StorageUnit.EPISODES):
            raise ValueError(f"{name}: replay_mode='lockstep' stores whole env steps; it does "
                             f"not work with storage_unit={self.storage_unit.value!r}. Use "
                             "'timesteps' or replay_mode='independent'.")
        self.underlying_buffer_config = (None if underlying_buffer_config is None
                                         else dict(underlying_buffer_config))
        self.underlying_buffer_call_args: Dict[str, Any] = dict(
            self.underlying_buffer_config or {})
        self._buffer_factory = self._make_buffer_factory(capacity // self.num_shards)
        self.replay_buffers: Dict[Any, ReplayBuffer] = collections.defaultdict(
            self._buffer_factory)
        self._num_added = 0

    def _make_buffer_factory(self, shard_capacity: int) -> Callable[[], ReplayBuffer]:
        config = self.underlying_buffer_config
        name = type(self).__name__
        if config is None:
            cls: Any = ReplayBuffer
            ctor_args: Dict[str, Any] = {"capacity": self.capacity}
        else:
            cls = config.get("type", ReplayBuffer)
            cls = BUFFER_TYPES.get(cls, cls) if isinstance(cls, str) else cls
            if not (isinstance(cls, type) and issubclass(cls, ReplayBuffer)):
                raise ValueError(f"{name}(underlying_buffer_config=...): 'type' must be a "
                                 f"ReplayBuffer class or one of {sorted(BUFFER_TYPES)}; received "
                                 f"{config.get('type')!r}.")
            ctor_args = {"capacity": shard_capacity,
                         **{k: v for k, v in config.items() if k != "type"}}
        ctor_args["storage_unit"] = StorageUnit.FRAGMENTS  # items are cut here
        seeds = np.random.SeedSequence(int(self._rng.integers(0, 2**31 - 1)))

        def new_buffer() -> ReplayBuffer:
            seed = int(seeds.spawn(1)[0].generate_state(1)[0])
            return cls(**{**ctor_args, "seed": seed})

        return new_buffer

    def __len__(self) -> int:
        """Items stored in all underlying buffers."""
        return sum(len(b) for b in self.replay_buffers.values())

    def add(self, batch: Optional[Item], **kwargs: Any) -> None:
        """Stores `batch`'s rows in the policies' buffers (None is ignored).

        Args:
            batch: A SampleBatch (of `default_policy`) or MultiAgentBatch.
            **kwargs: Passed to the underlying buffers' `add()` (after the entries of
                `underlying_buffer_config`), e.g. `weight`.

        Raises:
            TypeError: If `batch` is neither batch class.
        """
        if batch is None:
            return
        if not isinstance(batch, (SampleBatch, MultiAgentBatch)):
            raise TypeError(f"{type(self).__name__}.add() takes a SampleBatch or "
                            f"MultiAgentBatch; received {type(batch).__name__}.")
        multi = batch.copy().as_multi_agent()
        if self.replay_mode is ReplayMode.LOCKSTEP:
            per_policy: Dict[Any, Item] = {ALL_POLICIES: multi}
        else:
            per_policy = dict(multi.policy_batches)
        for policy_id, policy_batch in per_policy.items():
            if policy_batch.count:
                self._add_to_underlying_buffer(policy_id, policy_batch, **kwargs)
        self._num_added += multi.count

    def _slices(self, batch: Item) -> List[Item]:
        """The items `batch` (one policy's rows, or a lockstep MultiAgentBatch) is cut into."""
        unit = self.storage_unit
        if unit is StorageUnit.TIMESTEPS:
            return list(batch.timeslices(self.replay_sequence_length))
        if unit is StorageUnit.FRAGMENTS:
            return [batch]
        batch = cast(SampleBatch, batch)  # __init__ refuses lockstep with the units below
        if unit is StorageUnit.SEQUENCES:
            return list(sequence_items(batch, self.replay_sequence_length,
                                       self.replay_sequence_override,
                                       self.replay_zero_init_states))
        return list(complete_episodes(batch))

    def _add_to_underlying_buffer(self, policy_id: Any, batch: Item, **kwargs: Any) -> None:
        """Cuts `batch` into items (see the module docstring) and adds them to the buffer
        of `policy_id`."""
        kwargs = {**self.underlying_buffer_call_args, **kwargs}
        for item in self._slices(batch):
            self.replay_buffers[policy_id].add(item, **kwargs)

    def sample(self, num_items: int, policy_id: Optional[Any] = None,
               **kwargs: Any) -> MultiAgentBatch:
        """`num_items` items per policy (or of `policy_id` only), as a MultiAgentBatch.

        Before `learning_starts` timesteps were added: an empty MultiAgentBatch.

        Raises:
            ValueError: For `policy_id` in lockstep mode, or as the underlying
                buffers' `sample()` (e.g. the buffer of `policy_id` is empty).
        """
        kwargs = {**self.underlying_buffer_call_args, **kwargs}
        if self._num_added < self.replay_starts:
            return MultiAgentBatch({}, 0)
        if self.replay_mode is ReplayMode.LOCKSTEP:
            if policy_id is not None:
                raise ValueError(f"{type(self).__name__}.sample(policy_id={policy_id!r}): "
                                 "lockstep mode samples all policies together; pass no "
                                 "policy_id.")
            out = self.replay_buffers[ALL_POLICIES].sample(num_items, **kwargs)
            return out if isinstance(out, MultiAgentBatch) else out.as_multi_agent()
        if policy_id is not None:
            sample = self._policy_sample(policy_id, num_items, kwargs)
            return MultiAgentBatch({policy_id: sample}, sample.count)
        samples: Dict[Any, SampleBatch] = {}
        for pid in self.replay_buffers:
            samples[pid] = self._policy_sample(pid, num_items, kwargs)
        return MultiAgentBatch(samples, sum(s.count for s in samples.values()))

    def _policy_sample(self, policy_id: Any, num_items: int,
                       kwargs: Dict[str, Any]) -> SampleBatch:
        buffer = self.replay_buffers[policy_id]
        sample = buffer.sample(num_items, **kwargs)
        if not isinstance(sample, SampleBatch):
            raise TypeError(
                f"{type(self).__name__}: the underlying buffer of policy {policy_id!r} "
                f"({type(buffer).__name__}) returned {type(sample).__name__} from sample(); "
                "in independent mode each policy's buffer must return a SampleBatch of "
                "that policy's rows. Give underlying_buffer_config a buffer type that "
                "does.")
        return sample

    def stats(self, debug: bool = False) -> Dict[str, Any]:
        """Per policy: `policy_<pid>` -> the buffer's `stats()`."""
        return {f"policy_{pid}": b.stats(debug) for pid, b in self.replay_buffers.items()}

    def get_state(self) -> Dict[str, Any]:
        """`num_added` and every underlying buffer's state."""
        return {"num_added": self._num_added,
                "replay_buffers": {pid: b.get_state() for pid, b in self.replay_buffers.items()}}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result."""
        self._num_added = int(state["num_added"])
        for pid, buffer_state in state["replay_buffers"].items():
            self.replay_buffers[pid].set_state(buffer_state)
