"""Helpers for gymnasium spaces and the (possibly nested) numpy data they describe."""

from tfrl.utils.spaces.space_utils import (
    batch,
    clip_action,
    convert_element_to_space_type,
    fill_value_for_space,
    get_base_struct_from_space,
    get_dummy_batch_for_space,
    one_hot,
    same_structure,
    structs_equal,
    to_numpy_batch,
    unbatch,
    unsquash_action,
)

__all__ = [
    "batch",
    "clip_action",
    "convert_element_to_space_type",
    "fill_value_for_space",
    "get_base_struct_from_space",
    "get_dummy_batch_for_space",
    "one_hot",
    "same_structure",
    "structs_equal",
    "to_numpy_batch",
    "unbatch",
    "unsquash_action",
]
