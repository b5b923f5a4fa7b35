"""TrainColumns: a batch's train columns as checked numpy arrays of fixed specs.

The compiled learning functions of a policy take exactly the columns its
`loss_and_stats` reads, with fixed dtypes, so that they trace once. The first batch fixes
them: its numeric columns are traced through `loss_and_stats` on symbolic inputs, and
the columns it reads become the train columns (floats as float32). Later batches must
have them; other columns are left out.

Sequence batches (with `seq_lens`, for recurrent policies) arrive as rows of
concatenated sequences, or right-zero-padded (`SampleBatch.zero_padded`). They go to
the graph as one unit per sequence: time columns `[num_seqs, T, ...]` (right-zero-padded
to `T`, the batch's `max_seq_len` or the longest sequence), `state_in_*` `[num_seqs,
...]`, `seq_lens` `[num_seqs]` int32.
"""

import functools
import inspect
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.policy import space_specs
from tfrl.data.sample_batch import MultiAgentBatch


class MissingColumnError(KeyError):
    """A column the loss (or stats) reads is not in the train batch."""

    def __str__(self):
        return str(self.args[0])


class TrainBatch(dict):
    """The loss's view of a minibatch: names the policy when a column is missing.

    `update_groups` is the step's `TFPolicy.update_groups` (which optimizer groups the
    step updates), so that a loss can leave out the terms of groups the step does not
    update; None outside the learning functions (a loss then asks its policy).
    """

    def __init__(self, columns, policy_name: str, accessed=None,
                 update_groups: Optional[Dict[str, Any]] = None):
        super().__init__(columns)
        self._policy_name = policy_name
        self._accessed = accessed
        self.update_groups = update_groups

    def __getitem__(self, key):
        if self._accessed is not None:
            self._accessed.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        if self._accessed is not None:
            self._accessed.add(key)
        return super().get(key, default)

    def __missing__(self, key):
        raise MissingColumnError(
            f"The loss (or stats) of {self._policy_name} reads column {key!r}, which the train "
            f"batch lacks; it has {sorted(self)}. Add the column (e.g. in "
            "postprocess_trajectory) before learn_on_batch."
        )


def autograph_converted(fn: Callable) -> Callable:
    """`fn` as a `tf.function` with autograph would call it: converted, unless marked.

    The compiled train functions trace with `autograph=False` (their own code uses
    explicit `tf.while_loop`/`tf.cond`; converting it and `tree` costs seconds at start-up),
    but a user's `loss_and_stats` (or `loss`/`stats`) may use Python control flow on
    tensors, so those are still converted unless decorated with
    `tf.autograph.experimental.do_not_convert` (which marks them with `autograph_info__`),
    as the built-in PG/A2C/PPO losses are.
    """
    if hasattr(fn, "autograph_info__"):
        return fn
    try:
        if inspect.ismethod(fn):  # to_graph returns the converted function, unbound
            return functools.partial(tf.autograph.to_graph(fn.__func__), fn.__self__)
        return tf.autograph.to_graph(fn)
    except Exception:  # noqa: BLE001 - tf.function also falls back to the plain function
        return fn


def _is_numeric(leaf: Any) -> bool:
    leaf = np.asarray(leaf)
    return leaf.dtype != object and leaf.dtype.kind in "biuf"


def _is_per_sequence(column: str) -> bool:
    return column == Columns.SEQ_LENS or column.startswith("state_in_")


class TrainColumns:
    """Prepares batches for a policy's compiled learning functions.

    Args:
        policy: The TFPolicy (its `loss_and_stats`, spaces and recurrence are used).

    Attributes:
        specs: Column -> (nested) `tf.TensorSpec` the compiled functions take; None
            before the first batch.
        stat_shapes: `{"total_loss": shape, **{stat: shape}}` of one replica's loss and
            stats as the first batch's symbolic trace gave them (None before it, or if
            a shape was not fully known); lets the train step start its loop from zeros.
    """

    def __init__(self, policy):
        self._policy = policy
        self._name = type(policy).__name__
        self._row_specs = None  # column -> spec of one row's data, [None, ...]
        self.specs = None
        self.stat_shapes = None

    @property
    def sequences(self) -> bool:
        """Whether batches are sequence batches (the policy is recurrent)."""
        return self._policy.is_recurrent()

    def prepare(self, samples: Any, pad_to: int = 0) -> Tuple[Dict[str, Any], int]:
        """`(columns, num_units)`: the train columns of `samples` (rows or sequences).

        Args:
            samples: A SampleBatch or dict of columns.
            pad_to: For sequence batches, pad the time axis to at least this length
                (a fixed length keeps the static shapes of a tf.data pipeline fixed).

        Raises:
            TypeError: For a MultiAgentBatch, a non-dict, or a column of the wrong dtype.
            MissingColumnError: If a column the loss reads is missing.
            ValueError: For wrong shapes, lengths, actions outside the action space, or
                a batch with(out) `seq_lens` for a (non-)recurrent policy.
        """
        self._check_type(samples)
        if self._row_specs is None:
            self._row_specs = self._discover(samples)
            self.specs = {c: self._unit_spec(c, s) for c, s in self._row_specs.items()}
        missing = [c for c in self._row_specs if c not in samples]
        if missing:
            raise MissingColumnError(
                f"{self._name}.learn_on_batch(): the batch lacks columns {missing}, which the "
                f"loss reads; it has {sorted(samples)}.{self._untrained_hint(missing)}"
            )
        if Columns.ACTIONS in self._row_specs:
            error = space_specs.action_error(self._policy.action_space, samples[Columns.ACTIONS])
            if error:
                raise ValueError(f"{self._name}.learn_on_batch(): {error}; action space "
                                 f"{self._policy.action_space}.")
        columns = {}
        for column, spec in self._row_specs.items():
            value = samples[column]
            if column == Columns.OBS:
                value = space_specs.to_batch(self._policy.observation_space, value,
                                             "samples['obs']", keep_tensors=not self.sequences)
            columns[column] = tree.map_structure(
                lambda v, s: self._cast(column, v, s), value, spec)
        if self.sequences:
            return self._to_sequences(columns, samples, pad_to)
        lengths = {c: len(tree.flatten(v)[0]) for c, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(
                f"{self._name}.learn_on_batch(): columns have different lengths: {lengths}.")
        return columns, next(iter(lengths.values()))

    @staticmethod
    def time_length(columns: Dict[str, Any]) -> int:
        """The padded time axis `T` of prepared sequence columns (0 if none has one)."""
        for column, value in columns.items():
            if not _is_per_sequence(column):
                return int(np.shape(tree.flatten(value)[0])[1])
        return 0

    def _untrained_hint(self, missing: Any) -> str:
        """How to keep columns that samplers drop (view requirements marked
        `used_for_training=False`), if any of `missing` is one."""
        requirements = getattr(self._policy, "view_requirements", None) or {}
        dropped = [c for c in missing
                   if c in requirements and not requirements[c].used_for_training]
        if not dropped:
            return ""
        return (f" Samplers drop {dropped} after postprocessing because the policy's "
                f"view_requirements mark them used_for_training=False; a loss that reads "
                f"them sets that to True (for new_obs in an on-policy policy: override "
                f"loss_reads_next_obs() to return True).")

    def _check_type(self, samples: Any) -> None:
        if isinstance(samples, MultiAgentBatch):
            raise TypeError(
                f"{self._name}.learn_on_batch() takes one policy's SampleBatch; received a "
                f"MultiAgentBatch with policies {sorted(samples.policy_batches)}."
            )
        if not isinstance(samples, dict):
            raise TypeError(
                f"{self._name}.learn_on_batch() takes a SampleBatch or a dict of columns; "
                f"received {type(samples).__name__}."
            )
        if self.sequences and Columns.SEQ_LENS not in samples:
            raise ValueError(
                f"{self._name}.learn_on_batch(): the policy is recurrent, so the batch needs "
                f"'seq_lens' and 'state_in_*' columns; received columns {sorted(samples)}."
            )
        if not self.sequences and Columns.SEQ_LENS in samples:
            raise ValueError(
                f"{self._name}.learn_on_batch(): received a sequence batch (with 'seq_lens') "
                "for a policy whose model is not recurrent. Drop 'seq_lens' or use a "
                "recurrent model."
            )

    def _cast(self, column: str, value: Any, spec: tf.TensorSpec) -> Any:
        """`value` checked against `spec` and cast to its dtype: numpy, or, for a
        feed-forward policy given a `tf.Tensor` (a tf.data pipeline's batch), a tensor
        (no round trip through numpy)."""
        dtype = spec.dtype.as_numpy_dtype
        tensor = isinstance(value, tf.Tensor) and not self.sequences
        if not tensor:
            value = np.asarray(value)
        value_dtype = np.dtype(value.dtype.as_numpy_dtype) if tensor else value.dtype
        if value_dtype == object or not np.can_cast(value_dtype, dtype, "same_kind"):
            raise TypeError(
                f"learn_on_batch(): column {column!r} has dtype {value_dtype}; the compiled "
                f"train step takes {np.dtype(dtype)} (fixed by the first batch)."
            )
        if tensor:
            if tuple(value.shape[1:]) != tuple(spec.shape[1:]):
                raise ValueError(
                    f"learn_on_batch(): column {column!r} must have shape "
                    f"{space_specs.batch_shape_str(tuple(spec.shape[1:]))} (fixed by the first "
                    f"batch); received {tuple(value.shape)}.")
            return value if value_dtype == dtype else tf.cast(value, dtype)
        if tuple(value.shape[1:]) != tuple(spec.shape[1:]):
            raise ValueError(
                f"learn_on_batch(): column {column!r} must have shape "
                f"{space_specs.batch_shape_str(tuple(spec.shape[1:]))} (fixed by the first batch); "
                f"received {value.shape}."
            )
        return value.astype(dtype, copy=False)

    def _unit_spec(self, column: str, row_spec: Any) -> Any:
        if not self.sequences or _is_per_sequence(column):
            return row_spec
        return tree.map_structure(
            lambda s: tf.TensorSpec((None, None) + tuple(s.shape[1:]), s.dtype), row_spec)

    def _to_sequences(self, columns: Dict[str, Any], samples: Any,
                      pad_to: int = 0) -> Tuple[Dict[str, Any], int]:
        seq_lens = columns[Columns.SEQ_LENS]
        num_seqs = len(seq_lens)
        padded = bool(getattr(samples, "zero_padded", False))
        max_len = int(samples.max_seq_len) if padded else int(seq_lens.max(initial=1))
        out_len = max(max_len, pad_to)
        num_rows = num_seqs * max_len if padded else int(seq_lens.sum())
        # Row r of sequence i goes to padded position i * out_len + r.
        positions = np.concatenate(
            [i * out_len + np.arange(n) for i, n in enumerate(seq_lens)] or [np.zeros(0, int)])
        units = {}
        for column, value in columns.items():
            rows = len(tree.flatten(value)[0])
            expected = num_seqs if _is_per_sequence(column) else num_rows
            if rows != expected:
                what = ("one row per sequence" if _is_per_sequence(column) else
                        "one row per timestep" + (" (padded)" if padded else ""))
                raise ValueError(
                    f"{self._name}.learn_on_batch(): column {column!r} must have {what}: "
                    f"{expected} rows for seq_lens {seq_lens.tolist()}; received {rows}."
                )
            if _is_per_sequence(column):
                units[column] = value
            elif padded and out_len == max_len:
                units[column] = tree.map_structure(
                    lambda v: v.reshape((num_seqs, max_len) + v.shape[1:]), value)
            else:
                def pad(v):
                    out = np.zeros((num_seqs, out_len) + v.shape[1:], v.dtype)
                    if padded:
                        out[:, :max_len] = v.reshape((num_seqs, max_len) + v.shape[1:])
                    else:
                        out.reshape((num_seqs * out_len,) + v.shape[1:])[positions] = v
                    return out
                units[column] = tree.map_structure(pad, value)
        return units, num_seqs

    def _discover(self, samples: Dict[str, Any]) -> Dict[str, Any]:
        """Row specs of the numeric columns that loss and stats read (one symbolic trace)."""
        policy = self._policy
        row_specs = {}
        for column, value in samples.items():
            if column == Columns.INFOS or not all(_is_numeric(v) for v in tree.flatten(value)):
                continue
            row_specs[column] = tree.map_structure(
                lambda v: tf.TensorSpec((None,) + np.shape(v)[1:], tf.as_dtype(
                    np.float32 if np.asarray(v).dtype.kind == "f" else np.asarray(v).dtype)),
                value)
        # Observations keep their space's dtype (float64 for MuJoCo's Boxes), s_{t+1}
        # as s_t: losses that run one network over both (SAC's actor) need one dtype.
        for column in (Columns.OBS, Columns.NEXT_OBS):
            if column in row_specs:
                row_specs[column] = space_specs.batch_spec(policy.observation_space)
        if Columns.SEQ_LENS in row_specs:
            row_specs[Columns.SEQ_LENS] = tf.TensorSpec((None,), tf.int32)
        accessed, missing = set(), []

        def probe(batch):
            train_batch = TrainBatch(batch, self._name, accessed)
            try:
                loss, stats = autograph_converted(policy.loss_and_stats)(
                    policy.model, policy.dist_class, train_batch)
                shapes = {"total_loss": tf.convert_to_tensor(loss).shape,
                          **{k: tf.convert_to_tensor(v).shape for k, v in stats.items()}}
                if all(shape.is_fully_defined() for shape in shapes.values()):
                    self.stat_shapes = shapes
            except MissingColumnError as e:  # re-raised below, without autograph's wrapping
                missing.append(e)
                return tf.constant(0.0)
            return loss

        tf.function(probe, autograph=False).get_concrete_function(
            {c: self._unit_spec(c, s) for c, s in row_specs.items()})
        if missing:
            absent = [c for c in accessed if c not in samples]
            raise MissingColumnError(str(missing[0]) + self._untrained_hint(absent))
        if self.sequences:
            accessed.add(Columns.SEQ_LENS)
        return {c: s for c, s in row_specs.items() if c in accessed}
