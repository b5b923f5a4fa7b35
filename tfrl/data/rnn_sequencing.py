"""Cutting rows into RNN sequences and right-zero-padding them (RLlib's `rnn_sequencing`).

`chop_into_sequences` turns per-timestep columns into sequences of at most `max_seq_len`
steps (a new sequence starts where the episode, unroll or agent changes), padded to one
length, and picks each sequence's initial RNN state. `pad_batch_to_sequences_of_same_size`
does the same to a `SampleBatch` in place. Numpy only; the TensorFlow half of RLlib's module
(`add_time_dimension`) lives at `tfrl.policy.rnn_sequencing`, which re-exports these.

Example:
    >>> feats, states, seq_lens = chop_into_sequences(
    ...     feature_columns=[[1, 1, 2, 2, 2, 3]], state_columns=[[1, 2, 3, 4, 5, 6]],
    ...     max_seq_len=2, episode_ids=[0, 0, 1, 1, 1, 2], dynamic_max=False)
    >>> feats[0].tolist(), states[0].tolist(), seq_lens.tolist()
    ([1, 1, 2, 2, 2, 0, 3, 0], [1, 3, 5, 6], [2, 2, 1, 1])
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data import batch_ops
from tfrl.data.sample_batch import SampleBatch


def _sequence_lengths(num_rows: int, max_seq_len: int, ids: List[Optional[Sequence[Any]]]
                      ) -> np.ndarray:
    """Lengths of consecutive runs of equal (episode, unroll, agent) ids, each split at
    `max_seq_len` steps."""
    columns = [np.asarray(c) for c in ids if c is not None]
    lengths: List[int] = []
    prev = None
    for i in range(num_rows):
        key = tuple(c[i].item() if hasattr(c[i], "item") else c[i] for c in columns)
        if lengths and key == prev and lengths[-1] < max_seq_len:
            lengths[-1] += 1
        else:
            lengths.append(1)
        prev = key
    return np.asarray(lengths, dtype=np.int32)


def chop_into_sequences(
    *,
    feature_columns: Sequence[Any],
    state_columns: Sequence[Any],
    max_seq_len: int,
    episode_ids: Optional[Sequence[Any]] = None,
    unroll_ids: Optional[Sequence[Any]] = None,
    agent_indices: Optional[Sequence[Any]] = None,
    dynamic_max: bool = True,
    shuffle: bool = False,
    seq_lens: Optional[Sequence[int]] = None,
    states_already_reduced_to_init: bool = False,
    handle_nested_data: bool = False,
    _extra_padding: int = 0,
    padding: str = "zero",
) -> Tuple[List[Any], List[np.ndarray], np.ndarray]:
    """Cuts per-timestep columns into right-zero-padded sequences.

    Args:
        feature_columns: Per-timestep columns (arrays, lists, or nested structs of
            arrays with `handle_nested_data=True`).
        state_columns: RNN state columns, one row per timestep (or per sequence with
            `states_already_reduced_to_init=True`).
        max_seq_len: The longest sequence; longer runs are split.
        episode_ids: Per-row episode ids; a change starts a new sequence.
        unroll_ids: Per-row unroll ids; a change starts a new sequence.
        agent_indices: Per-row agent indices; a change starts a new sequence.
        dynamic_max: Pad to the longest sequence found (plus `_extra_padding`) instead
            of `max_seq_len`.
        shuffle: Shuffle the sequences (numpy's global RNG; seed it to reproduce).
        seq_lens: Known sequence lengths; the ids are then ignored.
        states_already_reduced_to_init: The state columns already hold one row per
            sequence.
        handle_nested_data: Feature columns may be nested structs of arrays.
        _extra_padding: Extra steps of padding with `dynamic_max`.
        padding: "zero" (zeros of the column's dtype) or "last" (repeat the last step
            of each sequence).

    Returns:
        (padded feature columns, initial states (one row per sequence), seq_lens).

    Raises:
        ValueError: For an unknown `padding`, or a column whose rows do not add up to
            the sequence lengths.
    """
    if padding not in ("zero", "last"):
        raise ValueError(
            f"chop_into_sequences(padding=...) must be 'zero' or 'last'; received {padding!r}.")
    first = feature_columns[0] if feature_columns else None
    if seq_lens is None or len(seq_lens) == 0:
        if first is None:
            raise ValueError(
                "chop_into_sequences() needs feature columns or `seq_lens` to know the rows.")
        num_rows = len(tree.flatten(first)[0]) if handle_nested_data else len(first)
        seq_lens = _sequence_lengths(num_rows, max_seq_len,
                                     [episode_ids, unroll_ids, agent_indices])
    seq_lens = np.asarray(seq_lens, dtype=np.int32)
    length = int(seq_lens.max()) + _extra_padding if dynamic_max else int(max_seq_len)
    num_seqs = len(seq_lens)

    def pad(column: Any) -> np.ndarray:
        column = np.asarray(column)
        out = batch_ops.right_zero_pad_sequences(column, seq_lens, length, "feature")
        if padding == "last":
            for i, n in enumerate(seq_lens):
                out[i * length + n:(i + 1) * length] = out[i * length + n - 1]
        return out

    features: List[Any] = []
    for column in feature_columns:
        if handle_nested_data:
            features.append(tree.map_structure(pad, column))
        else:
            features.append(pad(column))

    starts = np.cumsum(seq_lens) - seq_lens
    initial_states = []
    for column in state_columns:
        column = np.asarray(column)
        initial_states.append(column if states_already_reduced_to_init else column[starts])

    if shuffle:
        perm = np.random.permutation(num_seqs)
        rows = (perm[:, None] * length + np.arange(length)).reshape(-1)
        features = [tree.map_structure(lambda f: f[rows], f) for f in features]
        initial_states = [s[perm] for s in initial_states]
        seq_lens = seq_lens[perm]
    return features, initial_states, seq_lens


def pad_batch_to_sequences_of_same_size(
    batch: SampleBatch,
    max_seq_len: int,
    shuffle: bool = False,
    batch_divisibility_req: int = 1,
    feature_keys: Optional[Sequence[str]] = None,
    view_requirements: Optional[Dict[str, Any]] = None,
    _enable_new_api_stack: bool = False,
    padding: str = "zero",
) -> None:
    """Right-zero-pads the batch's sequences to one length, in place (as RLlib does).

    A batch with RNN states is cut into sequences (its own `seq_lens`, else by episode,
    unroll and agent, at most `max_seq_len` long) and padded to the longest sequence
    (to `max_seq_len` for states over a range of steps, see `view_requirements`);
    a batch without states is padded to `batch_divisibility_req`-long chunks if its
    length is not a multiple of it, and left alone otherwise. An already zero-padded
    batch is left alone.

    Args:
        batch: The batch; it ends up zero-padded with `max_seq_len` set.
        max_seq_len: The longest sequence when cutting by ids.
        shuffle: Shuffle the sequences.
        batch_divisibility_req: See above.
        feature_keys: The per-timestep columns to pad; default: every array column
            except `infos`, `seq_lens` and RNN states.
        view_requirements: The model's view requirements. If `state_in_0` takes a
            range of steps (a shift string such as "-3:-1", attention nets), the batch
            is padded to `max_seq_len`, not to its longest sequence.
        _enable_new_api_stack: Accepted for RLlib compatibility; not used.
        padding: "zero" or "last" (see `chop_into_sequences`).
    """
    del _enable_new_api_stack  # RLlib's signature; not used here.
    if batch.zero_padded:
        return
    count = len(batch)
    divisible = batch_divisibility_req <= 1 or count % batch_divisibility_req == 0
    has_states = "state_in_0" in batch or "state_out_0" in batch
    if has_states:
        state_view = (view_requirements or {}).get("state_in_0")
        dynamic_max = not isinstance(getattr(state_view, "shift", None), str)
    elif not divisible:
        max_seq_len, dynamic_max = batch_divisibility_req, False
    else:
        return
    seq_lens = batch.get(Columns.SEQ_LENS)
    reduced = (seq_lens is not None and "state_in_0" in batch
               and len(batch["state_in_0"]) == len(seq_lens))
    state_keys = [k for k in batch if k.startswith("state_in_")]
    if feature_keys is None:
        feature_keys = [k for k in batch if k not in (Columns.INFOS, Columns.SEQ_LENS)
                        and not k.startswith("state_in_") and not k.startswith("state_out_")]
    features, initial_states, new_seq_lens = chop_into_sequences(
        feature_columns=[batch[k] for k in feature_keys],
        state_columns=[batch[k] for k in state_keys],
        episode_ids=batch.get(Columns.EPS_ID),
        unroll_ids=batch.get(Columns.UNROLL_ID),
        agent_indices=batch.get(Columns.AGENT_INDEX),
        seq_lens=seq_lens,
        max_seq_len=max_seq_len,
        dynamic_max=dynamic_max,
        states_already_reduced_to_init=reduced,
        shuffle=shuffle,
        handle_nested_data=True,
        padding=padding,
    )
    length = int(new_seq_lens.max()) if dynamic_max else int(max_seq_len)
    batch.set_padded_sequences(
        {k: f for k, f in zip(feature_keys, features)},
        {k: s for k, s in zip(state_keys, initial_states)},
        new_seq_lens, length)
