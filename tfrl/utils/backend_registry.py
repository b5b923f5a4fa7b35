"""Optional execution backends, looked up by kind and name.

Lower layers run things remotely through a backend: `RemoteVectorEnv` (env) its
sub-environments, `WorkerSet` (evaluation) its rollout workers. The backends
themselves (`tfrl.backends.ray`) sit in a higher layer and import an optional library
(Ray), so the lower layers do not import them: `tfrl.backends` registers a loader per
backend here when `import tfrl` runs (without importing Ray), and the lower layer calls
the loader when it needs the backend.

Example:
    >>> register_backend("example_kind", "inline", lambda: dict)
    >>> load_backend("example_kind", "inline")(a=1)
    {'a': 1}
"""

from typing import Any, Callable, Dict, List, Tuple

# Kinds of backends.
REMOTE_ENV_POOL = "remote_env_pool"  # Loader returns a class like `RayEnvPool`.
REMOTE_WORKER = "remote_worker"  # Loader returns a `WorkerHandle` class with `create`.

_LOADERS: Dict[Tuple[str, str], Callable[[], Any]] = {}


def register_backend(kind: str, name: str, loader: Callable[[], Any]) -> None:
    """Registers (or replaces) the loader of backend `name` of `kind`.

    Args:
        kind: What the backend provides, e.g. `REMOTE_ENV_POOL`.
        name: The name users select it by, e.g. "ray".
        loader: Called without arguments when the backend is first needed; imports
            the backend's (optional) library and returns the backend object.
    """
    _LOADERS[(kind, name)] = loader


def registered_backends(kind: str) -> List[str]:
    """The sorted names of the registered backends of `kind`."""
    return sorted(name for k, name in _LOADERS if k == kind)


def load_backend(kind: str, name: str) -> Any:
    """Calls the loader of backend `name` of `kind` and returns its result.

    Raises:
        ValueError: If no such backend is registered (the message lists those that are).
        ImportError: From the loader, if the backend's library is not installed.
    """
    try:
        loader = _LOADERS[(kind, name)]
    except KeyError:
        raise ValueError(
            f"No {kind} backend named {name!r} is registered; registered: "
            f"{registered_backends(kind)}. `import tfrl` registers tfrl's own backends."
        ) from None
    return loader()
