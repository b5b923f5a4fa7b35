"""Stand-ins for the helpers RLlib's own unit tests import, so that the ported tests in this
folder keep their assertions as RLlib wrote them.

Each test file here names the RLlib file it ports (path and commit) and the RLlib test
functions it covers; the tests are rewritten for tfrl (imports renamed, Ray start-up,
torch/JAX and TF1-graph parts dropped), with RLlib's inputs and expected values. A shim
reproduces what an RLlib helper does; it never loosens a comparison.

`check` compares as `ray.rllib.utils.test_utils.check` does: nested dicts (same keys),
lists and tuples (same length), booleans by truth, None/str/int exactly, everything else
numerically to `decimals` places, or with `atol`/`rtol` when either is given; `false=True`
asserts that the two differ instead.
"""

from typing import Any, Optional

import numpy as np


def _to_numpy(value: Any) -> Any:
    """Tensors and variables (eager) become numpy arrays; anything else is unchanged."""
    if hasattr(value, "numpy") and callable(value.numpy) and not isinstance(value, np.ndarray):
        return value.numpy()
    return value


def _expect(equal: bool, false: bool, x: Any, y: Any, error: Optional[AssertionError]) -> None:
    if false and equal:
        raise AssertionError(f"ERROR: x ({x}) is the same as y ({y})!")
    if not false and not equal:
        raise error if error is not None else AssertionError(f"ERROR: x ({x}) is not y ({y})!")


def check(x: Any, y: Any, decimals: int = 5, atol: Optional[float] = None,
          rtol: Optional[float] = None, false: bool = False) -> None:
    """Asserts that `x` equals the expected `y` (or differs from it, with `false=True`)."""
    kwargs = dict(decimals=decimals, atol=atol, rtol=rtol, false=false)
    if isinstance(x, dict):
        if not isinstance(y, dict):
            raise AssertionError(f"ERROR: x is a dict, y is a {type(y).__name__}: {y}")
        missing = [key for key in x if key not in y]
        if missing:
            raise AssertionError(f"ERROR: y lacks x's keys {missing}! y={y}")
        extra = [key for key in y if key not in x]
        if extra:
            raise AssertionError(f"ERROR: y has keys {extra} that x lacks! y={y}")
        for key, value in x.items():
            check(value, y[key], **kwargs)
        return
    if isinstance(x, (tuple, list)):
        if not isinstance(y, (tuple, list)):
            raise AssertionError(f"ERROR: x is a sequence, y is a {type(y).__name__}: {y}")
        if len(x) != len(y):
            raise AssertionError(f"ERROR: lengths differ ({len(x)} vs {len(y)})")
        for value, expected in zip(x, y):
            check(value, expected, **kwargs)
        return
    if isinstance(x, (np.bool_, bool)):
        _expect(bool(x) is bool(y), false, x, y, None)
        return
    if x is None or y is None or isinstance(x, (str, int)):
        _expect(x == y, false, x, y, None)
        return
    x, y = _to_numpy(x), _to_numpy(y)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and (dtype == object or dtype.kind in "US"):
        try:
            np.testing.assert_array_equal(x, y)
        except AssertionError as error:
            _expect(False, false, x, y, error)
        else:
            _expect(True, false, x, y, None)
        return
    try:
        if atol is None and rtol is None:
            np.testing.assert_almost_equal(x, y, decimal=decimals)
        else:
            np.testing.assert_allclose(x, y, atol=0 if atol is None else atol,
                                       rtol=1e-7 if rtol is None else rtol)
    except AssertionError as error:
        _expect(False, false, x, y, error)
    else:
        _expect(True, false, x, y, None)
