"""Cutting a train batch of rows into RNN sequences (RLlib's `chop_into_sequences`).

A recurrent policy learns on sequences: `seq_lens` and one `state_in_<i>` row per
sequence. Sampled batches hold rows (with `state_in_<i>` on every row); `add_sequences`
drops `state_out_<i>` and cuts the rows at trajectory boundaries (a change of `eps_id`, `agent_index` or `unroll_id`, or
a break in `t`) and every `max_seq_len` steps, keeping each sequence's first `state_in`.

Example:
    >>> import numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> batch = SampleBatch(obs=np.arange(5.0), eps_id=np.array([1, 1, 1, 2, 2]),
    ...                     t=np.array([0, 1, 2, 0, 1]), state_in_0=np.arange(5.0)[:, None])
    >>> seqs = add_sequences(batch, max_seq_len=2)
    >>> seqs["seq_lens"].tolist(), seqs["state_in_0"][:, 0].tolist()
    ([2, 1, 2], [0.0, 2.0, 3.0])
"""

from typing import Any, Mapping

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import SampleBatch

_BOUNDARY_COLUMNS = (Columns.EPS_ID, Columns.AGENT_INDEX, Columns.UNROLL_ID)


def sequence_lengths(batch: SampleBatch, max_seq_len: int) -> np.ndarray:
    """`seq_lens` (int32) of `batch`'s rows cut at trajectory ends and every
    `max_seq_len` steps."""
    if max_seq_len < 1:
        raise ValueError(f"add_sequences(): max_seq_len must be >= 1; received {max_seq_len}.")
    n = len(batch)
    starts = np.zeros(n, bool)
    if n:
        starts[0] = True
    for column in _BOUNDARY_COLUMNS:
        if column in batch:
            values = np.asarray(batch[column])
            starts[1:] |= values[1:] != values[:-1]
    if Columns.T in batch:
        t = np.asarray(batch[Columns.T])
        starts[1:] |= t[1:] != t[:-1] + 1
    lengths = []
    for length in np.diff(np.append(np.flatnonzero(starts), n)):
        full, rest = divmod(int(length), max_seq_len)
        lengths.extend([max_seq_len] * full + ([rest] if rest else []))
    return np.asarray(lengths, np.int32)


def add_sequences(batch: Mapping[str, Any], max_seq_len: int) -> SampleBatch:
    """A sequence batch (rows unchanged; `seq_lens`; `state_in_<i>` per sequence).

    `batch` is a SampleBatch or a dict of columns. A SampleBatch that already has
    `seq_lens` is returned as is.
    """
    if not isinstance(batch, SampleBatch):
        batch = SampleBatch(batch)  # a dict's len() counts columns, not rows
    if Columns.SEQ_LENS in batch:
        return batch
    seq_lens = sequence_lengths(batch, max_seq_len)
    first_rows = np.concatenate([[0], np.cumsum(seq_lens)[:-1]]).astype(np.int64)
    columns = {}
    for key in batch.keys():
        if key.startswith("state_out_"):
            continue  # not trained on; a sequence batch holds states per sequence
        value = batch[key]
        columns[key] = (np.asarray(value)[first_rows] if key.startswith("state_in_")
                        else value)
    columns[Columns.SEQ_LENS] = seq_lens
    return SampleBatch(columns, _max_seq_len=max_seq_len)
