"""SampleBatch: a dict of equally long numpy columns, the unit of experience in tfrl.

Rows are timesteps, columns are named by `tfrl.core.columns.Columns`; values are
numpy arrays or nested dicts/tuples of them (for Dict/Tuple spaces). Sequence
(RNN) batches additionally carry `seq_lens` and one `state_in_<i>` row per sequence.

Example:
    >>> import numpy as np
    >>> b1 = SampleBatch({"a": np.array([1, 2])})
    >>> b2 = SampleBatch({"a": np.array([3, 4, 5])})
    >>> b1.concat(b2)["a"].tolist()
    [1, 2, 3, 4, 5]
"""

import contextlib
import copy as copy_lib
import sys
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.policy import batch_ops

if TYPE_CHECKING:
    from tfrl.policy.multi_agent_batch import MultiAgentBatch

DEFAULT_POLICY_ID = "default_policy"

_DEFAULT_COMPRESS_COLUMNS = frozenset([Columns.OBS, Columns.NEXT_OBS])


class SampleBatch(dict):
    """A dict of columns (str -> array) that all share the same number of rows.

    Construct it like a `dict`; lists become numpy arrays. Keyword-only options:

    Args:
        _time_major: Whether sequence data is time-major ([T, B, ...]).
        _max_seq_len: Maximum sequence length; defaults to `max(seq_lens)`.
        _zero_padded: Whether each sequence is right-zero-padded to `max_seq_len`.
        _is_training: Whether the batch is for training (else inference). If None,
            taken (and removed) from an `"is_training"` entry, default False.

    Raises:
        TypeError: If a key is not a string.
        ValueError: If columns have different numbers of rows.
    """

    # Column names, as class attributes for RLlib compatibility.
    OBS = Columns.OBS
    NEXT_OBS = Columns.NEXT_OBS
    ACTIONS = Columns.ACTIONS
    REWARDS = Columns.REWARDS
    PREV_ACTIONS = Columns.PREV_ACTIONS
    PREV_REWARDS = Columns.PREV_REWARDS
    DONES = Columns.DONES
    TERMINATEDS = Columns.TERMINATEDS
    TRUNCATEDS = Columns.TRUNCATEDS
    INFOS = Columns.INFOS
    T = Columns.T
    EPS_ID = Columns.EPS_ID
    ENV_ID = Columns.ENV_ID
    AGENT_INDEX = Columns.AGENT_INDEX
    UNROLL_ID = Columns.UNROLL_ID
    ACTION_DIST_INPUTS = Columns.ACTION_DIST_INPUTS
    ACTION_PROB = Columns.ACTION_PROB
    ACTION_LOGP = Columns.ACTION_LOGP
    VF_PREDS = Columns.VF_PREDS
    VALUES_BOOTSTRAPPED = Columns.VALUES_BOOTSTRAPPED
    SEQ_LENS = Columns.SEQ_LENS

    def __init__(self, *args, **kwargs):
        self.time_major = kwargs.pop("_time_major", None)
        self.max_seq_len = kwargs.pop("_max_seq_len", None)
        self.zero_padded = kwargs.pop("_zero_padded", False)
        self._is_training = kwargs.pop("_is_training", None)
        dict.__init__(self, *args, **kwargs)

        self.accessed_keys = set()
        self.added_keys = set()
        self.deleted_keys = set()
        self.intercepted_values = {}
        self.get_interceptor = None

        for key in self.keys():
            if not isinstance(key, str):
                raise TypeError(
                    f"SampleBatch column names must be strings; received key {key!r} "
                    f"of type {type(key).__name__}."
                )

        seq_lens = dict.get(self, Columns.SEQ_LENS)
        if seq_lens is None or (isinstance(seq_lens, (list, tuple)) and not seq_lens):
            dict.pop(self, Columns.SEQ_LENS, None)
            seq_lens = None
        elif isinstance(seq_lens, (list, tuple)):
            seq_lens = np.asarray(seq_lens, dtype=np.int32)
            dict.__setitem__(self, Columns.SEQ_LENS, seq_lens)
        if self.max_seq_len is None and seq_lens is not None and len(seq_lens) > 0:
            self.max_seq_len = int(np.max(seq_lens))
        if self._is_training is None:
            self._is_training = bool(dict.pop(self, "is_training", False))

        for key, value in list(self.items()):
            if isinstance(value, (list, dict, tuple)):
                dict.__setitem__(self, key, batch_ops.numpify(value, key))

        self.count = self._infer_and_check_count()
        self._slice_map = None

    # ------------------------------------------------------------------ basics

    def _infer_and_check_count(self) -> int:
        seq_lens = dict.get(self, Columns.SEQ_LENS)
        lengths = {}
        for key, value in self.items():
            if key == Columns.SEQ_LENS:
                continue
            n = batch_ops.num_rows(value)
            if n is not None:
                lengths[key] = n
        state_keys = [k for k in lengths if k.startswith("state_in_") or k.startswith("state_out_")]
        if seq_lens is not None and len(seq_lens) > 0:
            count = int(np.sum(seq_lens))
            for key in state_keys:
                if lengths[key] != len(seq_lens):
                    raise ValueError(
                        f"SampleBatch column '{key}' must hold one row per sequence "
                        f"({len(seq_lens)} sequences in seq_lens); received "
                        f"{lengths[key]} rows."
                    )
            allowed = {count}
            if self.zero_padded and self.max_seq_len:
                allowed.add(len(seq_lens) * self.max_seq_len)
            row_keys = {k: n for k, n in lengths.items() if k not in state_keys}
            for key, n in row_keys.items():
                if n not in allowed:
                    raise ValueError(
                        f"SampleBatch column '{key}' has {n} rows but seq_lens sums to "
                        f"{count}{' (zero-padded: ' + str(max(allowed)) + ')' if len(allowed) > 1 else ''}. "
                        "Every per-timestep column needs one row per timestep."
                    )
            return count
        if len(set(lengths.values())) > 1:
            described = ", ".join(f"'{k}': {n}" for k, n in lengths.items())
            raise ValueError(
                "All columns of a SampleBatch must have the same number of rows; "
                f"received {described}. Fix the column(s) whose length differs."
            )
        return next(iter(lengths.values()), 0)

    def __len__(self) -> int:
        return self.count

    def __reduce__(self):
        # dict subclasses otherwise unpickle through __setitem__ before __init__ ran.
        flags = dict(
            _time_major=self.time_major,
            _max_seq_len=self.max_seq_len,
            _zero_padded=self.zero_padded,
            _is_training=self._is_training,
        )
        return (_rebuild_sample_batch, (dict(self.items()), flags))

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._slice(key)
        if key == "is_training":
            return self.is_training
        self.accessed_keys.add(key)
        value = dict.__getitem__(self, key)
        if self.get_interceptor is not None:
            if key not in self.intercepted_values:
                self.intercepted_values[key] = self.get_interceptor(value)
            value = self.intercepted_values[key]
        return value

    def __setitem__(self, key, value) -> None:
        if not isinstance(key, str):
            raise TypeError(
                f"SampleBatch column names must be strings; received {key!r}."
            )
        if isinstance(value, (list, dict, tuple)):
            value = batch_ops.numpify(value, key)
        if key not in self:
            self.added_keys.add(key)
        dict.__setitem__(self, key, value)
        self.intercepted_values.pop(key, None)
        if key == Columns.SEQ_LENS:
            self._slice_map = None

    def __delitem__(self, key) -> None:
        dict.__delitem__(self, key)
        self.deleted_keys.add(key)
        self.intercepted_values.pop(key, None)

    def get(self, key, default=None):
        """`self[key]` (with access tracking and interceptor) or `default`."""
        try:
            return self.__getitem__(key)
        except KeyError:
            return default

    def __repr__(self) -> str:
        parts = []
        for key, value in self.items():
            leaves = tree.flatten(value)
            if len(leaves) == 1 and hasattr(leaves[0], "shape"):
                parts.append(f"{key}: {getattr(leaves[0], 'dtype', '?')}{tuple(leaves[0].shape)}")
            else:
                parts.append(f"{key}: <{type(value).__name__}>")
        seqs = f", seqs={len(self[Columns.SEQ_LENS])}" if Columns.SEQ_LENS in self else ""
        return f"SampleBatch({self.count} rows{seqs}: {', '.join(parts)})"

    __str__ = __repr__

    @property
    def is_training(self) -> bool:
        """Whether this batch is meant for training (vs. action computation)."""
        return bool(self._is_training)

    def set_training(self, training: bool = True) -> None:
        self._is_training = bool(training)

    def set_get_interceptor(self, fn: Optional[Callable[[Any], Any]]) -> None:
        """Applies `fn` to column values on access (e.g. numpy -> tensor), cached."""
        self.intercepted_values = {}
        self.get_interceptor = fn

    def _new(self, data: Dict[str, Any], **flags) -> "SampleBatch":
        """A SampleBatch with `data` and this batch's flags (overridable)."""
        kwargs = dict(
            _time_major=self.time_major,
            _max_seq_len=self.max_seq_len,
            _zero_padded=self.zero_padded,
            _is_training=self._is_training,
        )
        kwargs.update(flags)
        return SampleBatch(data, **kwargs)

    # ------------------------------------------------------------- step counts

    def agent_steps(self) -> int:
        """Number of rows; mirrors `MultiAgentBatch.agent_steps()`."""
        return len(self)

    def env_steps(self) -> int:
        """Number of rows; mirrors `MultiAgentBatch.env_steps()`."""
        return len(self)

    def _done_flags(self) -> Optional[np.ndarray]:
        """terminateds | truncateds (or legacy dones) as a bool array, or None."""
        flags = None
        for key in (Columns.TERMINATEDS, Columns.TRUNCATEDS):
            if key in self:
                col = np.asarray(dict.__getitem__(self, key), dtype=bool)
                flags = col if flags is None else (flags | col)
        if flags is None and Columns.DONES in self:
            flags = np.asarray(dict.__getitem__(self, Columns.DONES), dtype=bool)
        return flags

    def is_terminated_or_truncated(self) -> bool:
        """Whether the last row is terminated or truncated (or legacy `dones`)."""
        flags = self._done_flags()
        return bool(flags is not None and len(flags) > 0 and flags[-1])

    def is_single_trajectory(self) -> bool:
        """True if no row but the last is terminated or truncated."""
        flags = self._done_flags()
        return flags is None or not np.any(flags[:-1])

    def as_multi_agent(self) -> "MultiAgentBatch":
        """This batch wrapped as `MultiAgentBatch({DEFAULT_POLICY_ID: self})`."""
        from tfrl.policy.multi_agent_batch import MultiAgentBatch

        return MultiAgentBatch({DEFAULT_POLICY_ID: self}, env_steps=self.count)

    # ------------------------------------------------------------ concatenation

    def concat(self, other: "SampleBatch") -> "SampleBatch":
        """A new batch with the rows of `self` followed by those of `other`."""
        from tfrl.policy.sample_batch_concat import concat_samples

        return concat_samples([self, other])

    @staticmethod
    def concat_samples(samples):
        """See `tfrl.policy.sample_batch_concat.concat_samples`."""
        from tfrl.policy.sample_batch_concat import concat_samples

        return concat_samples(samples)

    def copy(self, shallow: bool = False) -> "SampleBatch":
        """A copy of this batch; arrays are copied unless `shallow`."""
        if shallow:
            data = dict(self.items())
        else:
            data = {k: tree.map_structure(_deep_copy_leaf, v) for k, v in self.items()}
        out = self._new(data)
        out.set_get_interceptor(self.get_interceptor)
        out.added_keys = set(self.added_keys)
        out.deleted_keys = set(self.deleted_keys)
        out.accessed_keys = set(self.accessed_keys)
        return out

    # ----------------------------------------------------------------- access

    def columns(self, keys: List[str]) -> List[Any]:
        """The values of the columns `keys`, in that order.

        Raises:
            KeyError: If a key is not a column of this batch.
        """
        missing = [k for k in keys if k not in self]
        if missing:
            raise KeyError(
                f"SampleBatch.columns(): no column(s) {missing}; the batch has "
                f"{sorted(self.keys())}."
            )
        return [self[k] for k in keys]

    def rows(self) -> Iterator[Dict[str, Any]]:
        """Yields one dict per row; a sequence batch's rows carry `seq_lens=[1]`."""
        seq_lens = Columns.SEQ_LENS in self
        keys = [
            k for k in self.keys()
            if k != Columns.SEQ_LENS and not (seq_lens and k.startswith("state_"))
        ]
        for i in range(self.count):
            row = {k: tree.map_structure(lambda v: v[i], dict.__getitem__(self, k)) for k in keys}
            if seq_lens:
                row[Columns.SEQ_LENS] = np.array([1], dtype=np.int32)
            yield row

    def size_bytes(self) -> int:
        """Bytes held by all columns: `nbytes` of arrays, `sys.getsizeof` otherwise."""
        total = 0
        for leaf in tree.flatten(dict(self.items())):
            total += leaf.nbytes if isinstance(leaf, np.ndarray) else sys.getsizeof(leaf)
        return total

    # ------------------------------------------------------------- reordering

    def shuffle(self, *, seed: Optional[int] = None) -> "SampleBatch":
        """Shuffles the rows in place with one random permutation.

        Args:
            seed: Seed for the permutation; None uses numpy's global RNG (seed it
                with `np.random.seed` for reproducibility).

        Returns:
            This (now shuffled) batch.

        Raises:
            ValueError: If the batch holds sequences (`seq_lens`).
        """
        if Columns.SEQ_LENS in self:
            raise ValueError(
                "SampleBatch.shuffle not possible when your data has `seq_lens` "
                "defined: shuffling rows would tear sequences apart. Shuffle whole "
                "sequences instead (e.g. the tf.data pipeline does)."
            )
        rng = np.random if seed is None else np.random.default_rng(seed)
        perm = rng.permutation(self.count)
        for key, value in list(self.items()):
            dict.__setitem__(self, key, tree.map_structure(lambda v: np.asarray(v)[perm], value))
        self.intercepted_values = {}
        return self

    # ---------------------------------------------------------------- slicing

    def _slice(self, slice_: slice) -> "SampleBatch":
        if slice_.step not in (None, 1):
            raise ValueError(
                f"SampleBatch slices must be contiguous; received step={slice_.step}."
            )
        if Columns.SEQ_LENS in self:
            return self._slice_sequences(slice_)
        start, stop, _ = slice_.indices(self.count)
        stop = max(stop, start)
        data = {k: tree.map_structure(lambda v: v[start:stop], v) for k, v in self.items()}
        return self._new(data)

    def _slice_sequences(self, slice_: slice) -> "SampleBatch":
        """Slices a sequence batch; the bounds (timesteps) must fall on sequence starts."""
        seq_lens = np.asarray(dict.__getitem__(self, Columns.SEQ_LENS))
        padded = self.zero_padded and self.max_seq_len
        lens = np.full(len(seq_lens), self.max_seq_len) if padded else seq_lens
        total = int(np.sum(lens))
        start, stop, _ = slice_.indices(total)
        stop = max(stop, start)
        bounds = np.concatenate([[0], np.cumsum(lens)])
        seq_start = np.searchsorted(bounds, start)
        seq_stop = np.searchsorted(bounds, stop)
        if bounds[seq_start] != start or seq_stop >= len(bounds) or bounds[seq_stop] != stop:
            raise ValueError(
                f"Slicing a sequence batch must cut at sequence starts {bounds.tolist()}; "
                f"received [{start}:{stop}]. Use `slice(start, end, state_start, "
                "state_end)` to pick rows and sequences separately."
            )
        return self.slice(start, stop, state_start=int(seq_start), state_end=int(seq_stop))

    def slice(
        self,
        start: int,
        end: int,
        state_start: Optional[int] = None,
        state_end: Optional[int] = None,
    ) -> "SampleBatch":
        """Rows `[start, end)` of this batch, without copying.

        Args:
            start: First row. If negative, the result is left-zero-padded with
                `-start` rows of zeros, followed by rows `[0, end)`.
            end: One past the last row.
            state_start: For sequence batches: first sequence (`state_in_*` and
                `seq_lens` row) to keep.
            state_end: For sequence batches: one past the last sequence to keep.

        Returns:
            A new SampleBatch.
        """
        seq_batch = Columns.SEQ_LENS in self
        data = {}
        for key, value in self.items():
            if seq_batch and (key == Columns.SEQ_LENS or key.startswith("state_in_")):
                if state_start is not None:
                    data[key] = tree.map_structure(lambda v: v[state_start:state_end], value)
                continue
            if start < 0:
                data[key] = tree.map_structure(
                    lambda v: batch_ops.left_zero_pad(v[0:end], -start), value
                )
            else:
                data[key] = tree.map_structure(lambda v: v[start:end], value)
        flags = {}
        if seq_batch and state_start is None:
            flags = dict(_max_seq_len=None, _zero_padded=False)
        return self._new(data, **flags)

    def timeslices(
        self,
        size: Optional[int] = None,
        num_slices: Optional[int] = None,
        k: Optional[int] = None,
    ) -> List["SampleBatch"]:
        """Splits the batch into consecutive slices, starting at row 0.

        Args:
            size: Rows per slice; the last slice holds the remainder.
            num_slices: Number of slices; sizes differ by at most one, the larger
                slices come last (10 rows into 3 → 3, 3, 4).
            k: Deprecated alias of `size`.

        Returns:
            The list of slices (views into this batch).

        Raises:
            ValueError: If neither or both of `size` and `num_slices` are given, or
                they are not positive integers.
        """
        if k is not None:
            warnings.warn(
                "SampleBatch.timeslices(k=...) is deprecated; use size=... or "
                "num_slices=... instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            if size is not None:
                raise ValueError("timeslices(): pass `size` or its deprecated alias `k`, not both.")
            size = k
        if (size is None) == (num_slices is None):
            raise ValueError(
                "timeslices() needs exactly one of `size` or `num_slices`; received "
                f"size={size!r}, num_slices={num_slices!r}."
            )
        name, value = ("size", size) if size is not None else ("num_slices", num_slices)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(
                f"timeslices(): `{name}` must be a positive int; received {value!r}."
            )
        total = len(self)
        if total == 0:
            return []
        if size is not None:
            bounds = list(range(0, total, size)) + [total]
        else:
            bounds, left, start = [0], total, 0
            for i in range(num_slices):
                start += left // (num_slices - i)
                left = total - start
                bounds.append(start)
        return [self[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a or size is None]

    def split_by_episode(self, key: Optional[str] = None) -> List["SampleBatch"]:
        """Splits the batch into one batch per (contiguous) episode.

        By default splits where `eps_id` changes; without `eps_id`, after every row
        that is terminated or truncated (or, in legacy data, `dones`). A trailing
        part without a final done flag is returned too.

        Args:
            key: Force the criterion: "eps_id", or "dones" (terminated or truncated),
                "terminateds" or "truncateds".

        Returns:
            The episode slices (views), in order; their lengths sum to `len(self)`.

        Raises:
            KeyError: If the needed column is missing.
            ValueError: If `key` is not one of the keys above.
        """
        valid = (Columns.EPS_ID, Columns.DONES, Columns.TERMINATEDS, Columns.TRUNCATEDS)
        if key is not None and key not in valid:
            raise ValueError(
                f"split_by_episode(key=...) must be one of {list(valid)}; received {key!r}."
            )
        if key is None:
            key = Columns.EPS_ID if Columns.EPS_ID in self else Columns.DONES
        if self.count == 0:
            return []
        if key == Columns.EPS_ID:
            if Columns.EPS_ID not in self:
                raise KeyError(
                    "split_by_episode(key='eps_id') needs an 'eps_id' column; the batch "
                    f"has {sorted(self.keys())}."
                )
            ids = np.asarray(dict.__getitem__(self, Columns.EPS_ID))
            cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        else:
            if key == Columns.DONES:
                flags = self._done_flags()
            elif key in self:
                flags = np.asarray(dict.__getitem__(self, key), dtype=bool)
            else:
                flags = None
            if flags is None:
                raise KeyError(
                    "split_by_episode() needs an 'eps_id' column or done flags "
                    "('terminateds'/'truncateds', or legacy 'dones'); the batch has "
                    f"{sorted(self.keys())}."
                )
            cuts = np.flatnonzero(flags[:-1]) + 1
        bounds = [0] + cuts.tolist() + [self.count]
        return [self[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    # -------------------------------------------------------------- sequences

    def right_zero_pad(self, max_seq_len: int, exclude_states: bool = True) -> "SampleBatch":
        """Right-zero-pads every sequence to `max_seq_len` rows, in place.

        Each sequence i moves to rows `[i * max_seq_len, i * max_seq_len + seq_lens[i])`,
        the rest is zeros of the column's dtype (None for object columns). `count`
        stays the number of real timesteps.

        Args:
            max_seq_len: Padded length of each sequence.
            exclude_states: Leave `state_in_*` columns (one row per sequence) as is.

        Returns:
            This (now zero-padded) batch.

        Raises:
            ValueError: If there are no `seq_lens` or a sequence is longer than
                `max_seq_len`.
        """
        seq_lens = dict.get(self, Columns.SEQ_LENS)
        if seq_lens is None:
            raise ValueError(
                "Cannot right-zero-pad SampleBatch if no `seq_lens` field present! "
                f"Received columns {sorted(self.keys())}; add `seq_lens` (the length "
                "of each sequence) first."
            )
        seq_lens = np.asarray(seq_lens)
        if len(seq_lens) and max_seq_len < int(seq_lens.max()):
            raise ValueError(
                f"right_zero_pad(max_seq_len={max_seq_len}) is shorter than the longest "
                f"sequence ({int(seq_lens.max())})."
            )
        if self.zero_padded:
            if self.max_seq_len == max_seq_len:
                return self
            raise ValueError(
                f"This batch is already zero-padded to {self.max_seq_len}; received "
                f"max_seq_len={max_seq_len}."
            )
        for key, value in list(self.items()):
            if key == Columns.SEQ_LENS or (exclude_states and key.startswith("state_in_")):
                continue
            dict.__setitem__(
                self,
                key,
                tree.map_structure(
                    lambda v: batch_ops.right_zero_pad_sequences(v, seq_lens, max_seq_len, key),
                    value,
                ),
            )
        self.intercepted_values = {}
        self.zero_padded = True
        self.max_seq_len = max_seq_len
        return self

    # ------------------------------------------------------------ compression

    def compress(
        self, bulk: bool = False, columns: Sequence[str] = _DEFAULT_COMPRESS_COLUMNS
    ) -> "SampleBatch":
        """Compresses the given columns in place (see `tfrl.utils.compression`).

        Args:
            bulk: Compress each column as one blob; else one blob per row (an object
                array), so rows can still be sliced and shuffled.
            columns: Columns to compress; missing ones are ignored.

        Returns:
            This (now compressed) batch.
        """
        for key in columns:
            if key in self:
                value = dict.__getitem__(self, key)
                dict.__setitem__(
                    self, key, tree.map_structure(lambda v: batch_ops.compress_leaf(v, bulk), value)
                )
        self.intercepted_values = {}
        return self

    def decompress_if_needed(
        self, columns: Sequence[str] = _DEFAULT_COMPRESS_COLUMNS
    ) -> "SampleBatch":
        """Decompresses the given columns in place if they are compressed."""
        for key in columns:
            if key in self:
                value = dict.__getitem__(self, key)
                dict.__setitem__(self, key, tree.map_structure(batch_ops.decompress_leaf, value))
        self.intercepted_values = {}
        return self

    # ------------------------------------------------------------ model input

    def get_single_step_input_dict(
        self, view_requirements: Dict[str, Any], index: Union[str, int] = "last"
    ) -> "SampleBatch":
        """A one-row input dict for a model call at row `index`.

        `index="last"` describes the step *after* the last row (for bootstrapping a
        value): `obs` comes from `new_obs`, `prev_actions` from `actions` and
        `prev_rewards` from `rewards`. An int index takes row `index` as is.

        Args:
            view_requirements: view column -> `ViewRequirement`.
            index: "last" or an int row index.

        Returns:
            A SampleBatch with one row and `seq_lens=[1]`.
        """
        from tfrl.policy.input_dict import single_step_input_dict

        return SampleBatch(
            single_step_input_dict(self, view_requirements, index),
            seq_lens=np.array([1], dtype=np.int32),
        )

    def to_device(self, device: Optional[str] = None, framework: str = "tf2") -> "SampleBatch":
        """Converts numeric columns to `tf.Tensor`s placed on `device`, in place.

        Object columns (e.g. `infos`) are left as numpy arrays.

        Raises:
            ValueError: If `framework` is not "tf2"/"tf" (tfrl runs on TensorFlow).
        """
        if framework not in ("tf2", "tf"):
            raise ValueError(
                f"tfrl batches convert to TensorFlow tensors only; received "
                f"framework={framework!r}. Use framework='tf2'."
            )
        import tensorflow as tf

        def _convert(v):
            if isinstance(v, np.ndarray) and v.dtype != object and v.dtype.kind not in "US":
                return tf.convert_to_tensor(v)
            return v

        with tf.device(device) if device else contextlib.nullcontext():
            for key, value in list(self.items()):
                dict.__setitem__(self, key, tree.map_structure(_convert, value))
        self.intercepted_values = {}
        return self


def _rebuild_sample_batch(data, flags):
    return SampleBatch(data, **flags)


def _deep_copy_leaf(value):
    if isinstance(value, np.ndarray):
        return copy_lib.deepcopy(value) if value.dtype == object else value.copy()
    return copy_lib.deepcopy(value)


def __getattr__(name):
    # `MultiAgentBatch` and `concat_samples` live in their own modules (they need
    # SampleBatch); RLlib users import them from here.
    if name == "MultiAgentBatch":
        from tfrl.policy.multi_agent_batch import MultiAgentBatch

        return MultiAgentBatch
    if name == "concat_samples":
        from tfrl.policy.sample_batch_concat import concat_samples

        return concat_samples
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
