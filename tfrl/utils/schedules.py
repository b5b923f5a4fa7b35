"""Schedules: a value as a function of the global timestep (learning rates, coefficients).

`schedule.value(t)` (or `schedule(t)`) returns a Python float; policies copy it into a
`tf.Variable` in `on_global_var_update`, so compiled functions never retrace.

Example:
    >>> PiecewiseSchedule([(0, 1e-3), (100, 0.0)], outside_value=0.0).value(25)
    0.00075
    >>> LinearSchedule(schedule_timesteps=10, final_p=0.0, initial_p=1.0).value(20)
    0.0
"""

from typing import Callable, Optional, Sequence, Tuple


class Schedule:
    """A value as a function of the timestep `t` (a Python int)."""

    def value(self, t: int) -> float:
        """The value at timestep `t`."""
        raise NotImplementedError

    def __call__(self, t: int) -> float:
        return self.value(t)


class ConstantSchedule(Schedule):
    """Always `value`.

    Args:
        value: The constant.
        framework: Accepted for RLlib compatibility; ignored.
    """

    def __init__(self, value: float, framework: Optional[str] = None):
        self._v = float(value)

    def value(self, t: int) -> float:
        return self._v


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
        if schedule_timesteps <= 0:
            raise ValueError(
                f"{type(self).__name__} needs schedule_timesteps > 0; received "
                f"{schedule_timesteps!r}."
            )
        self.schedule_timesteps = schedule_timesteps
        self.final_p = float(final_p)
        self.initial_p = float(initial_p)
        self.power = float(power)

    def value(self, t: int) -> float:
        t = min(max(float(t), 0.0), float(self.schedule_timesteps))
        frac = (1.0 - t / self.schedule_timesteps) ** self.power
        return self.final_p + (self.initial_p - self.final_p) * frac


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


def _linear_interpolation(left: float, right: float, alpha: float) -> float:
    return left + alpha * (right - left)


class PiecewiseSchedule(Schedule):
    """Interpolates between `(t, value)` endpoints (sorted by t).

    Args:
        endpoints: `[(t_0, v_0), (t_1, v_1), ...]` with increasing `t_i`.
        framework: Accepted for RLlib compatibility; ignored.
        interpolation: `f(left, right, alpha) -> value` for `alpha` in [0, 1];
            default linear.
        outside_value: The value before `t_0` or after the last endpoint; None: raise
            a ValueError for such t.
    """

    def __init__(self, endpoints: Sequence[Tuple[int, float]], framework: Optional[str] = None,
                 interpolation: Callable[[float, float, float], float] = _linear_interpolation,
                 outside_value: Optional[float] = None):
        points = [tuple(p) for p in endpoints]
        if not points or any(len(p) != 2 for p in points):
            raise ValueError(
                "PiecewiseSchedule needs a non-empty list of (timestep, value) pairs; received "
                f"{endpoints!r}."
            )
        ts = [p[0] for p in points]
        if ts != sorted(ts):
            raise ValueError(
                f"PiecewiseSchedule endpoints must be sorted by timestep; received timesteps {ts}."
            )
        self.endpoints = [(int(t), float(v)) for t, v in points]
        self.interpolation = interpolation
        self.outside_value = None if outside_value is None else float(outside_value)

    def value(self, t: int) -> float:
        for (l_t, l_v), (r_t, r_v) in zip(self.endpoints[:-1], self.endpoints[1:]):
            if l_t <= t < r_t:
                return self.interpolation(l_v, r_v, float(t - l_t) / float(r_t - l_t))
        if len(self.endpoints) == 1 and t == self.endpoints[0][0]:
            return self.endpoints[0][1]
        if self.outside_value is None:
            raise ValueError(
                f"PiecewiseSchedule: timestep {t} is outside the endpoints "
                f"{self.endpoints} and no outside_value was given."
            )
        return self.outside_value


def make_schedule(base_value: float, schedule: Optional[Sequence[Tuple[int, float]]]) -> Schedule:
    """RLlib's `lr_schedule`/`entropy_coeff_schedule` convention: a constant `base_value`
    without a schedule; else a piecewise schedule holding its last value afterwards."""
    if not schedule:
        return ConstantSchedule(base_value)
    return PiecewiseSchedule(schedule, outside_value=list(schedule)[-1][-1])
