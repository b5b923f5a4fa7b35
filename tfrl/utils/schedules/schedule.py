"""The schedule base class: a value as a function of the global timestep."""

from typing import Any, Optional


class Schedule:
    """A value as a function of the timestep `t` (learning rates, coefficients).

    `schedule.value(t)` (or `schedule(t)`) returns a Python float; policies copy it into
    a `tf.Variable` in `on_global_var_update`, so compiled functions never retrace. `t`
    may be a Python number, a numpy scalar or an eager scalar tensor.

    Args:
        framework: Accepted for RLlib compatibility; ignored.
    """

    def __init__(self, framework: Optional[str] = None):
        self.framework = framework

    def value(self, t: Any) -> float:
        """The value at timestep `t`."""
        raise NotImplementedError

    def __call__(self, t: Any) -> float:
        return self.value(t)


def timestep(t: Any) -> float:
    """`t` (a number, numpy scalar or eager scalar tensor) as a float."""
    try:
        return float(t)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"A schedule needs a scalar timestep (int, numpy or eager tensor scalar). "
            f"Received: t={t!r} of type {type(t).__name__}."
        ) from err
