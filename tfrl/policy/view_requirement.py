"""ViewRequirement: which data a model needs, from which column, at which shift."""

from typing import Any, Dict, List, Optional, Union

import gymnasium as gym

from tfrl.utils.serialization import gym_space_from_dict, gym_space_to_dict


class ViewRequirement:
    """Describes one input column of a model's input dict.

    Args:
        data_col: The column to take the data from; None means the view column's own
            name (e.g. view "prev_actions" with `data_col="actions"`, `shift=-1`).
        space: The gymnasium space of one item of the data; None gives RLlib's default,
            an unbounded scalar Box.
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
        self.space = space if space is not None else gym.spaces.Box(
            float("-inf"), float("inf"), shape=())
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

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-serializable dict of this requirement (`from_dict` rebuilds it)."""
        return {
            "data_col": self.data_col,
            "space": gym_space_to_dict(self.space),
            "shift": self.shift,
            "index": self.index,
            "batch_repeat_value": self.batch_repeat_value,
            "used_for_training": self.used_for_training,
            "used_for_compute_actions": self.used_for_compute_actions,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "ViewRequirement":
        """Rebuilds a ViewRequirement from `to_dict()` output (e.g. after JSON)."""
        d = dict(d)
        if d.get("space") is not None:
            d["space"] = gym_space_from_dict(d["space"])
        return cls(**d)
