"""RLlib's schedule tests, ported to tfrl.

Ports `rllib/utils/schedules/tests/test_schedules.py` of ray-project/ray at commit
001dbf672437f55de2c1cfd77dfe80cd6a435997: `test_constant_schedule`,
`test_linear_schedule`, `test_polynomial_schedule`, `test_exponential_schedule`,
`test_piecewise_schedule`. RLlib's framework loop runs over ["tf2", "tf", "tfe", "torch",
None]; here over "tf2" and None (torch dropped; "tf" and "tfe" are TF1 graph/eager modes,
whose extra assertion is that a TF1 graph run returns a tf.Tensor), with Python ints and
int32 tensors as timesteps. `from_config` is `tfrl.utils.from_config.from_config`.
"""

import tensorflow as tf
from compat_helpers import check

from tfrl.utils.from_config import from_config
from tfrl.utils.schedules import (
    ConstantSchedule,
    ExponentialSchedule,
    LinearSchedule,
    PiecewiseSchedule,
)

RLLIB_PATH = "rllib/utils/schedules/tests/test_schedules.py"
RLLIB_COMMIT = "001dbf672437f55de2c1cfd77dfe80cd6a435997"

FRAMEWORKS = ["tf2", None]


def _get_framework_tensors(ts, fw):
    if fw is not None and "tf" in fw:
        ts = [tf.constant(t, dtype=tf.int32) for t in ts]
    return ts


def test_constant_schedule():
    value = 2.3
    ts = [100, 0, 10, 2, 3, 4, 99, 56, 10000, 23, 234, 56]
    config = {"value": value}
    for fw in FRAMEWORKS:
        constant = from_config(ConstantSchedule, config, framework=fw)
        for t in ts:
            out = constant(t)
            check(out, value)
        for t in _get_framework_tensors(ts, fw):
            out = constant(t)
            check(out, value, decimals=4)


def test_linear_schedule():
    ts = [0, 50, 10, 100, 90, 2, 1, 99, 23, 1000]
    expected = [2.1 - (min(t, 100) / 100) * (2.1 - 0.6) for t in ts]
    config = {"schedule_timesteps": 100, "initial_p": 2.1, "final_p": 0.6}
    for fw in FRAMEWORKS:
        linear = from_config(LinearSchedule, config, framework=fw)
        for t, e in zip(ts, expected):
            out = linear(t)
            check(out, e, decimals=4)
        for t, e in zip(_get_framework_tensors(ts, fw), expected):
            out = linear(t)
            check(out, e, decimals=4)


def test_polynomial_schedule():
    ts = [0, 5, 10, 100, 90, 2, 1, 99, 23, 1000]
    expected = [0.5 + (2.0 - 0.5) * (1.0 - min(t, 100) / 100) ** 2 for t in ts]
    config = dict(
        type="tfrl.utils.schedules.polynomial_schedule.PolynomialSchedule",
        schedule_timesteps=100, initial_p=2.0, final_p=0.5, power=2.0)
    for fw in FRAMEWORKS:
        polynomial = from_config(config, framework=fw)
        for t, e in zip(ts, expected):
            out = polynomial(t)
            check(out, e, decimals=4)
        for t, e in zip(_get_framework_tensors(ts, fw), expected):
            out = polynomial(t)
            check(out, e, decimals=4)


def test_exponential_schedule():
    decay_rate = 0.2
    ts = [0, 5, 10, 100, 90, 2, 1, 99, 23]
    expected = [2.0 * decay_rate ** (t / 100) for t in ts]
    config = dict(initial_p=2.0, decay_rate=decay_rate, schedule_timesteps=100)
    for fw in FRAMEWORKS:
        exponential = from_config(ExponentialSchedule, config, framework=fw)
        for t, e in zip(ts, expected):
            out = exponential(t)
            check(out, e, decimals=4)
        for t, e in zip(_get_framework_tensors(ts, fw), expected):
            out = exponential(t)
            check(out, e, decimals=4)


def test_piecewise_schedule():
    ts = [0, 5, 10, 100, 90, 2, 1, 99, 27]
    expected = [50.0, 60.0, 70.0, 14.5, 14.5, 54.0, 52.0, 14.5, 140.0]
    config = dict(endpoints=[(0, 50.0), (25, 100.0), (30, 200.0)], outside_value=14.5)
    for fw in FRAMEWORKS:
        piecewise = from_config(PiecewiseSchedule, config, framework=fw)
        for t, e in zip(ts, expected):
            out = piecewise(t)
            check(out, e, decimals=4)
        for t, e in zip(_get_framework_tensors(ts, fw), expected):
            out = piecewise(t)
            check(out, e, decimals=4)
