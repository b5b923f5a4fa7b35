"""Helpers for gymnasium spaces and the (possibly nested) numpy data they describe."""

from tfrl.utils.spaces.space_utils import (
    batch,
    fill_value_for_space,
    one_hot,
    same_structure,
    structs_equal,
    to_numpy_batch,
    unbatch,
)

__all__ = [
    "batch",
    "fill_value_for_space",
    "one_hot",
    "same_structure",
    "structs_equal",
    "to_numpy_batch",
    "unbatch",
]
