"""A polynomial decay from `initial_p` to `final_p`."""

from typing import Any, Optional

from tfrl.utils.schedules.schedule import Schedule, timestep


class PolynomialSchedule(Schedule):
    """`final_p + (initial_p - final_p) * (1 - t / schedule_timesteps) ** power`, then
    `final_p` once `t >= schedule_timesteps`.

    Args:
        schedule_timesteps: Timesteps over which the value moves (> 0).
        final_p: Value at and after `schedule_timesteps`.
        framework: Accepted for RLlib compatibility; ignored.
        initial_p: Value at t = 0.
        power: Polynomial power (1.0: linear).
    """

    def __init__(self, schedule_timesteps: int, final_p: float, framework: Optional[str] = None,
                 initial_p: float = 1.0, power: float = 2.0):
        super().__init__(framework)
        if schedule_timesteps <= 0:
            raise ValueError(
                f"{type(self).__name__} needs schedule_timesteps > 0; received "
                f"{schedule_timesteps!r}."
            )
        self.schedule_timesteps = schedule_timesteps
        self.final_p = float(final_p)
        self.initial_p = float(initial_p)
        self.power = float(power)

    def value(self, t: Any) -> float:
        t = min(max(timestep(t), 0.0), float(self.schedule_timesteps))
        frac = (1.0 - t / self.schedule_timesteps) ** self.power
        return self.final_p + (self.initial_p - self.final_p) * frac
