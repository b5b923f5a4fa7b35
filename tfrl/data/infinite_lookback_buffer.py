"""InfiniteLookbackBuffer: one data column of an episode, with a lookback region.

Part of the data layer (`tfrl.data`, numpy only); RLlib's path
`tfrl.env.utils.infinite_lookback_buffer` re-exports it.

The buffer stores `data = [lookback items] + [in-episode items]`. The first `lookback`
items belong to a previous episode chunk: they are visible to the getters (e.g. for a
"previous reward" input) but are not part of `len(buffer)`.

Index model (shared by every `SingleAgentEpisode` getter and setter), with
`L = lookback` and `T = len_incl_lookback()`:

- `None` -> the in-episode items, positions `L .. T-1`.
- `i >= 0` -> position `L + i`.
- `i < 0` -> position `T + i` (from the end, may reach into the lookback), or with
  `neg_index_as_lookback=True` position `L + i` (-1 is the item just before ts=0).
- a list of ints -> each mapped as above, batched in list order.
- a slice -> `start=None` is `L`, `stop=None` is `T`, other bounds mapped like ints.

Positions outside `[0, T)` yield the `fill` value if one is given; otherwise a slice
is clipped to the data and an int (or list element) raises `IndexError`.

Example:
    >>> buffer = InfiniteLookbackBuffer([4, 5, 6, 7, 8, 9], lookback=3)
    >>> len(buffer), buffer.get(-1, neg_index_as_lookback=True)
    (3, 6)
    >>> buffer.get(slice(-2, 1), neg_index_as_lookback=True)
    [5, 6, 7]
    >>> buffer.get(slice(-8, -4), fill=0)
    [0, 0, 4, 5]
"""

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium as gym
import numpy as np
import tree

from tfrl.utils.spaces.space_utils import (
    batch,
    fill_value_for_space,
    one_hot,
    same_structure,
    structs_equal,
    to_numpy_batch,
    unbatch,
)

Indices = Union[None, int, slice, Sequence[int]]


class InfiniteLookbackBuffer:
    """A list (later: numpy struct) of items, the first `lookback` of them lookback data.

    Args:
        data: The items, lookback items first. A list (not finalized) or a numpy
            array / struct of numpy arrays with a leading batch axis (finalized).
        lookback: How many of the first items are lookback data.
        space: Optional gymnasium space of one item; needed for `one_hot_discrete`
            and for leaf-wise `fill` of nested items before `finalize()`.

    Raises:
        TypeError: If `lookback` is not an int.
        ValueError: If `lookback` is negative or larger than the number of items.
    """

    def __init__(self, data: Any = None, lookback: int = 0, space: Optional[gym.Space] = None):
        self.data = [] if data is None else data
        self.finalized = not isinstance(self.data, list)
        self.space = space
        if not isinstance(lookback, (int, np.integer)) or isinstance(lookback, bool):
            raise TypeError(
                f"`lookback` must be an int. Received: lookback={lookback!r} "
                f"(type {type(lookback).__name__}). Pass the number of lookback items."
            )
        if lookback < 0 or lookback > self.len_incl_lookback():
            raise ValueError(
                f"`lookback` must be between 0 and the number of items "
                f"({self.len_incl_lookback()}). Received: lookback={lookback}. Pass "
                "a lookback no larger than the data you provide."
            )
        self.lookback = int(lookback)

    def __len__(self) -> int:
        """Number of in-episode items (lookback excluded)."""
        return self.len_incl_lookback() - self.lookback

    def len_incl_lookback(self) -> int:
        """Number of all stored items, lookback included."""
        if not self.finalized:
            return len(self.data)
        if isinstance(self.data, np.ndarray):
            return len(self.data)
        leaves = tree.flatten(self.data)
        return len(leaves[0]) if leaves else 0

    def __getitem__(self, indices: Indices) -> Any:
        """Same as `get(indices)`."""
        return self.get(indices)

    def __setitem__(self, indices: Indices, value: Any) -> None:
        """Same as `set(value, at_indices=indices)`."""
        self.set(value, at_indices=indices)

    def __eq__(self, other: object) -> bool:
        """Equal if `other` is a buffer with equal data, lookback, finalized flag and space."""
        if not isinstance(other, InfiniteLookbackBuffer):
            return NotImplemented
        return (
            self.lookback == other.lookback
            and self.finalized == other.finalized
            and self.space == other.space
            and structs_equal(self.data, other.data)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return (
            f"InfiniteLookbackBuffer(lookback={self.lookback}, len={len(self)}, "
            f"finalized={self.finalized}, data={self.data!r})"
        )

    def append(self, item: Any) -> None:
        """Appends one item (also to finalized data, by concatenation)."""
        if not self.finalized:
            self.data.append(item)
        else:
            self.extend([item])

    def extend(self, items: Sequence[Any]) -> None:
        """Appends several items (a list, or a batch struct if finalized)."""
        if not self.finalized:
            self.data.extend(items if isinstance(items, list) else unbatch(items))
            return
        if isinstance(items, list):
            if not items:
                return
            items = to_numpy_batch(items, self.space)
        self.data = tree.map_structure(
            lambda a, b: np.concatenate([a, np.asarray(b, dtype=a.dtype)]), self.data, items
        )

    def pop(self, index: int = -1) -> None:
        """Removes the item at raw position `index` (default: the last item).

        Like `list.pop`, `index` counts over all stored items, lookback included.

        Raises:
            IndexError: If the buffer holds no item at `index`.
        """
        total = self.len_incl_lookback()
        if not -total <= index < total:
            raise IndexError(
                f"pop index out of range. Received: index={index} for a buffer holding "
                f"{total} items (lookback included).")
        if not self.finalized:
            self.data.pop(index)
        else:
            self.data = tree.map_structure(lambda a: np.delete(a, index, axis=0), self.data)
        if self.lookback > self.len_incl_lookback():
            self.lookback = self.len_incl_lookback()

    def finalize(self) -> None:
        """Converts the list of items into a numpy array (or struct of arrays)."""
        if not self.finalized:
            self.data = to_numpy_batch(self.data, self.space)
            self.finalized = True

    def get(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Returns one item or a batch of items (see the module docstring for indices).

        Args:
            indices: None (all in-episode items), an int, a list of ints or a slice.
            neg_index_as_lookback: If True, negative indices count back from ts=0
                into the lookback instead of back from the end.
            fill: Value for positions outside the stored data. For nested items every
                leaf gets it (needs `space` before `finalize()`).
            one_hot_discrete: If True, Discrete/MultiDiscrete leaves come back as
                float32 one-hot vectors (filled positions: vectors full of `fill`).
                Needs `space`.

        Returns:
            An int index gives one item. Anything else gives a batch: a list of items
            before `finalize()` (one-hot encoded items with `one_hot_discrete=True`, as
            in RLlib), a numpy array or struct of arrays after.

        Raises:
            TypeError: If `indices` has an unsupported type.
            ValueError: For a slice step < 1, or `one_hot_discrete` without a space.
            IndexError: If an int index is out of range and no `fill` is given.
        """
        if one_hot_discrete and self.space is None:
            raise ValueError(
                "one_hot_discrete=True needs the space of the items. Received: "
                "space=None. Pass `space` to the buffer (for episodes: "
                "`observation_space`/`action_space`)."
            )
        total = self.len_incl_lookback()
        positions, single = self._positions(indices, neg_index_as_lookback, fill is not None, total)
        if self.finalized:
            return self._get_from_numpy(positions, single, total, fill, one_hot_discrete)
        return self._get_from_list(positions, single, total, fill, one_hot_discrete)

    def set(
        self, new_data: Any, *, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites existing items (index rules as in `get`, without fill).

        Args:
            new_data: One item for an int index; otherwise a list of items (before
                `finalize()`) or a batch struct whose leaves have as many rows as
                there are target positions (lists are batched for you).
            at_indices: None (all in-episode items), an int, a list of ints or a slice.
            neg_index_as_lookback: As in `get`.

        Raises:
            IndexError: If an index is out of range or the sizes do not match.
            ValueError: If `new_data`'s structure does not match the stored items.
            TypeError: If, after `finalize()`, `new_data` cannot be written into the
                stored dtype without changing a value (e.g. 0.5 into an int array;
                7353.0 is cast, as in RLlib).
        """
        total = self.len_incl_lookback()
        positions, single = self._positions(at_indices, neg_index_as_lookback, False, total)
        if single:
            if not self.finalized:
                self.data[positions[0]] = new_data
            else:
                self._assign_numpy(positions[0], new_data)
            return
        if not self.finalized:
            items = new_data if isinstance(new_data, list) else unbatch(new_data)
            self._check_set_size(len(items), len(positions), at_indices)
            for p, item in zip(positions, items):
                self.data[p] = item
            return
        if isinstance(new_data, list):
            size = len(new_data)
            new_data = batch(new_data) if new_data else None
        else:
            leaves = tree.flatten(new_data)
            size = len(leaves[0]) if leaves else 0
        self._check_set_size(size, len(positions), at_indices)
        if size:
            self._assign_numpy(np.asarray(positions, dtype=np.int64), new_data)

    def get_state(self) -> Dict[str, Any]:
        """Returns a picklable dict from which `from_state` rebuilds the buffer."""
        data = list(self.data) if not self.finalized else self.data
        return {"data": data, "lookback": self.lookback, "space": self.space}

    @staticmethod
    def from_state(state: Dict[str, Any]) -> "InfiniteLookbackBuffer":
        """Rebuilds a buffer from `get_state()` output."""
        data = state["data"]
        data = list(data) if isinstance(data, list) else data
        return InfiniteLookbackBuffer(data, lookback=state["lookback"], space=state["space"])

    def copy_range(
        self, start: int, stop: int, lookback: int, *, as_list: bool = False,
        deep: bool = False,
    ) -> "InfiniteLookbackBuffer":
        """A new buffer of the raw positions `[start, stop)` (lookback included).

        Args:
            start: First raw position (0 is the first lookback item); clipped to the data.
            stop: One past the last raw position; clipped to the data.
            lookback: How many of the copied items are the new buffer's lookback
                (clipped to the number of copied items).
            as_list: Return a list-backed (not finalized) buffer even if this one is
                finalized.
            deep: Deep-copy list items (else the new list shares them with this buffer;
                numpy data is always copied).

        Returns:
            The new buffer, with this buffer's space.
        """
        total = self.len_incl_lookback()
        start, stop = min(max(start, 0), total), min(max(stop, 0), total)
        stop = max(start, stop)
        if not self.finalized:
            data = self.data[start:stop]
        else:
            data = tree.map_structure(lambda a: a[start:stop].copy(), self.data)
            if as_list:
                data = unbatch(data)
        if deep and isinstance(data, list):
            data = copy.deepcopy(data)
        lookback = min(max(lookback, 0), stop - start)
        return InfiniteLookbackBuffer(data, lookback=lookback, space=self.space)

    def _positions(
        self, indices: Indices, neg_as_lookback: bool, allow_outside: bool, total: int
    ) -> Tuple[Union[range, List[int]], bool]:
        """Maps `indices` to raw positions; returns (positions, is_single_item)."""
        lookback = self.lookback

        def to_pos(i: int) -> int:
            return lookback + i if (i >= 0 or neg_as_lookback) else total + i

        if indices is None:
            return range(lookback, total), False
        if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
            pos = to_pos(int(indices))
            if not allow_outside and not 0 <= pos < total:
                raise self._index_error(indices, total)
            return [pos], True
        if isinstance(indices, slice):
            step = 1 if indices.step is None else indices.step
            if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step == 0:
                raise ValueError(
                    f"Slices must have a non-zero int step. Received: indices={indices}. "
                    "Use a step of None, >= 1 or <= -1."
                )
            if step < 0:
                start = total - 1 if indices.start is None else to_pos(int(indices.start))
                stop = lookback - 1 if indices.stop is None else to_pos(int(indices.stop))
                if allow_outside:
                    return range(start, stop, step), False
                return [p for p in range(start, stop, step) if 0 <= p < total], False
            start = lookback if indices.start is None else to_pos(int(indices.start))
            stop = total if indices.stop is None else to_pos(int(indices.stop))
            if allow_outside:
                if stop < start and indices.step is None:
                    # As RLlib: a reversed range with `fill` gives `start - stop` items.
                    return range(stop, start), False
                return range(start, stop, step), False
            if step == 1:
                return range(max(start, 0), max(min(stop, total), 0)), False
            return [p for p in range(start, stop, step) if 0 <= p < total], False
        if isinstance(indices, (list, tuple, np.ndarray)):
            positions = []
            for i in indices:
                if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                    raise TypeError(
                        f"Index lists must hold ints. Received: indices={indices!r}. "
                        "Pass a list of ints."
                    )
                pos = to_pos(int(i))
                if not allow_outside and not 0 <= pos < total:
                    raise self._index_error(i, total)
                positions.append(pos)
            return positions, False
        raise TypeError(
            f"`indices` must be None, an int, a list of ints or a slice. Received: "
            f"indices={indices!r} (type {type(indices).__name__})."
        )

    def _index_error(self, index: int, total: int) -> IndexError:
        return IndexError(
            f"Index out of range. Received: index={index} for a buffer holding "
            f"{total - self.lookback} in-episode items and {self.lookback} lookback "
            f"items. Expected an index in [{-total}, {total - self.lookback}) (or "
            f"[{-self.lookback}, 0) with neg_index_as_lookback=True). Pass `fill=...` "
            "to get a fill value for positions outside the data."
        )

    @staticmethod
    def _check_set_size(size: int, expected: int, at_indices: Indices) -> None:
        if size != expected:
            raise IndexError(
                f"`new_data` must have as many items as `at_indices` selects. Received: "
                f"{size} items for at_indices={at_indices!r}, which selects {expected} "
                "existing positions. Pass matching sizes."
            )

    def _assign_numpy(self, index: Any, new_data: Any) -> None:
        """Writes `new_data` into the numpy leaves at `index`; checks everything first."""
        if not same_structure(self.data, new_data):
            raise ValueError(
                f"`new_data` must have the structure of the stored items. Received: "
                f"new_data={new_data!r}. Expected the structure of "
                f"{tree.map_structure(lambda a: a.shape[1:], self.data)} (leaf shapes)."
            )
        leaves = tree.flatten(self.data)
        values = [np.asarray(v) for v in tree.flatten(new_data)]
        for leaf, value in zip(leaves, values):
            if not _casts_without_loss(value, leaf.dtype):
                raise TypeError(
                    f"`new_data` would lose information when written into the stored "
                    f"data. Received: dtype {value.dtype} for stored dtype {leaf.dtype}. "
                    f"Pass data of dtype {leaf.dtype} (or cast it explicitly)."
                )
        for leaf, value in zip(leaves, values):
            leaf[index] = value

    def _fill_item(self, fill: Any, one_hot_discrete: bool) -> Any:
        """One item with every slot set to `fill` (shape from space, else from data)."""
        if self.space is not None:
            return fill_value_for_space(self.space, fill, one_hot_discrete=one_hot_discrete)
        if not self.finalized and self.data:
            example = self.data[-1]
            if isinstance(example, np.ndarray):
                return np.full(example.shape, fill, example.dtype)
            if isinstance(example, np.generic):
                return example.dtype.type(fill)
        return fill

    def _get_from_list(self, positions, single, total, fill, one_hot_discrete) -> Any:
        data = self.data
        if single:
            p = positions[0]
            if 0 <= p < total:
                return one_hot(data[p], self.space) if one_hot_discrete else data[p]
            return self._fill_item(fill, one_hot_discrete)
        if isinstance(positions, range) and positions.step == 1 and (
            fill is None or (positions.start >= 0 and positions.stop <= total)
        ):
            items = data[positions.start : positions.stop]
            if one_hot_discrete:
                items = [one_hot(x, self.space) for x in items]
        else:
            fill_item = self._fill_item(fill, one_hot_discrete) if fill is not None else None
            encode = (lambda x: one_hot(x, self.space)) if one_hot_discrete else (lambda x: x)
            items = [encode(data[p]) if 0 <= p < total else fill_item for p in positions]
        return items

    def _get_from_numpy(self, positions, single, total, fill, one_hot_discrete) -> Any:
        pos = np.asarray(positions, dtype=np.int64)
        valid = (pos >= 0) & (pos < total)
        all_valid = bool(valid.all())
        if not all_valid and total == 0:
            item = self._fill_item(fill, one_hot_discrete)
            if single:
                return item
            return tree.map_structure(
                lambda x: np.repeat(np.asarray(x)[np.newaxis], len(pos), axis=0), item
            )
        if all_valid and isinstance(positions, range) and positions.step == 1:
            out = tree.map_structure(lambda a: a[positions.start : positions.stop], self.data)
        else:
            idx = pos if all_valid else np.clip(pos, 0, total - 1)
            out = tree.map_structure(lambda a: a[idx], self.data)
        if one_hot_discrete:
            out = one_hot(out, self.space)
        if not all_valid:
            invalid = ~valid

            def fill_rows(leaf):
                leaf[invalid] = fill
                return leaf

            out = tree.map_structure(fill_rows, out)
        if single:
            return tree.map_structure(lambda a: a[0], out)
        return out


def _casts_without_loss(value: np.ndarray, dtype: np.dtype) -> bool:
    """Whether writing `value` into an array of `dtype` keeps every value.

    Same-kind casts always pass; like RLlib (numpy assignment), numbers of another kind
    are cast too when the values survive the cast (7353.0 into an int array), but a
    cast that would change a value (0.5 into an int array) is refused.
    """
    if np.can_cast(value.dtype, dtype, casting="same_kind"):
        return True
    if value.dtype.kind not in "biuf" or np.dtype(dtype).kind not in "biuf":
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        cast = value.astype(dtype)
        return bool(np.array_equal(cast.astype(value.dtype), value))
