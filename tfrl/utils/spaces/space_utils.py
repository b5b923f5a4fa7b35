"""Helpers for (possibly nested) data of gymnasium spaces, on numpy.

"Nested" data are dicts and tuples of leaves, as produced by `gymnasium.spaces.Dict`
and `gymnasium.spaces.Tuple`; dm-tree (`import tree`) walks them. A "batch" is a
struct of the same shape as one item whose leaves carry an extra leading axis.

Example:
    >>> import numpy as np
    >>> items = [{"a": 1, "b": np.array([1.0, 2.0])}, {"a": 2, "b": np.array([3.0, 4.0])}]
    >>> batched = batch(items)
    >>> batched["a"].tolist(), batched["b"].shape
    ([1, 2], (2, 2))
    >>> unbatch(batched)[1]["a"].item()
    2
"""

from typing import Any, List, Optional, Sequence

import gymnasium as gym
import numpy as np
import tree

# Spaces whose items are single numpy arrays (or scalars) of `space.dtype`.
_SIMPLE_SPACES = (
    gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary
)


def space_structure(space: gym.Space) -> Any:
    """The space as a nest (dicts and tuples) of its leaf spaces (RLlib's
    `get_base_struct_from_space`)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: space_structure(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(space_structure(s) for s in space.spaces)
    return space


def batch(
    list_of_structs: Sequence[Any], *, individual_items_already_have_batch_dim: bool = False
) -> Any:
    """Turns a list of same-structured items into one struct of batched numpy arrays.

    Args:
        list_of_structs: Items, each a leaf or a nested dict/tuple of leaves, all
            with the same structure.
        individual_items_already_have_batch_dim: If True, the leaves already have a
            leading batch axis and are concatenated along it instead of stacked.

    Returns:
        A struct shaped like `list_of_structs[0]`, each leaf a numpy array whose
        axis 0 has size `len(list_of_structs)` (or the sum of the items' batch sizes).

    Raises:
        ValueError: If the list is empty or the items differ in structure.
    """
    if len(list_of_structs) == 0:
        raise ValueError(
            "batch() needs at least one item to infer the structure from. "
            "Received: list_of_structs=[]. Pass a non-empty list, or use "
            "to_numpy_batch(items, space) to get an empty batch shaped by a space."
        )
    combine = np.concatenate if individual_items_already_have_batch_dim else np.stack
    first = list_of_structs[0]
    if not isinstance(first, (dict, tuple, list)):
        return combine(list_of_structs)
    for i, item in enumerate(list_of_structs):
        if not same_structure(first, item):
            raise ValueError(
                f"batch() needs items of identical structure, but item {i} differs "
                f"from item 0. Received: item_0={first!r}, item_{i}={item!r}. "
                "Make all items follow the same (space) structure."
            )
    flat = [tree.flatten(s) for s in list_of_structs]
    leaves = [combine(column) for column in zip(*flat)]
    return tree.unflatten_as(first, leaves)


def unbatch(batches_struct: Any) -> List[Any]:
    """Splits a struct of batched arrays into a list of per-row items.

    Args:
        batches_struct: A leaf or nested dict/tuple whose leaves share axis-0 size B.

    Returns:
        A list of B items, each shaped like `batches_struct` without the batch axis.

    Raises:
        ValueError: If a leaf has no batch axis or the leaves' batch sizes differ.
    """
    flat = tree.flatten(batches_struct)
    if not flat:
        return []
    if any(np.ndim(leaf) == 0 for leaf in flat):
        raise ValueError(
            "unbatch() needs leaves with a leading batch axis. Received: "
            f"batches_struct={batches_struct!r}, which has scalar leaves. Pass a struct "
            "of arrays (e.g. the output of batch())."
        )
    sizes = {len(leaf) for leaf in flat}
    if len(sizes) != 1:
        raise ValueError(
            "unbatch() needs leaves that all have the same batch (axis 0) size. "
            f"Received: batch sizes {sorted(sizes)}. Pass a struct whose leaves "
            "were batched together (e.g. by batch())."
        )
    if not isinstance(batches_struct, (dict, tuple, list)):
        return list(batches_struct)
    n = sizes.pop()
    return [tree.unflatten_as(batches_struct, [leaf[i] for leaf in flat]) for i in range(n)]


def to_numpy_batch(items: Sequence[Any], space: Optional[gym.Space] = None) -> Any:
    """Converts a list of items into a batch, fast for simple (non-nested) items.

    Simple items go through a single `np.asarray` call (cast to `space.dtype` for
    Box/Discrete/MultiDiscrete/MultiBinary spaces); dict/tuple items through `batch()`.

    Args:
        items: The items (possibly nested) to batch.
        space: Optional space of one item. Used for the dtype, and for the leaf
            shapes of an empty batch.

    Returns:
        A numpy array or a struct of numpy arrays with leading axis `len(items)`.
    """
    if len(items) == 0:
        if space is None:
            return np.zeros((0,), np.float32)
        return tree.map_structure(
            lambda x: np.asarray(x)[np.newaxis][:0], fill_value_for_space(space, 0)
        )
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)) or isinstance(
        items[0], (dict, tuple)
    ):
        return batch(items)
    dtype = space.dtype if isinstance(space, _SIMPLE_SPACES) else None
    return np.asarray(items, dtype=dtype)


def one_hot(data: Any, space: gym.Space) -> Any:
    """One-hot encodes the Discrete and MultiDiscrete leaves of `data`.

    Works on one item or on a batch (any number of leading axes). Discrete(n) leaves
    become float32 vectors of length n, MultiDiscrete(nvec) leaves the concatenation
    of one one-hot per component (length `sum(nvec)`); other leaves are returned
    unchanged. Dict and Tuple spaces are walked recursively.

    Args:
        data: An item (or batch of items) of `space`.
        space: The space `data` belongs to.

    Returns:
        `data` with its discrete leaves one-hot encoded.

    Raises:
        ValueError: If a discrete value lies outside its space.
    """
    if isinstance(space, gym.spaces.Dict):
        return {k: one_hot(data[k], s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(one_hot(d, s) for d, s in zip(data, space.spaces))
    if isinstance(space, gym.spaces.Discrete):
        return _one_hot_leaf(np.asarray(data) - int(space.start), int(space.n), space)
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = space.nvec.reshape(-1)
        start = np.asarray(space.start).reshape(-1)
        values = np.asarray(data)
        values = values.reshape(values.shape[: values.ndim - space.nvec.ndim] + (len(nvec),))
        parts = [
            _one_hot_leaf(values[..., j] - int(start[j]), int(n), space)
            for j, n in enumerate(nvec)
        ]
        return np.concatenate(parts, axis=-1)
    return data


def _one_hot_leaf(values: np.ndarray, n: int, space: gym.Space) -> np.ndarray:
    if values.size and (values.min() < 0 or values.max() >= n):
        raise ValueError(
            f"Cannot one-hot encode values outside the space. Received: values="
            f"{values.tolist()} (offset by the space's start) for space={space}. "
            f"Expected each value in [0, {n}). Check the data or the space."
        )
    return np.eye(n, dtype=np.float32)[values.astype(np.int64)]


def fill_value_for_space(space: gym.Space, fill: Any, *, one_hot_discrete: bool = False) -> Any:
    """Returns one item shaped like `space` with every leaf set to `fill`.

    Args:
        space: The space one item belongs to (Dict/Tuple are walked recursively).
        fill: The value for every slot of every leaf.
        one_hot_discrete: If True, Discrete/MultiDiscrete leaves take their one-hot
            shape (float32 vectors full of `fill`; `fill=0` gives "zero-hot").

    Returns:
        The filled item: numpy arrays (numpy scalars for shape-() leaves), dicts and
        tuples; `fill` itself for spaces without a fixed shape.
    """
    if isinstance(space, gym.spaces.Dict):
        return {
            k: fill_value_for_space(s, fill, one_hot_discrete=one_hot_discrete)
            for k, s in space.spaces.items()
        }
    if isinstance(space, gym.spaces.Tuple):
        return tuple(
            fill_value_for_space(s, fill, one_hot_discrete=one_hot_discrete)
            for s in space.spaces
        )
    if one_hot_discrete and isinstance(space, gym.spaces.Discrete):
        return np.full((int(space.n),), fill, np.float32)
    if one_hot_discrete and isinstance(space, gym.spaces.MultiDiscrete):
        return np.full((int(np.sum(space.nvec)),), fill, np.float32)
    if isinstance(space, _SIMPLE_SPACES):
        shape = () if isinstance(space, gym.spaces.Discrete) else space.shape
        if shape == ():
            return np.dtype(space.dtype).type(fill)
        return np.full(shape, fill, space.dtype)
    return fill


def structs_equal(a: Any, b: Any) -> bool:
    """Whether two (possibly nested) items have the same structure and equal leaves.

    Numpy leaves are compared with `np.array_equal`, all others with `==`.

    Args:
        a: First item.
        b: Second item.

    Returns:
        True if `a` and `b` are equal.
    """
    if not same_structure(a, b):
        return False
    for x, y in zip(tree.flatten(a), tree.flatten(b)):
        if isinstance(x, (np.ndarray, np.generic)) or isinstance(y, (np.ndarray, np.generic)):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
            continue
        result = x == y
        if not (result if isinstance(result, bool) else bool(np.all(result))):
            return False
    return True


def same_structure(a: Any, b: Any) -> bool:
    """Whether two items have the same nesting and dict keys (leaves not compared).

    Unlike `tree.assert_same_structure(..., check_types=False)` this compares dict
    keys; list vs tuple and dict vs OrderedDict count as the same structure.

    Args:
        a: First item.
        b: Second item.

    Returns:
        True if the structures match.
    """
    try:
        tree.assert_same_structure(a, b, check_types=True)
        return True
    except (ValueError, TypeError):
        pass
    try:
        paths_a = [p for p, _ in tree.flatten_with_path(a)]
        paths_b = [p for p, _ in tree.flatten_with_path(b)]
    except (ValueError, TypeError):
        return False
    return paths_a == paths_b


def get_base_struct_from_space(space: gym.Space) -> Any:
    """RLlib's name for `space_structure`: a Dict/Tuple space as a nest of its leaf spaces."""
    return space_structure(space)


def get_dummy_batch_for_space(
    space: Any,
    batch_size: int = 32,
    fill_value: Any = 0.0,
    time_size: Optional[int] = None,
    time_major: bool = False,
    one_hot_discrete: bool = False,
) -> Any:
    """Dummy data for `space`: a batch of `batch_size` items, all slots set to `fill_value`.

    Args:
        space: A gymnasium space, or a dict/tuple nest of spaces (walked recursively).
        batch_size: Rows B of the batch; 0 gives one item without a batch axis (only
            without `time_size`).
        fill_value: The value of every slot, or "random" for `space.sample()` values.
        time_size: If given, a time axis T of that size: shape [B, T, ...], or
            [T, B, ...] with `time_major=True`.
        time_major: See `time_size`.
        one_hot_discrete: Discrete and MultiDiscrete leaves take their one-hot float32
            shape (`fill_value=0.0` gives "zero-hot" vectors).

    Returns:
        Numpy arrays of each leaf space's dtype, nested like `space`.

    Raises:
        ValueError: If `time_size` is given with `batch_size` or `time_size` < 1.

    Example:
        >>> box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        >>> get_dummy_batch_for_space(box, batch_size=3, fill_value=1.0).shape
        (3, 2)
        >>> get_dummy_batch_for_space(gym.spaces.Discrete(4), batch_size=0, fill_value=2.0)
        array(2)
    """
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple, dict, tuple)):
        struct = space_structure(space) if isinstance(space, gym.Space) else space
        return tree.map_structure(
            lambda s: get_dummy_batch_for_space(
                s, batch_size=batch_size, fill_value=fill_value, time_size=time_size,
                time_major=time_major, one_hot_discrete=one_hot_discrete),
            struct)
    if one_hot_discrete and isinstance(space, gym.spaces.Discrete):
        space = gym.spaces.Box(0.0, 1.0, (int(space.n),), np.float32)
    elif one_hot_discrete and isinstance(space, gym.spaces.MultiDiscrete):
        space = gym.spaces.Box(0.0, 1.0, (int(np.sum(space.nvec)),), np.float32)
    if time_size is not None:
        if batch_size < 1 or time_size < 1:
            raise ValueError(
                "get_dummy_batch_for_space() with a time axis needs batch_size >= 1 and "
                f"time_size >= 1. Received: batch_size={batch_size}, time_size={time_size}.")
        lead = [time_size, batch_size] if time_major else [batch_size, time_size]
    else:
        lead = [batch_size] if batch_size > 0 else []
    if isinstance(fill_value, str) and fill_value == "random":
        count = int(np.prod(lead)) if lead else 1
        samples = np.array([space.sample() for _ in range(count)], dtype=space.dtype)
        return samples.reshape(lead + list(space.shape))
    return np.full(lead + list(space.shape), fill_value, dtype=space.dtype)


def convert_element_to_space_type(element: Any, sampled_element: Any) -> Any:
    """Casts the leaves of `element` to the types of a sample of the same space.

    Numpy leaves take the sample's dtype; a float that holds an integer becomes an int
    where the sample has an int (e.g. Discrete). Use it to make data that went through
    JSON or another framework pass `space.contains()` again.

    Args:
        element: The (nested) data to convert.
        sampled_element: A sample of the space (`space.sample()`), same nesting.

    Returns:
        The converted data, nested like `element`.

    Raises:
        ValueError: If a leaf of `element` is not a numpy array where the sample's is.
    """

    def convert(elem: Any, sample: Any) -> Any:
        if isinstance(sample, np.ndarray):
            if not isinstance(elem, np.ndarray):
                raise ValueError(
                    "convert_element_to_space_type(): a leaf of `element` must be a numpy "
                    f"array where the space's sample has one. Received: {elem!r} (type "
                    f"{type(elem).__name__}) for a sample of shape {sample.shape}.")
            if elem.dtype != sample.dtype:
                elem = elem.astype(sample.dtype)
        elif isinstance(sample, (int, np.integer)) and isinstance(elem, float) \
                and float(elem).is_integer():
            elem = int(elem)
        return elem

    return tree.map_structure(convert, element, sampled_element, check_types=False)


def unsquash_action(action: Any, action_space_struct: Any) -> Any:
    """Maps actions from a model's range to the bounds of their (bounded) Box spaces.

    Float Box leaves go from [-1, 1] to [low, high] (`low + (a + 1) * (high - low) / 2`,
    then clipped to the bounds); integer Box leaves are shifted by `low`. Other leaves
    and unbounded Boxes are returned unchanged.

    Args:
        action: A (nested) action.
        action_space_struct: The action space as a nest of leaf spaces
            (`get_base_struct_from_space(space)`), or a single space.

    Example:
        >>> box = gym.spaces.Box(3.0, 8.0, (2,), np.float32)
        >>> unsquash_action(0.5, box).tolist()
        [6.75, 6.75]
    """

    def unsquash(a: Any, s: Any) -> Any:
        if isinstance(s, gym.spaces.Box) and np.all(s.bounded_below) and \
                np.all(s.bounded_above):
            if np.issubdtype(s.dtype, np.floating):
                a = s.low + (np.asarray(a) + 1.0) * (s.high - s.low) / 2.0
                a = np.clip(a, s.low, s.high)
            elif np.issubdtype(s.dtype, np.integer):
                a = s.low + a
        return a

    return tree.map_structure(unsquash, action, action_space_struct)


def clip_action(action: Any, action_space_struct: Any) -> Any:
    """Clips the (nested) action's Box leaves into their spaces' bounds.

    Args:
        action: A (nested) action.
        action_space_struct: The action space as a nest of leaf spaces, or a space.

    Example:
        >>> clip_action(np.array([2.0, -3.0]), gym.spaces.Box(-1.0, 1.0, (2,))).tolist()
        [1.0, -1.0]
    """

    def clip(a: Any, s: Any) -> Any:
        if isinstance(s, gym.spaces.Box):
            a = np.clip(a, s.low, s.high)
        return a

    return tree.map_structure(clip, action, action_space_struct)
