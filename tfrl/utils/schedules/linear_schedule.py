"""A linear interpolation from `initial_p` to `final_p`."""

from typing import Optional

from tfrl.utils.schedules.polynomial_schedule import PolynomialSchedule


class LinearSchedule(PolynomialSchedule):
    """Linear interpolation from `initial_p` (t = 0) to `final_p` (t = schedule_timesteps).

    Args:
        schedule_timesteps: Timesteps over which the value moves (> 0).
        final_p: Value at and after `schedule_timesteps`.
        framework: Accepted for RLlib compatibility; ignored.
        initial_p: Value at t = 0.
    """

    def __init__(self, schedule_timesteps: int, final_p: float, framework: Optional[str] = None,
                 initial_p: float = 1.0):
        super().__init__(schedule_timesteps, final_p, framework, initial_p=initial_p, power=1.0)
