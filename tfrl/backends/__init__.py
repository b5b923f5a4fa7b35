"""Optional execution backends for tfrl.

Each subpackage wraps one optional library and imports it when it is imported itself;
`import tfrl` imports no backend. `tfrl.backends.ray` runs sub-environments and rollout
workers as Ray actors; install it with `pip install 'tfrl[ray]'`.

The layers below (env's `RemoteVectorEnv`, evaluation's `WorkerSet`) do not import
this package: importing it (which `import tfrl` does) registers a loader for each
backend in `tfrl.utils.backend_registry`, and they load the backend from there by name.
"""

from typing import Any

from tfrl.utils.backend_registry import REMOTE_ENV_POOL, REMOTE_WORKER, register_backend


def _load_ray_env_pool() -> Any:
    # Deferred: Ray is an optional, heavy dependency, imported only when used.
    from tfrl.backends.ray.remote_env import RayEnvPool

    return RayEnvPool


def _load_ray_worker_handle() -> Any:
    # Deferred: Ray is an optional, heavy dependency, imported only when used.
    from tfrl.backends.ray.worker import RayWorkerHandle

    return RayWorkerHandle


register_backend(REMOTE_ENV_POOL, "ray", _load_ray_env_pool)
register_backend(REMOTE_WORKER, "ray", _load_ray_worker_handle)
