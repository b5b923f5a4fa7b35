"""A schedule that always returns the same value."""

from typing import Any, Optional

from tfrl.utils.schedules.schedule import Schedule


class ConstantSchedule(Schedule):
    """Always `value`.

    Args:
        value: The constant.
        framework: Accepted for RLlib compatibility; ignored.
    """

    def __init__(self, value: float, framework: Optional[str] = None):
        super().__init__(framework)
        self._v = float(value)

    def value(self, t: Any) -> float:
        return self._v
