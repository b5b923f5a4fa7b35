"""An exponential decay: `initial_p * decay_rate ** (t / schedule_timesteps)`."""

from typing import Any, Optional

from tfrl.utils.schedules.schedule import Schedule, timestep


class ExponentialSchedule(Schedule):
    """`initial_p * decay_rate ** (t / schedule_timesteps)`: the value is multiplied by
    `decay_rate` every `schedule_timesteps` (it keeps decaying after that, as RLlib's).

    Args:
        schedule_timesteps: Timesteps over which the value falls by `decay_rate` (> 0).
        framework: Accepted for RLlib compatibility; ignored.
        initial_p: Value at t = 0.
        decay_rate: Factor per `schedule_timesteps` (> 0).
    """

    def __init__(self, schedule_timesteps: int, framework: Optional[str] = None,
                 initial_p: float = 1.0, decay_rate: float = 0.1):
        super().__init__(framework)
        if schedule_timesteps <= 0 or decay_rate <= 0:
            raise ValueError(
                "ExponentialSchedule needs schedule_timesteps > 0 and decay_rate > 0; received "
                f"schedule_timesteps={schedule_timesteps!r}, decay_rate={decay_rate!r}."
            )
        self.schedule_timesteps = schedule_timesteps
        self.initial_p = float(initial_p)
        self.decay_rate = float(decay_rate)

    def value(self, t: Any) -> float:
        return self.initial_p * self.decay_rate ** (timestep(t) / self.schedule_timesteps)
