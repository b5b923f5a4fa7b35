"""SampleBatch and MultiAgentBatch, the units of experience in tfrl, and their concat.

A `SampleBatch` is a dict of equally long numpy columns. Rows are timesteps, columns are named by `tfrl.core.columns.Columns`; values are
numpy arrays or nested dicts/tuples of them (for Dict/Tuple spaces). Sequence
(RNN) batches additionally carry `seq_lens` and one `state_in_<i>` row per sequence.
A `MultiAgentBatch` holds one SampleBatch per policy over the same env steps.
`concat_samples` concatenates either kind row-wise. The three live in one module
because each needs the others (`SampleBatch.as_multi_agent`, `SampleBatch.concat`,
`MultiAgentBatch.concat_samples`). Numpy only: no TensorFlow import here.

RLlib's paths `tfrl.policy.sample_batch` and `tfrl.policy.multi_agent_batch` re-export
these names.

Example:
    >>> import numpy as np
    >>> b1 = SampleBatch({"a": np.array([1, 2])})
    >>> b2 = SampleBatch({"a": np.array([3, 4, 5])})
    >>> b1.concat(b2)["a"].tolist()
    [1, 2, 3, 4, 5]
"""

import copy as copy_lib
import itertools
import sys
from collections import defaultdict
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data import batch_ops, sample_batch_rows
from tfrl.data.input_dict import single_step_input_dict
from tfrl.utils.checks import check_int

DEFAULT_POLICY_ID = "default_policy"

_DEFAULT_COMPRESS_COLUMNS = frozenset([Columns.OBS, Columns.NEXT_OBS])

# Unroll ids: unique across the process (samplers' chunks, builders, timeslices).
_UNROLL_IDS = itertools.count()


def attempt_count_timesteps(tensor_dict: Dict[str, Any]) -> int:
    """The number of timesteps in a dict of columns, counted as RLlib counts them.

    The sum of `seq_lens` if the dict has a non-empty one; else the length of the first
    column (its first leaf, if nested) that is not `infos` or an RNN state
    (`state_in_*`, `state_out_*`) and has a non-zero length; else 0. Nothing else is
    checked (`SampleBatch` checks that the columns agree).

    Example:
        >>> attempt_count_timesteps({"infos": [{}, {}], "obs": np.zeros((3, 2))})
        3
        >>> attempt_count_timesteps({"obs": np.zeros(6), "seq_lens": [2, 4]})
        6
    """
    seq_lens = tensor_dict.get(Columns.SEQ_LENS)
    if seq_lens is not None and len(seq_lens) > 0:
        return int(np.sum(seq_lens))
    for key, value in tensor_dict.items():
        if not sample_batch_rows.is_counted_column(key):
            continue
        leaves = tree.flatten(value) if isinstance(value, (dict, tuple)) else [value]
        if not leaves:
            continue
        first = leaves[0]
        if isinstance(first, (int, float, np.number, list)):
            first = np.asarray(first)
        try:
            length = len(first)
        except TypeError:  # a scalar (0-d array, bool, ...) has no row axis
            continue
        if length:
            return int(length)
    return 0


def next_unroll_id() -> int:
    """A process-wide unique id for one built trajectory chunk (the `unroll_id` column)."""
    return next(_UNROLL_IDS)


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
        return sample_batch_rows.check_count(self)

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
        sample_batch_rows.check_new_column(self, key, value)
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
        return sample_batch_rows.describe(self)

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
        return sample_batch_rows.done_flags(self)

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
        return MultiAgentBatch({DEFAULT_POLICY_ID: self}, env_steps=self.count)

    # ------------------------------------------------------------ concatenation

    def concat(self, other: "SampleBatch") -> "SampleBatch":
        """A new batch with the rows of `self` followed by those of `other`."""
        return concat_samples([self, other])

    @staticmethod
    def concat_samples(samples):
        """See `concat_samples` (module level)."""
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
        return sample_batch_rows.iter_rows(self)

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
        return sample_batch_rows.shuffle_rows(self, seed)

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
        return sample_batch_rows.slice_sequences(self, slice_)

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
        return sample_batch_rows.slice_rows(self, start, end, state_start, state_end)

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
        bounds = sample_batch_rows.timeslice_bounds(len(self), size, num_slices, k)
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
        bounds = sample_batch_rows.episode_bounds(self, key)
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
        return sample_batch_rows.right_zero_pad(self, max_seq_len, exclude_states)

    def set_padded_sequences(self, features: Dict[str, Any], initial_states: Dict[str, Any],
                             seq_lens: Any, max_seq_len: int) -> "SampleBatch":
        """Replaces columns with right-zero-padded sequences, in place.

        The writer behind `pad_batch_to_sequences_of_same_size`: `features` hold
        `len(seq_lens) * max_seq_len` rows each, `initial_states` one row per sequence.
        The batch becomes zero-padded with this `max_seq_len`; `count` is
        `sum(seq_lens)`.

        Raises:
            ValueError: If a feature column does not have the padded number of rows, or
                a state column not one row per sequence.
        """
        seq_lens = np.asarray(seq_lens, dtype=np.int32)
        padded_rows = len(seq_lens) * int(max_seq_len)
        for key, value in features.items():
            if batch_ops.num_rows(value) != padded_rows:
                raise ValueError(
                    f"set_padded_sequences(): column '{key}' has {batch_ops.num_rows(value)} "
                    f"rows; expected {padded_rows} ({len(seq_lens)} sequences x "
                    f"max_seq_len={max_seq_len}).")
        for key, value in initial_states.items():
            if batch_ops.num_rows(value) != len(seq_lens):
                raise ValueError(
                    f"set_padded_sequences(): state column '{key}' has "
                    f"{batch_ops.num_rows(value)} rows; expected one per sequence "
                    f"({len(seq_lens)}).")
        for key, value in itertools.chain(features.items(), initial_states.items()):
            if key not in self:
                self.added_keys.add(key)
            dict.__setitem__(self, key, value)
        dict.__setitem__(self, Columns.SEQ_LENS, seq_lens)
        self.zero_padded = True
        self.max_seq_len = int(max_seq_len)
        self.count = int(seq_lens.sum())
        self.intercepted_values = {}
        self._slice_map = None
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
        return sample_batch_rows.to_device(self, device, framework)


def _rebuild_sample_batch(data, flags):
    return SampleBatch(data, **flags)


def _deep_copy_leaf(value):
    if isinstance(value, np.ndarray):
        return copy_lib.deepcopy(value) if value.dtype == object else value.copy()
    return copy_lib.deepcopy(value)


PolicyID = str


class MultiAgentBatch:
    """A batch of experiences from several agents, one SampleBatch per policy.

    Args:
        policy_batches: Policy id -> SampleBatch of that policy's agent steps.
        env_steps: Number of env steps the batch covers. As in RLlib, it may exceed
            the agent steps held: env steps in which no agent acted, or whose agents'
            rows were dropped (e.g. `SelectExperiences` kept the trainable policies).
        policies_subset: Marks a batch that holds the rows of only some of the
            policies that acted in those env steps (informational; writers that need
            every env step to be carried by rows name it in their errors).

    Attributes:
        policy_batches: As given.
        count: The number of env steps.
        policies_subset: As given.

    Raises:
        TypeError: If `policy_batches` is not a dict of SampleBatches.
        ValueError: If `env_steps` is not an int >= 0.
    """

    def __init__(self, policy_batches: Dict[PolicyID, SampleBatch], env_steps: int, *,
                 policies_subset: bool = False):
        if not isinstance(policy_batches, dict):
            raise TypeError(
                "MultiAgentBatch(policy_batches=...) takes a dict of policy id -> "
                f"SampleBatch; received {type(policy_batches).__name__}."
            )
        for pid, batch in policy_batches.items():
            if not isinstance(batch, SampleBatch):
                raise TypeError(
                    f"MultiAgentBatch: the batch of policy {pid!r} must be a SampleBatch; "
                    f"received {type(batch).__name__}. Wrap dicts with SampleBatch(...)."
                )
        check_int(env_steps, "MultiAgentBatch(env_steps=...)", 0)
        self.policy_batches = policy_batches
        self.count = int(env_steps)
        self.policies_subset = bool(policies_subset)

    def env_steps(self) -> int:
        """The number of env steps (each holds one or more agent steps)."""
        return self.count

    def agent_steps(self) -> int:
        """The number of agent steps, summed over all policies."""
        return sum(len(b) for b in self.policy_batches.values())

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"MultiAgentBatch({self.policy_batches!r}, env_steps={self.count})"

    def as_multi_agent(self) -> "MultiAgentBatch":
        """This batch itself."""
        return self

    def copy(self) -> "MultiAgentBatch":
        """A deep copy (every policy batch copied)."""
        return MultiAgentBatch(
            {pid: b.copy() for pid, b in self.policy_batches.items()}, self.count,
            policies_subset=self.policies_subset,
        )

    def size_bytes(self) -> int:
        """Bytes held by all policy batches."""
        return sum(b.size_bytes() for b in self.policy_batches.values())

    def compress(self, bulk: bool = False, columns=_DEFAULT_COMPRESS_COLUMNS) -> None:
        """Compresses every policy batch in place (see `SampleBatch.compress`)."""
        for batch in self.policy_batches.values():
            batch.compress(bulk=bulk, columns=columns)

    def decompress_if_needed(self, columns=_DEFAULT_COMPRESS_COLUMNS) -> "MultiAgentBatch":
        """Decompresses every policy batch in place; returns self."""
        for batch in self.policy_batches.values():
            batch.decompress_if_needed(columns)
        return self

    @staticmethod
    def wrap_as_needed(
        policy_batches: Dict[PolicyID, SampleBatch], env_steps: int
    ) -> Union[SampleBatch, "MultiAgentBatch"]:
        """The default policy's SampleBatch if it is the only one, else a MultiAgentBatch.

        An empty dict gives an empty MultiAgentBatch.
        """
        if len(policy_batches) == 1 and DEFAULT_POLICY_ID in policy_batches:
            return policy_batches[DEFAULT_POLICY_ID]
        return MultiAgentBatch(policy_batches=policy_batches, env_steps=env_steps)

    @staticmethod
    def concat_samples(samples: Sequence[Any]) -> "MultiAgentBatch":
        """Concatenates MultiAgentBatches policy by policy; env steps are summed.

        Empty SampleBatches among the inputs are ignored.

        Raises:
            ValueError: If a non-empty input is not a MultiAgentBatch.
        """
        per_policy = defaultdict(list)
        env_steps, subset = 0, False
        for s in samples:
            if isinstance(s, SampleBatch) and len(s) == 0:
                continue
            if not isinstance(s, MultiAgentBatch):
                raise ValueError(
                    "`MultiAgentBatch.concat_samples()` can only concat MultiAgentBatch "
                    f"types, not {type(s).__name__}! Convert SampleBatches with "
                    "`batch.as_multi_agent()` first."
                )
            for pid, batch in s.policy_batches.items():
                per_policy[pid].append(batch)
            env_steps += s.env_steps()
            subset = subset or s.policies_subset
        return MultiAgentBatch(
            {pid: SampleBatch.concat_samples(b) for pid, b in per_policy.items()}, env_steps,
            policies_subset=subset,
        )

    def timeslices(self, k: int) -> List["MultiAgentBatch"]:
        """Slices of `k` env steps each, holding every agent's rows of those steps.

        Rows are ordered by (eps_id, t, agent_index); rows with equal (eps_id, t) form
        one env step ("lockstep" order). A slice may mix envs and episodes; the last
        slice holds the remaining env steps. As in RLlib (whose slices come out of a
        `SampleBatchBuilder`), every policy batch of a slice carries an `unroll_id`
        column: the rows' own if they have one, else one new id per policy batch.

        Args:
            k: Env steps per slice.

        Raises:
            ValueError: If `k` is not a positive int, a policy batch lacks the
                `eps_id`, `t` or `agent_index` column, or the batch has no rows.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"MultiAgentBatch.timeslices(k) needs an int k >= 1; received {k!r}.")
        needed = (Columns.EPS_ID, Columns.T, Columns.AGENT_INDEX)
        steps = []
        for p_index, (pid, batch) in enumerate(self.policy_batches.items()):
            missing = [c for c in needed if c not in batch]
            if missing:
                raise ValueError(
                    f"MultiAgentBatch.timeslices() needs columns {list(needed)} in every "
                    f"policy batch; policy {pid!r} lacks {missing}."
                )
            eps = batch[Columns.EPS_ID].tolist()
            ts = batch[Columns.T].tolist()
            agents = batch[Columns.AGENT_INDEX].tolist()
            steps.extend(zip(eps, ts, agents, [p_index] * len(eps), range(len(eps))))
        if not steps:
            raise ValueError("MultiAgentBatch.timeslices() received a batch without rows.")
        steps.sort()

        pids = list(self.policy_batches)
        slices = []
        rows = defaultdict(list)
        env_steps, last = 0, None
        for eps_id, t, _, p_index, row in steps:
            if (eps_id, t) != last:
                if env_steps == k:
                    slices.append(self._take(pids, rows, env_steps))
                    rows, env_steps = defaultdict(list), 0
                env_steps += 1
                last = (eps_id, t)
            rows[p_index].append(row)
        slices.append(self._take(pids, rows, env_steps))
        return slices

    def _take(self, pids, rows, env_steps) -> "MultiAgentBatch":
        batches = {}
        for p_index, idx in rows.items():
            batch = self.policy_batches[pids[p_index]]
            idx = np.asarray(idx)
            data = {}
            for key, value in batch.items():
                if key == Columns.SEQ_LENS:
                    # As RLlib's rows(): every row becomes a sequence of length 1.
                    data[key] = np.ones(len(idx), dtype=np.asarray(value).dtype)
                    continue
                if key.startswith("state_in_") and Columns.SEQ_LENS in batch:
                    raise ValueError(
                        f"MultiAgentBatch.timeslices(): policy {pids[p_index]!r} holds RNN "
                        f"states ('{key}', one row per sequence) that cannot be split into "
                        "single timesteps. Drop the state columns before timeslicing, or "
                        "slice the policy batches along sequences instead.")
                data[key] = tree.map_structure(lambda v: np.asarray(v)[idx], value)
            if Columns.UNROLL_ID not in data:
                data[Columns.UNROLL_ID] = np.repeat(next_unroll_id(), len(idx))
            batches[pids[p_index]] = batch._new(data, _max_seq_len=None, _zero_padded=False)
        return MultiAgentBatch(batches, env_steps)


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
