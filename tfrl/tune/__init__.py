"""tfrl on Ray Tune: RLlib's `ray.tune` names for tfrl's algorithms.

`import tfrl.tune` registers every tfrl algorithm with Tune's registry when Ray Tune is
installed (`pip install 'tfrl[tune]'`), so `ray.tune.Tuner("PPO", param_space=...)` runs
tfrl's PPO; `tfrl.tune.Tuner` and `tfrl.tune.run` are Tune's own with algorithm names in
any case. `tfrl.tune.registry.register_env` is RLlib's `ray.tune.registry.register_env`.
Without Ray only the registry names are here.
"""

from tfrl.tune.registry import register_env, register_input

try:
    import ray.tune  # noqa: F401  (optional: the tune extra)
except ImportError:  # Ray is not installed: the registry names only
    HAVE_TUNE = False
else:
    HAVE_TUNE = True
    from tfrl.tune.trainable import (AlgorithmTrainable, Tuner, get_trainable,
                                     register_trainables, run)

    register_trainables()

__all__ = ["register_env", "register_input", "HAVE_TUNE", "AlgorithmTrainable", "Tuner",
           "get_trainable", "register_trainables", "run"]
