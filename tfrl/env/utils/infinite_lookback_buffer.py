"""RLlib's path `ray.rllib.env.utils.infinite_lookback_buffer`: re-exports `tfrl.data`'s.

`InfiniteLookbackBuffer` lives in the data layer (`tfrl.data.infinite_lookback_buffer`).
"""

from tfrl.data.infinite_lookback_buffer import Indices, InfiniteLookbackBuffer  # noqa: F401

__all__ = ["Indices", "InfiniteLookbackBuffer"]
