"""ViewRequirement: which data a model needs, from which column, at which shift."""

from typing import List, Optional, Union

import gymnasium as gym


class ViewRequirement:
    """Describes one input column of a model's input dict.

    Args:
        data_col: The column to take the data from; None means the view column's own
            name (e.g. view "prev_actions" with `data_col="actions"`, `shift=-1`).
        space: The gymnasium space of one item of the data.
        shift: A single int (relative timestep), a list of ints, or a range string
            such as "-3:0" (inclusive on both ends) for frame stacking.
        index: An absolute timestep index instead of a relative shift.
        batch_repeat_value: Keep only every n-th row when building training batches
            (e.g. state-ins once per sequence).
        used_for_compute_actions: Whether action computation needs this column.
        used_for_training: Whether the loss needs this column.
    """

    def __init__(
        self,
        data_col: Optional[str] = None,
        space: Optional[gym.Space] = None,
        shift: Union[int, str, List[int]] = 0,
        index: Optional[int] = None,
        batch_repeat_value: int = 1,
        used_for_compute_actions: bool = True,
        used_for_training: bool = True,
    ):
        self.data_col = data_col
        self.space = space
        self.index = index
        self.batch_repeat_value = batch_repeat_value
        self.used_for_compute_actions = used_for_compute_actions
        self.used_for_training = used_for_training
        self.shift = shift
        self.shift_arr = None
        self.shift_from = None
        self.shift_to = None
        if isinstance(shift, str):
            parts = shift.split(":")
            if len(parts) != 2:
                raise ValueError(
                    f"ViewRequirement shift strings look like '-3:0'; received "
                    f"shift={shift!r}."
                )
            self.shift_from, self.shift_to = int(parts[0]), int(parts[1])
            self.shift_arr = list(range(self.shift_from, self.shift_to + 1))
        elif isinstance(shift, (list, tuple)):
            self.shift_arr = [int(s) for s in shift]
            if self.shift_arr:
                self.shift_from, self.shift_to = self.shift_arr[0], self.shift_arr[-1]
        elif isinstance(shift, int):
            self.shift_arr = [shift]
        else:
            raise TypeError(
                "ViewRequirement shift must be an int, a list of ints or a range "
                f"string like '-3:0'; received {type(shift).__name__}: {shift!r}."
            )

    def __repr__(self) -> str:
        return (
            f"ViewRequirement(data_col={self.data_col!r}, shift={self.shift!r}, "
            f"used_for_compute_actions={self.used_for_compute_actions}, "
            f"used_for_training={self.used_for_training})"
        )
