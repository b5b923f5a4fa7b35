"""Schedules: a value as a function of the global timestep (learning rates, coefficients).

One module per schedule, at RLlib's paths (`tfrl.utils.schedules.polynomial_schedule.
PolynomialSchedule`); every class is also importable from this package.

Example:
    >>> PiecewiseSchedule([(0, 1e-3), (100, 0.0)], outside_value=0.0).value(25)
    0.00075
    >>> LinearSchedule(schedule_timesteps=10, final_p=0.0, initial_p=1.0).value(20)
    0.0
    >>> round(ExponentialSchedule(100, initial_p=2.0, decay_rate=0.5).value(200), 6)
    0.5
"""

from typing import Optional, Sequence, Tuple

from tfrl.utils.schedules.constant_schedule import ConstantSchedule
from tfrl.utils.schedules.exponential_schedule import ExponentialSchedule
from tfrl.utils.schedules.linear_schedule import LinearSchedule
from tfrl.utils.schedules.piecewise_schedule import PiecewiseSchedule
from tfrl.utils.schedules.polynomial_schedule import PolynomialSchedule
from tfrl.utils.schedules.schedule import Schedule

__all__ = ["Schedule", "ConstantSchedule", "LinearSchedule", "PolynomialSchedule",
           "PiecewiseSchedule", "ExponentialSchedule", "make_schedule"]


def make_schedule(base_value: float, schedule: Optional[Sequence[Tuple[int, float]]]) -> Schedule:
    """RLlib's `lr_schedule`/`entropy_coeff_schedule` convention: a constant `base_value`
    without a schedule; else a piecewise schedule holding its last value afterwards."""
    if not schedule:
        return ConstantSchedule(base_value)
    return PiecewiseSchedule(schedule, outside_value=list(schedule)[-1][-1])
