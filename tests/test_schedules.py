"""Schedules against hand-computed values."""

import pytest

from tfrl.utils.schedules import (ConstantSchedule, LinearSchedule, PiecewiseSchedule,
                                  PolynomialSchedule, make_schedule)


def test_constant():
    assert ConstantSchedule(0.3, framework="tf2").value(10**9) == 0.3


def test_linear_interpolates_then_holds():
    s = LinearSchedule(schedule_timesteps=100, final_p=0.1, initial_p=1.1)
    assert s.value(0) == pytest.approx(1.1)
    assert s.value(50) == pytest.approx(0.6)
    assert s(100) == pytest.approx(0.1)
    assert s.value(1000) == pytest.approx(0.1)


def test_polynomial_power_two():
    s = PolynomialSchedule(schedule_timesteps=10, final_p=0.0, initial_p=1.0, power=2.0)
    assert s.value(5) == pytest.approx(0.25)


def test_piecewise_linear_and_outside():
    s = PiecewiseSchedule([(0, 1.0), (10, 0.0), (20, 0.5)], outside_value=-1.0)
    assert [s.value(t) for t in (0, 5, 10, 15)] == pytest.approx([1.0, 0.5, 0.0, 0.25])
    assert s.value(25) == -1.0
    assert s.value(-1) == -1.0


def test_piecewise_without_outside_value_raises():
    with pytest.raises(ValueError, match="outside the endpoints"):
        PiecewiseSchedule([(0, 1.0), (10, 0.0)]).value(11)


def test_piecewise_rejects_unsorted_and_empty():
    with pytest.raises(ValueError, match="sorted by timestep"):
        PiecewiseSchedule([(10, 1.0), (0, 0.0)])
    with pytest.raises(ValueError, match="non-empty list"):
        PiecewiseSchedule([])


def test_linear_rejects_zero_timesteps():
    with pytest.raises(ValueError, match="schedule_timesteps > 0"):
        LinearSchedule(0, 0.0)


def test_make_schedule_rllib_convention():
    assert make_schedule(0.5, None).value(123) == 0.5
    s = make_schedule(0.5, [[0, 1e-3], [100, 0.0]])
    assert s.value(50) == pytest.approx(5e-4)
    assert s.value(10**6) == 0.0  # holds the last value
