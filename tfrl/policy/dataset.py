"""tf.data input: SampleBatches and episodes as datasets of fixed-shape minibatches.

This is what `learn_on_batch` consumes. The batch's numeric columns are converted to
tensors once; each epoch draws a seeded permutation of the row indices on the host,
and every dataset element gathers one minibatch of rows. Minibatches therefore have
a static shape (`drop_remainder=True`), so a compiled train step traces once.

Sequence batches (with `seq_lens`) are minibatched by sequence: each element of the
dataset is `batch_size` whole sequences, right-zero-padded to `max_seq_len`
(columns `[batch_size, max_seq_len, ...]`, `state_in_*` `[batch_size, ...]`,
`seq_lens` `[batch_size]`).

Example:
    >>> import numpy as np
    >>> batch = SampleBatch({"obs": np.zeros((10, 4), np.float32), "actions": np.arange(10)})
    >>> ds = to_dataset(batch, batch_size=4, num_epochs=2, seed=0)
    >>> [tuple(mb["obs"].shape) for mb in ds]
    [(4, 4), (4, 4), (4, 4), (4, 4)]
"""

import logging
from typing import Any, Dict, Iterable, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import MultiAgentBatch
from tfrl.data.sample_batch import SampleBatch, concat_samples

logger = logging.getLogger(__name__)


def _is_numeric(leaf: Any) -> bool:
    leaf = np.asarray(leaf)
    return leaf.dtype != object and leaf.dtype.kind in "biuf"


def _as_sample_batch(data: Any) -> SampleBatch:
    if isinstance(data, MultiAgentBatch):
        raise TypeError(
            "to_dataset() takes one policy's data; received a MultiAgentBatch with "
            f"policies {sorted(data.policy_batches)}. Pass "
            "`batch.policy_batches[policy_id]` instead."
        )
    if isinstance(data, SampleBatch):
        return data
    if isinstance(data, dict):
        return SampleBatch(data)
    if isinstance(data, (list, tuple)):
        batches = []
        for i, item in enumerate(data):
            if isinstance(item, SampleBatch):
                batches.append(item)
            elif hasattr(item, "get_sample_batch"):
                batches.append(item.get_sample_batch())
            else:
                raise TypeError(
                    "to_dataset() takes a SampleBatch or a list of SampleBatches or "
                    f"episodes; item {i} is a {type(item).__name__}."
                )
        return concat_samples(batches)
    raise TypeError(
        "to_dataset() takes a SampleBatch, a dict of columns, or a list of "
        f"SampleBatches or SingleAgentEpisodes; received {type(data).__name__}."
    )


def _select_columns(batch: SampleBatch, columns: Optional[Sequence[str]]) -> Dict[str, Any]:
    """The numeric columns to feed (all of them, or exactly `columns`)."""
    if columns is not None:
        missing = [c for c in columns if c not in batch]
        if missing:
            raise KeyError(
                f"to_dataset(columns=...) names {missing}, which the batch lacks; it has "
                f"{sorted(batch.keys())}."
            )
        selected = {c: dict.__getitem__(batch, c) for c in columns}
        bad = [c for c, v in selected.items() if not all(_is_numeric(l) for l in tree.flatten(v))]
        if bad:
            raise ValueError(
                f"to_dataset(): columns {bad} are not numeric (object or string data such "
                "as 'infos' cannot become tensors); leave them out of `columns`."
            )
        return selected
    return {
        k: v for k, v in batch.items()
        if k != Columns.INFOS and all(_is_numeric(l) for l in tree.flatten(v))
    }


def _sequence_units(batch: SampleBatch, data: Dict[str, Any]) -> Dict[str, Any]:
    """Reshapes a sequence batch's columns to one unit (row) per sequence."""
    seq_lens = np.asarray(batch[Columns.SEQ_LENS])
    if not batch.zero_padded:
        batch = SampleBatch(
            {k: batch[k] for k in data if k != Columns.SEQ_LENS} | {Columns.SEQ_LENS: seq_lens},
            _max_seq_len=batch.max_seq_len,
        ).right_zero_pad(batch.max_seq_len or int(seq_lens.max()))
    max_len = batch.max_seq_len
    units = {}
    for key in data:
        value = dict.__getitem__(batch, key)
        if key == Columns.SEQ_LENS or key.startswith("state_in_"):
            units[key] = value
        else:
            units[key] = tree.map_structure(
                lambda v: np.asarray(v).reshape((len(seq_lens), max_len) + np.shape(v)[1:]), value
            )
    return units


def to_dataset(
    data: Union[SampleBatch, Iterable[Any], Dict[str, Any]],
    batch_size: int,
    *,
    shuffle: bool = True,
    seed: Optional[int] = None,
    num_epochs: int = 1,
    drop_remainder: bool = True,
    columns: Optional[Sequence[str]] = None,
) -> tf.data.Dataset:
    """A `tf.data.Dataset` of minibatches (dicts of tensors) over `num_epochs` epochs.

    Args:
        data: A SampleBatch (nested columns allowed), a dict of columns, or a list of
            SampleBatches or `SingleAgentEpisode`s (concatenated in order).
        batch_size: Rows per minibatch (sequences, for sequence batches).
        shuffle: Draw a new permutation of the rows every epoch.
        seed: Seed of the permutations; None draws one from numpy's global RNG.
        num_epochs: Passes over the data.
        drop_remainder: Drop each epoch's last, smaller minibatch so that every
            element has the same static shape. Without shuffling this always drops
            the same rows, which is logged as a warning.
        columns: Columns to include; default: every numeric column (`infos` and other
            object or string columns are left out).

    Returns:
        The dataset; its elements are dicts column -> tensor (nested for nested
        columns) with leading dimension `batch_size`.

    Raises:
        ValueError: If `batch_size` or `num_epochs` is not a positive int, or the
            data has fewer rows than one minibatch while `drop_remainder` is set.
        TypeError: If `data` is a MultiAgentBatch or of an unknown type.
    """
    for name, value in (("batch_size", batch_size), ("num_epochs", num_epochs)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"to_dataset(): `{name}` must be a positive int; received {value!r}.")
    batch = _as_sample_batch(data)
    selected = _select_columns(batch, columns)
    if Columns.SEQ_LENS in batch:
        selected = _sequence_units(batch, selected | {Columns.SEQ_LENS: batch[Columns.SEQ_LENS]})
        num_units = len(batch[Columns.SEQ_LENS])
        unit = "sequences"
    else:
        num_units = len(batch)
        unit = "rows"
    if drop_remainder and num_units < batch_size:
        raise ValueError(
            f"to_dataset(): the data has {num_units} {unit}, fewer than one minibatch of "
            f"batch_size={batch_size}, so drop_remainder=True would yield nothing. Lower "
            "batch_size or pass drop_remainder=False."
        )
    if drop_remainder and not shuffle and num_units % batch_size:
        logger.warning(
            "to_dataset(): %d of %d %s never appear (drop_remainder=True, shuffle=False, "
            "batch_size=%d).", num_units % batch_size, num_units, unit, batch_size,
        )

    rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
    orders = [
        rng.permutation(num_units) if shuffle else np.arange(num_units) for _ in range(num_epochs)
    ]
    if drop_remainder:
        per_epoch = num_units // batch_size
        index_batches = np.stack(
            [o[: per_epoch * batch_size].reshape(per_epoch, batch_size) for o in orders]
        ).reshape(-1, batch_size)
        indices = tf.data.Dataset.from_tensor_slices(index_batches)
    else:
        indices = tf.data.Dataset.from_tensor_slices(np.stack(orders)).flat_map(
            lambda order: tf.data.Dataset.from_tensor_slices(order).batch(batch_size)
        )

    tensors = tree.map_structure(tf.convert_to_tensor, selected)

    def _gather(idx):
        return tree.map_structure(lambda column: tf.gather(column, idx), tensors)

    return indices.map(_gather, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(
        tf.data.AUTOTUNE
    )
