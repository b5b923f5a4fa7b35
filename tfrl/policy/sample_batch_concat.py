"""Row-wise concatenation of SampleBatches (and MultiAgentBatches)."""

from typing import Any, Sequence

from tfrl.core.columns import Columns
from tfrl.policy import batch_ops
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def concat_samples(samples: Sequence[Any]):
    """Concatenates SampleBatches (or MultiAgentBatches) row-wise.

    Empty batches are skipped. All non-empty batches must have the same columns and
    the same sequence flags (`zero_padded`, `time_major`, and `max_seq_len` if zero
    padded). If any input is a MultiAgentBatch, the result is one too.

    Args:
        samples: The batches to concatenate, in order.

    Returns:
        A new batch; an empty `SampleBatch()` if all inputs are empty.

    Raises:
        ValueError: If the batches' columns, nested structures or flags differ.
    """
    batches = []
    for i, s in enumerate(samples):
        if type(s) is not SampleBatch:
            if isinstance(s, MultiAgentBatch):
                return MultiAgentBatch.concat_samples(samples)
            if isinstance(s, SampleBatch):
                pass
            elif isinstance(s, dict):
                s = SampleBatch(s)
            else:
                raise TypeError(
                    f"concat_samples() takes SampleBatches; received {type(s).__name__} "
                    f"at position {i}."
                )
        if s.count > 0:
            batches.append(s)
    if not batches:
        return SampleBatch()
    first = batches[0]
    keys = tuple(dict.keys(first))
    flags = (first.zero_padded, first.time_major, first.max_seq_len if first.zero_padded else None)
    # Transpose batches -> columns through dict.values() (fast; no per-item lookups),
    # checking flags and columns on the way.
    per_batch = []
    for i, s in enumerate(batches):
        if (s.zero_padded, s.time_major, s.max_seq_len if s.zero_padded else None) != flags:
            _raise_flag_mismatch(first, s, i)
        if tuple(dict.keys(s)) == keys:
            per_batch.append(dict.values(s))
        elif set(dict.keys(s)) == set(keys):
            per_batch.append([dict.__getitem__(s, k) for k in keys])
        else:
            raise ValueError(
                "concat_samples(): all batches must have the same columns. The first "
                f"non-empty batch has {sorted(keys)}; non-empty batch {i} has "
                f"{sorted(s.keys())} (missing {sorted(set(keys) - set(s.keys()))}, extra "
                f"{sorted(set(s.keys()) - set(keys))}). Drop or add columns so they match."
            )
    data = {}
    for key, values in zip(keys, zip(*per_batch)):
        axis = 1 if first.time_major and key != Columns.SEQ_LENS and not key.startswith("state_in_") else 0
        data[key] = batch_ops.concat_leaves(values, key, axis=axis)
    max_seq_lens = [s.max_seq_len for s in batches if s.max_seq_len is not None]
    return SampleBatch(
        data,
        _time_major=first.time_major,
        _zero_padded=first.zero_padded,
        _max_seq_len=max(max_seq_lens) if max_seq_lens else None,
        _is_training=first._is_training,
    )


def _raise_flag_mismatch(first: SampleBatch, other: SampleBatch, index: int) -> None:
    for flag in ("zero_padded", "time_major"):
        if getattr(other, flag) != getattr(first, flag):
            raise ValueError(
                f"concat_samples(): all batches must share `{flag}`; the first non-empty "
                f"batch has {getattr(first, flag)!r}, non-empty batch {index} has "
                f"{getattr(other, flag)!r}."
            )
    raise ValueError(
        "concat_samples(): zero-padded batches must share `max_seq_len`; received "
        f"{first.max_seq_len} and {other.max_seq_len} (batch {index})."
    )
