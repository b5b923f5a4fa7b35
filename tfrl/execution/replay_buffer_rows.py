"""What a replay buffer stores of a batch: n-step transitions, timesteps or sequences.

Pure functions of numpy columns, vectorized over rows:

- `adjust_nstep(n_step, gamma, batch)`: each row becomes an n-step transition;
- `to_sequence_items(batch, max_seq_len, zero_init_states)` and
  `from_sequence_items(items)`: a batch cut into fixed-length, zero-padded sequences and
  back into a sequence batch (`seq_lens`, `state_in_*` per sequence).

Episodes. The rows of one episode are contiguous and in time order (as samplers emit
them). An episode ends after a row that is terminated or truncated (or `dones`), or
where `eps_id` changes; the last row of the batch also closes its piece.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> b = SampleBatch({"obs": np.arange(3.0), "new_obs": np.arange(1.0, 4.0),
    ...                  "rewards": np.ones(3), "terminateds": [False, False, True]})
    >>> adjust_nstep(2, 0.5, b)
    >>> b["rewards"].tolist(), b["new_obs"].tolist(), b["n_step"].tolist()
    ([1.5, 1.5, 1.0], [2.0, 3.0, 3.0], [2, 2, 1])
"""

from typing import Any, Dict, Optional

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch
from tfrl.utils.checks import check_int

# The discount exponent of a row's bootstrap: `gamma ** n_step * Q(new_obs)`. Shorter than
# `n_step` where the episode (or the batch) ends first.
N_STEP = "n_step"

_END_FLAGS = (Columns.TERMINATEDS, Columns.TRUNCATEDS, Columns.DONES)


def piece_ends(batch: SampleBatch) -> np.ndarray:
    """For each row, the index of the last row of its episode piece in `batch`.

    A piece ends after a terminated/truncated/done row, before an `eps_id` change, and at
    the end of the batch.
    """
    n = batch.count
    ends = np.zeros(n, dtype=bool)
    for flag in _END_FLAGS:
        if flag in batch:
            ends |= np.asarray(batch[flag], dtype=bool).reshape(n)
    if Columns.EPS_ID in batch:
        eps = np.asarray(batch[Columns.EPS_ID])
        ends[:-1] |= eps[1:] != eps[:-1]
    if n:
        ends[-1] = True
    positions = np.where(ends, np.arange(n), n)
    return np.minimum.accumulate(positions[::-1])[::-1]


def adjust_nstep(n_step: int, gamma: float, batch: SampleBatch) -> None:
    """Rewrites `batch`'s rows into n-step transitions, in place.

    Row `t` of a piece ending at row `e` (see `piece_ends`) spans `k = min(n_step, e - t + 1)`
    steps: `rewards[t] = sum_{j<k} gamma**j * rewards[t+j]`; `new_obs`, `terminateds`,
    `truncateds` and `dones` become those of row `t+k-1`; the new column `n_step` holds `k`.
    So a transition that reaches a termination stops bootstrapping (`terminateds` True),
    one that reaches a truncation keeps the bootstrap observation (`new_obs` of the last
    step, `terminateds` False), and one cut by the end of the batch bootstraps after `k`
    steps with `gamma ** k`. (RLlib's `adjust_nstep` assumes one trajectory per batch and
    always discounts the bootstrap by `gamma ** n_step`.)

    Args:
        n_step: Steps per transition (>= 1; 1 only adds the `n_step` column of ones).
        gamma: Discount factor.
        batch: Rows with `rewards`, `new_obs` and `terminateds` (or `dones`).

    Raises:
        ValueError: If `n_step` is not an int >= 1 or a needed column is missing.
    """
    check_int(n_step, "adjust_nstep(n_step=...)", 1)
    missing = [c for c in (Columns.REWARDS, Columns.NEXT_OBS) if c not in batch]
    if not (Columns.TERMINATEDS in batch or Columns.DONES in batch):
        missing.append(Columns.TERMINATEDS)
    if missing:
        raise ValueError(f"adjust_nstep(): the batch lacks column(s) {missing}; n-step "
                         f"transitions need rewards, new_obs and terminateds (received "
                         f"{sorted(batch.keys())}).")
    n = batch.count
    rows = np.arange(n)
    steps = np.minimum(n_step, piece_ends(batch) - rows + 1)
    offsets = np.arange(n_step)
    ahead = np.minimum(rows[:, None] + offsets[None, :], max(n - 1, 0))
    rewards = np.asarray(batch[Columns.REWARDS])
    weights = np.where(offsets[None, :] < steps[:, None], float(gamma) ** offsets, 0.0)
    returns = np.sum(rewards[ahead].astype(np.float64) * weights, axis=1)
    last = rows + steps - 1
    out_dtype = rewards.dtype if np.issubdtype(rewards.dtype, np.floating) else np.float32
    batch[Columns.REWARDS] = returns.astype(out_dtype)
    batch[Columns.NEXT_OBS] = tree.map_structure(lambda v: np.asarray(v)[last],
                                                 batch[Columns.NEXT_OBS])
    for flag in _END_FLAGS:
        if flag in batch:
            batch[flag] = np.asarray(batch[flag])[last]
    batch[N_STEP] = steps.astype(np.int32)


def _is_state_column(key: str) -> bool:
    return key.startswith("state_in_") or key.startswith("state_out_")


def to_sequence_items(batch: SampleBatch, max_seq_len: int,
                      zero_init_states: bool = True) -> Dict[str, Any]:
    """`batch` cut into sequences of at most `max_seq_len` rows, one item per sequence.

    A flat batch (no `seq_lens`) is cut along episode pieces (`piece_ends`), every
    `max_seq_len` rows. A batch with `seq_lens` (not zero-padded) keeps its sequences.

    Returns:
        Column -> items: time columns `[num_seqs, max_seq_len, ...]` (right-zero-padded),
        `state_in_*` `[num_seqs, ...]` (the state at each sequence's first row, or zeros
        if `zero_init_states`), `seq_lens` `[num_seqs]`. `state_out_*` columns are dropped.

    Raises:
        ValueError: For a zero-padded batch or a sequence longer than `max_seq_len`.
    """
    n = batch.count
    given = batch.get(Columns.SEQ_LENS)
    if given is not None:
        if batch.zero_padded:
            raise ValueError("ReplayBuffer.add(): received a zero-padded sequence batch; add "
                             "sequences as concatenated rows (not right_zero_pad()-ed).")
        seq_lens = np.asarray(given, dtype=np.int64)
        if len(seq_lens) and seq_lens.max() > max_seq_len:
            raise ValueError(f"ReplayBuffer.add(): received a sequence of {seq_lens.max()} "
                             f"rows; the buffer stores sequences of at most {max_seq_len} "
                             "(replay_sequence_length). Raise replay_sequence_length or "
                             "send shorter sequences.")
        starts = np.concatenate(([0], np.cumsum(seq_lens)[:-1])).astype(np.int64)
        seq_id = np.repeat(np.arange(len(seq_lens)), seq_lens)
        offset = np.arange(n) - starts[seq_id]
    else:
        ends = piece_ends(batch)
        piece_start = np.zeros(n, dtype=np.int64)
        if n:
            first = np.concatenate(([True], ends[:-1] != ends[1:]))
            piece_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
        offset = (np.arange(n) - piece_start) % max_seq_len
        is_start = offset == 0
        seq_id = np.cumsum(is_start) - 1
        starts = np.flatnonzero(is_start)
        seq_lens = np.bincount(seq_id, minlength=len(starts)) if n else np.zeros(0, np.int64)
    num_seqs = len(starts)
    items: Dict[str, Any] = {}
    for key, value in batch.items():
        if key == Columns.SEQ_LENS or key.startswith("state_out_"):
            continue
        if key.startswith("state_in_"):
            def first_state(v, key=key):
                v = np.asarray(v)
                state = v if len(v) == num_seqs and given is not None else v[starts]
                return np.zeros_like(state) if zero_init_states else state
            items[key] = tree.map_structure(first_state, value)
            continue

        def pad(v):
            v = np.asarray(v)
            out = (np.full((num_seqs, max_seq_len) + v.shape[1:], None, dtype=object)
                   if v.dtype == object else
                   np.zeros((num_seqs, max_seq_len) + v.shape[1:], v.dtype))
            out[seq_id, offset] = v
            return out
        items[key] = tree.map_structure(pad, value)
    items[Columns.SEQ_LENS] = seq_lens.astype(np.int32)
    return items


def from_sequence_items(items: Dict[str, Any], max_seq_len: int,
                        extra: Optional[Dict[str, np.ndarray]] = None) -> SampleBatch:
    """A zero-padded sequence batch of sampled sequence items (see `to_sequence_items`).

    Args:
        items: Column -> items as `to_sequence_items` returns them.
        max_seq_len: The items' sequence length.
        extra: Per-sequence columns (e.g. `weights`) repeated over each sequence's rows.
    """
    columns: Dict[str, Any] = {}
    for key, value in items.items():
        if key == Columns.SEQ_LENS or _is_state_column(key):
            columns[key] = value
        else:
            columns[key] = tree.map_structure(
                lambda v: v.reshape((-1,) + v.shape[2:]), value)
    for key, value in (extra or {}).items():
        columns[key] = np.repeat(value, max_seq_len, axis=0)
    return SampleBatch(columns, _zero_padded=True, _max_seq_len=max_seq_len)
