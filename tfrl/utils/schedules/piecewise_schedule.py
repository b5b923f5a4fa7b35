"""A piecewise interpolation between `(timestep, value)` endpoints."""

from typing import Any, Callable, Optional, Sequence, Tuple

from tfrl.utils.schedules.schedule import Schedule, timestep


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
        super().__init__(framework)
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

    def value(self, t: Any) -> float:
        t = timestep(t)
        for (l_t, l_v), (r_t, r_v) in zip(self.endpoints[:-1], self.endpoints[1:]):
            if l_t <= t < r_t:
                return self.interpolation(l_v, r_v, float(t - l_t) / float(r_t - l_t))
        if len(self.endpoints) == 1 and t == self.endpoints[0][0]:
            return self.endpoints[0][1]
        if self.outside_value is None:
            raise ValueError(
                f"PiecewiseSchedule: timestep {t:g} is outside the endpoints "
                f"{self.endpoints} and no outside_value was given."
            )
        return self.outside_value
