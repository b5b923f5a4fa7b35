"""Error classes of RLlib's `ray.rllib.utils.error`.

`EnvError` is raised when an env cannot be created from its description (e.g. an env
string that is neither registered, a gymnasium id nor an importable class path). It is
a `ValueError`, so code that catches ValueError for a bad config keeps working.
"""


class EnvError(ValueError):
    """An env could not be created from the given description (RLlib's `EnvError`)."""

