"""Env creation from a registered name, a callable, or a gymnasium id.

`register_env(name, creator)` makes `name` usable wherever an env is configured
(`config["env"] = name`). `get_env_creator(env)` turns any such description into a
function `EnvContext -> env`, trying in order:

1. a name registered with `register_env`;
2. a callable (a function or an env class), called with the `EnvContext`;
3. a gymnasium id, made with `gymnasium.make(id, **env_config)`. The ids of env suites
   whose package registers them with gymnasium only when asked (`"ALE/..."`: ale-py,
   the `atari` extra; `"MinAtar/..."`: minatar) work without importing the package
   first: it is imported and registered on first use, in every process that makes one;
4. the full path of an env class (`"my_package.my_module.MyEnv"`, RLlib's form), called
   with the `EnvContext`.

Example:
    >>> import gymnasium as gym
    >>> from tfrl.env.env_context import EnvContext
    >>> register_env("short_cartpole", lambda ctx: gym.make("CartPole-v1", max_episode_steps=ctx["n"]))
    >>> env = get_env_creator("short_cartpole")(EnvContext({"n": 5}, worker_index=0))
    >>> env.spec.max_episode_steps
    5
"""

import difflib
import importlib
from typing import Any, Callable, Dict, Optional, Union

import gymnasium as gym

from tfrl.env.env_context import EnvContext
from tfrl.utils.error import EnvError

EnvCreator = Callable[[EnvContext], Any]

# The names of the TF-native envs (`tfrl.env.tf_envs`, run by the in-graph training path
# only): this prefix and a gymnasium id, e.g. "tfrl/CartPole-v1".
TF_ENV_PREFIX = "tfrl/"

# name -> creator, for the whole process (like RLlib's tune registry).
_ENV_CREATORS: Dict[str, EnvCreator] = {}

# Id namespace -> (module that registers the suite's ids, its registering function or
# None if importing the module registers them, pip package).
_SUITES = {
    "ALE": ("ale_py", None, "tfrl[atari]"),
    "MinAtar": ("minatar.gym", "register_envs", "tfrl[minatar]"),
}


def register_suite(env_id: str) -> bool:
    """Registers the gymnasium ids of `env_id`'s suite (ALE, MinAtar) if needed.

    Returns:
        Whether `env_id` is a gymnasium id now.

    Raises:
        ImportError: If `env_id` belongs to a suite whose package is not installed
            (naming the package to install).

    Example:
        >>> register_suite("CartPole-v1"), register_suite("NoSuchEnv-v0")
        (True, False)
    """
    if env_id in gym.registry:
        return True
    suite = _SUITES.get(env_id.split("/")[0]) if "/" in env_id else None
    if suite is None:
        return False
    module_name, register_fn, package = suite
    try:
        # An optional dependency, imported on the first use of one of its ids.
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError(
            f"The env {env_id!r} needs {module_name.split('.')[0]}: pip install "
            f"'{package}'.") from e
    if register_fn is not None:
        getattr(module, register_fn)()
    return env_id in gym.registry


def _make(env_id: str, config: dict) -> Any:
    register_suite(env_id)  # a fresh process (sub-env, Ray worker) may not have it yet
    return gym.make(env_id, **config)


def register_env(name: str, env_creator: EnvCreator) -> None:
    """Registers `env_creator` (called with an `EnvContext`) under `name`.

    Registering a name again replaces the earlier creator.

    Raises:
        TypeError: If `name` is not a string or `env_creator` is not callable.
    """
    if not isinstance(name, str):
        raise TypeError(f"register_env needs a str name; received {type(name).__name__}: {name!r}.")
    if not callable(env_creator):
        raise TypeError(
            f"register_env({name!r}, ...) needs a callable taking an EnvContext; received "
            f"{type(env_creator).__name__}: {env_creator!r}."
        )
    _ENV_CREATORS[name] = env_creator


def get_env_creator(env: Union[str, EnvCreator]) -> EnvCreator:
    """Returns a function `EnvContext -> env` for a registered name, callable or gymnasium id.

    Args:
        env: A name given to `register_env`, a callable taking an `EnvContext` (an env
            class works), or a gymnasium id such as `"CartPole-v1"` (also
            `"module:EnvId"`, which gymnasium imports).

    Raises:
        EnvError: (a ValueError) If `env` is a string that is neither registered, a
            gymnasium id, nor the full path of an importable env class
            ('package.module.MyEnv', which is called with the EnvContext as RLlib does);
            the message names the closest matches.
        TypeError: If `env` is neither a string nor callable.
    """
    if isinstance(env, str):
        if env in _ENV_CREATORS:
            return _ENV_CREATORS[env]
        if register_suite(env) or ":" in env:
            return lambda ctx: _make(env, dict(ctx))
        env_class = _import_env_class(env)
        if env_class is not None:
            return env_class
        known = list(_ENV_CREATORS) + list(gym.registry)
        close = difflib.get_close_matches(env, known, n=3)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        if env.startswith(TF_ENV_PREFIX):
            hint += (f" Names starting with {TF_ENV_PREFIX!r} are TF-native envs "
                     "(tfrl.env.tf_envs), which only the in-graph path runs: set "
                     ".rollouts(in_graph=True) (PPO, A2C, PG).")
        raise EnvError(
            f"Unknown env {env!r}: it is neither registered with tfrl.env.registry."
            f"register_env nor a gymnasium id.{hint} Register a creator with "
            f"register_env({env!r}, lambda env_context: MyEnv(env_context)) or pass an "
            f"env class or callable. (The env string you provided ({env!r}) is neither a "
            "registered name, a gymnasium id, nor the full path of an importable env "
            "class such as 'my_package.my_module.MyEnv'.)"
        )
    if callable(env):
        return env
    raise TypeError(
        f"An env must be a registered name, a gymnasium id or a callable taking an "
        f"EnvContext; received {type(env).__name__}: {env!r}."
    )


def _import_env_class(path: str) -> Optional[Callable]:
    """The callable at a full class path 'package.module.Name' (RLlib's env strings), or
    None if `path` is no such path (no dot, the module does not import, or it has no
    callable of that name)."""
    module_name, _, name = path.rpartition(".")
    if not module_name or not name.isidentifier():
        return None
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError, TypeError):
        return None
    obj = getattr(module, name, None)
    return obj if callable(obj) else None


def make_gymnasium_vector_env(
    env_id: str,
    num_envs: int,
    env_config: Optional[dict] = None,
    vectorization_mode: Optional[str] = None,
) -> gym.vector.VectorEnv:
    """Makes gymnasium's own vector env for a gymnasium id (the fast path).

    Args:
        env_id: A gymnasium id, e.g. `"CartPole-v1"`.
        num_envs: Number of sub-envs.
        env_config: Keyword arguments for the env (e.g. `max_episode_steps`).
        vectorization_mode: `"vector_entry_point"`, `"sync"` or `"async"`; None picks
            `"vector_entry_point"` if the env provides one (CartPole does), else `"sync"`.

    Returns:
        The gymnasium vector env; wrap it with `VectorEnv.from_gymnasium`, or pass it
        to `BaseEnv.to_base_env`.

    Raises:
        ValueError: If `env_id` is not a gymnasium id (names the closest ones).
    """
    if not register_suite(env_id):
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"{env_id!r} is not a gymnasium id.{hint}")
    if vectorization_mode is None:
        has_entry_point = gym.spec(env_id).vector_entry_point is not None
        vectorization_mode = "vector_entry_point" if has_entry_point else "sync"
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode=vectorization_mode, **(env_config or {})
    )
