"""RLlib's NoFilter test, ported to tfrl.

Ports `rllib/utils/tests/test_filter.py` of ray-project/ray at commit
1942ea92bdd5f0832530241968c5ae1b7cf74192: `test_failed_array_conversion_error_message`.
"""

import pytest

from tfrl.utils.filter import NoFilter

RLLIB_PATH = "rllib/utils/tests/test_filter.py"
RLLIB_COMMIT = "1942ea92bdd5f0832530241968c5ae1b7cf74192"


class _BadArray:
    def __array__(self, dtype=None, copy=None):
        raise TypeError("cannot convert")


def test_failed_array_conversion_error_message():
    value = _BadArray()
    with pytest.raises(ValueError, match="Failed to convert to array:"):
        NoFilter()(value)
