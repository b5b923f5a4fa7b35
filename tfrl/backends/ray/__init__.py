"""tfrl's Ray backend: components that run as Ray actors (`pip install 'tfrl[ray]'`).

Importing this package imports Ray; nothing in `import tfrl` does. Conventions every
tfrl component that uses Ray follows:

- Call `init_ray()` before creating actors. A Ray runtime that is already initialized
  (the user's own `ray.init(...)`, possibly connected to a cluster) is used as is;
  otherwise a local one is started without the dashboard.
- Actors that mostly wait (sub-environments) ask for `num_cpus=0`, so they never block
  the scheduling of actors that need whole CPUs (rollout workers, learners).
- Actors start as quiet, or as verbose, as the driver (TensorFlow's start-up notices,
  `tfrl.utils.quiet`): a Ray runtime tfrl starts gets the driver's setting in its job
  `runtime_env`; under a runtime the user started, each actor gets it in its own
  (`actor_runtime_env()`; Ray merges `env_vars` with the job's).
- Every blocking `ray.get`/`ray.wait` has a timeout, and actors are ended with
  `ray.kill` in `stop()`; tests call `ray.shutdown()` in their teardown.
"""

from typing import Any, Dict, Optional

try:
    import ray
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "tfrl's Ray backend needs Ray, which is not installed. Install it with "
        "pip install 'tfrl[ray]' (or use the default process backend)."
    ) from e

from tfrl.utils.quiet import worker_env_vars

_started: Dict[str, bool] = {"by_tfrl": False}


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
    env_vars = worker_env_vars()
    if env_vars:
        runtime_env = dict(ray_init_kwargs.get("runtime_env") or {})
        runtime_env["env_vars"] = {**env_vars, **(runtime_env.get("env_vars") or {})}
        ray_init_kwargs["runtime_env"] = runtime_env
    ray.init(**ray_init_kwargs)
    _started["by_tfrl"] = True
    return True


def actor_runtime_env() -> Optional[Dict[str, Any]]:
    """The `runtime_env` option for a tfrl actor: the driver's quiet/verbose setting
    (`worker_env_vars()`) when the user started Ray (a runtime tfrl started has it in its
    job runtime env already); None when there is nothing to add."""
    if _started["by_tfrl"] and ray.is_initialized():
        return None
    env_vars = worker_env_vars()
    return {"env_vars": env_vars} if env_vars else None


__all__ = ["actor_runtime_env", "init_ray"]
