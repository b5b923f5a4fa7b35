"""tfrl's Ray backend: components that run as Ray actors (`pip install 'tfrl[ray]'`).

Importing this package imports Ray; nothing in `import tfrl` does. Conventions every
tfrl component that uses Ray follows:

- Call `init_ray()` before creating actors. A Ray runtime that is already initialized
  (the user's own `ray.init(...)`, possibly connected to a cluster) is used as is;
  otherwise a local one is started without the dashboard.
- Actors that mostly wait (sub-environments) ask for `num_cpus=0`, so they never block
  the scheduling of actors that need whole CPUs (rollout workers, learners).
- Every blocking `ray.get`/`ray.wait` has a timeout, and actors are ended with
  `ray.kill` in `stop()`; tests call `ray.shutdown()` in their teardown.
"""

from typing import Any

try:
    import ray
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "tfrl's Ray backend needs Ray, which is not installed. Install it with "
        "pip install 'tfrl[ray]' (or use the default process backend)."
    ) from e


def init_ray(**ray_init_kwargs: Any) -> bool:
    """Starts a local Ray runtime unless one is already initialized.

    Args:
        **ray_init_kwargs: Passed to `ray.init` (`include_dashboard` defaults to False).

    Returns:
        True if this call started Ray, False if it was already running.
    """
    if ray.is_initialized():
        return False
    ray_init_kwargs.setdefault("include_dashboard", False)
    ray.init(**ray_init_kwargs)
    return True


__all__ = ["init_ray"]
