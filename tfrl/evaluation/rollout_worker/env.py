"""Env creation for a rollout worker: create, validate, wrap, seed and vectorize.

`RolloutWorker` delegates everything about its environment here:

* `validate_env` checks that an env is of a supported kind;
* `SubEnvMaker` creates (and validates, wraps, seeds) sub-env `vector_index` of a worker;
  it is picklable, so sub-processes (`remote_worker_envs`) can run it. With `deepmind`
  options (the worker's `preprocessor_pref="deepmind"`) it wraps ALE envs that return
  raw screens in the DeepMind pipeline (`tfrl.env.wrappers.atari.wrap_deepmind`);
* `vectorize` turns the first env plus `SubEnvMaker` into a `BaseEnv`. A plain gymnasium
  env that gymnasium can vectorize natively (a `vector_entry_point`, e.g. CartPole) is
  replaced by `gymnasium.make_vec(spec, num_envs, "vector_entry_point")`, the fast path,
  when nothing depends on separate sub-env objects (no `validate_env`, no
  `on_sub_environment_created` callback, no recording). For ALE envs that fast path is
  ale-py's C++ vector env, which preprocesses: it is used only for a plain ALE env in
  the DeepMind pipeline, built with the same options
  (`tfrl.env.wrappers.atari.make_atari_vector_env`: the same observations).

Seeding: sub-env `i` of worker `w` is reset once with seed `seed + 1000 * w + i` (and its
action space seeded the same), so every worker and sub-env explores differently and runs
are reproducible.
"""

import dataclasses
import logging
import os
import tempfile
from typing import Any, Callable, Optional, Union

import gymnasium as gym

from tfrl.env.base_env import BaseEnv
from tfrl.env.env_context import EnvContext
from tfrl.env.external_env import ExternalEnv
from tfrl.env.external_multi_agent_env import ExternalMultiAgentEnv
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.vector_env import VectorEnv
from tfrl.env.wrappers import atari
from tfrl.env.wrappers.atari import is_atari  # noqa: F401  (re-exported: the worker's check)

logger = logging.getLogger(__name__)

MAX_ENVS_PER_WORKER = 1000


def _supported_types() -> tuple:
    return (gym.Env, gym.vector.VectorEnv, BaseEnv, MultiAgentEnv, VectorEnv, ExternalEnv)


def validate_env(env: Any, env_context: EnvContext) -> None:
    """Raises if `env` is not a kind of env a rollout worker can sample from.

    Raises:
        ValueError: For any other object (e.g. the env class instead of an instance, or
            a creator that returned None).
    """
    if not isinstance(env, _supported_types()):
        raise ValueError(
            f"The env creator returned {type(env).__name__}: {env!r} (env_context={env_context!r}). "
            "Expected a gymnasium.Env, gymnasium vector env, tfrl MultiAgentEnv, VectorEnv, "
            "ExternalEnv or BaseEnv. Make env_creator return an env instance."
        )


def env_seed(seed: Optional[int], worker_index: int, vector_index: int) -> Optional[int]:
    """The seed of sub-env `vector_index` of worker `worker_index` (None if `seed` is None)."""
    if seed is None:
        return None
    return int(seed) + MAX_ENVS_PER_WORKER * int(worker_index) + int(vector_index)


def seed_env(env: Any, seed: Optional[int]) -> None:
    """Seeds a gymnasium env (or vector env) by resetting it once with `seed`."""
    if seed is None or not isinstance(env, (gym.Env, gym.vector.VectorEnv)):
        return
    env.reset(seed=seed)
    space = getattr(env, "single_action_space", None) or getattr(env, "action_space", None)
    if isinstance(space, gym.Space):
        space.seed(seed)


def record_env_wrapper(env: Any, record_env: Union[bool, str], log_dir: Optional[str]) -> Any:
    """Wraps a gymnasium env in `RecordVideo` if `record_env` asks for it.

    Args:
        env: The env.
        record_env: False: no recording. True: videos under `<log_dir>/videos`. A str:
            videos in that directory.
        log_dir: The worker's log dir (a temp dir if None).

    Returns:
        The (possibly wrapped) env. Envs that cannot render rgb arrays (or are not
        gymnasium envs) are returned unwrapped with a warning.

    Raises:
        ImportError: If moviepy (needed by RecordVideo) is not installed.
    """
    if not record_env:
        return env
    if not isinstance(env, gym.Env) or getattr(env, "render_mode", None) != "rgb_array":
        logger.warning(
            "record_env=%r: cannot record %s (recording needs a gymnasium.Env made with "
            "render_mode='rgb_array'); not recording.", record_env, type(env).__name__)
        return env
    folder = record_env if isinstance(record_env, str) else os.path.join(
        log_dir or tempfile.mkdtemp(prefix="tfrl_"), "videos")
    from gymnasium.wrappers import RecordVideo

    try:
        return RecordVideo(env, folder, disable_logger=True)
    except gym.error.DependencyNotInstalled as e:
        raise ImportError(
            f"record_env={record_env!r} records videos with gymnasium's RecordVideo, which needs "
            f"moviepy: pip install moviepy ({e})."
        ) from e


class SubEnvMaker:
    """Creates sub-env `vector_index` of a worker: create, validate, wrap, seed.

    Args:
        env_creator: `EnvContext -> env`.
        env_context: The worker's EnvContext (vector index 0).
        remote: Whether the sub-envs run remotely (recorded in their EnvContext).
        validate: Optional user validator `(env, env_context) -> None`.
        seed: Base seed, or None.
        record_env: See `record_env_wrapper`.
        log_dir: The worker's log dir.
        on_created: Optional `(env, env_context) -> None` called for each new sub-env
            (the worker's `on_sub_environment_created` callback); dropped when pickled.
        deepmind: None, or `wrap_deepmind`'s keyword options: ALE envs with raw screens
            are wrapped in the DeepMind pipeline (before recording and seeding).
    """

    def __init__(self, env_creator: Callable[[EnvContext], Any], env_context: EnvContext,
                 remote: bool = False, validate: Optional[Callable] = None,
                 seed: Optional[int] = None, record_env: Union[bool, str] = False,
                 log_dir: Optional[str] = None, on_created: Optional[Callable] = None,
                 deepmind: Optional[dict] = None):
        self.env_creator = env_creator
        self.env_context = env_context
        self.remote = remote
        self.validate = validate
        self.seed = seed
        self.record_env = record_env
        self.log_dir = log_dir
        self.on_created = on_created
        self.deepmind = None if deepmind is None else dict(deepmind)

    def context(self, vector_index: int) -> EnvContext:
        """The EnvContext of sub-env `vector_index`."""
        return self.env_context.copy_with_overrides(
            vector_index=vector_index, remote=self.remote if vector_index else None)

    def __call__(self, vector_index: int) -> Any:
        ctx = self.context(vector_index)
        env = self.env_creator(ctx)
        return self.prepare(env, ctx)

    def prepare(self, env: Any, ctx: EnvContext) -> Any:
        """Validates, wraps and seeds an env just created for `ctx`."""
        validate_env(env, ctx)
        if self.validate is not None:
            self.validate(env, ctx)
        if not isinstance(env, BaseEnv):
            env = record_env_wrapper(self.wrap(env), self.record_env, self.log_dir)
        seed_env(env, env_seed(self.seed, ctx.worker_index, ctx.vector_index))
        if self.on_created is not None:
            self.on_created(env, ctx)
        return env

    def wrap(self, env: Any) -> Any:
        """`env` in the DeepMind pipeline if this maker has `deepmind` options and `env`
        is an ALE env returning raw screens; else `env`."""
        if self.deepmind is not None and applies_deepmind(env):
            return atari.wrap_deepmind(env, **self.deepmind)
        return env

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["on_created"] = None  # the callback lives in the worker's process
        return state


def _wrapper_chain(env: Any) -> list:
    chain = []
    while True:
        chain.append(type(env))
        if not isinstance(env, gym.Wrapper):
            return chain
        env = env.env


def _native_vector_env(env: Any, num_envs: int, maker: SubEnvMaker) -> Optional[Any]:
    """`gymnasium.make_vec(spec, num_envs)` for a plain gymnasium env, or None."""
    spec = getattr(env, "spec", None)
    if (num_envs < 2 or maker.validate is not None or maker.on_created is not None
            or maker.record_env or not isinstance(env, gym.Env) or spec is None
            or spec.vector_entry_point is None):
        return None
    try:
        # The env as `gym.make` gives it, without the creator's wrappers (a wrapped env's
        # spec lists them in `additional_wrappers`).
        spec = dataclasses.replace(spec, additional_wrappers=())
        raw = gym.make(spec)
        deepmind = maker.deepmind is not None and applies_deepmind(raw)
        reference = maker.wrap(raw)
        plain = _wrapper_chain(reference) == _wrapper_chain(env)
        reference.close()
        if not plain:  # the creator added wrappers make_vec would not apply
            return None
        if deepmind:
            vector_env = atari.make_atari_vector_env(spec, num_envs, **maker.deepmind)
        elif is_atari(env):  # ale-py's vector env preprocesses: not the env's observations
            return None
        else:
            vector_env = gym.make_vec(spec, num_envs=num_envs,
                                      vectorization_mode="vector_entry_point")
    except Exception as e:  # any failure: fall back to separate sub-envs
        logger.info("No native vector env for %s (%r); using sub-env copies.", spec.id, e)
        return None
    seed_env(vector_env, env_seed(maker.seed, maker.env_context.worker_index, 0))
    env.close()
    return vector_env


def vectorize(env: Any, maker: SubEnvMaker, num_envs: int, remote_worker_envs: bool,
              remote_env_batch_wait_ms: int, policy_config: dict) -> BaseEnv:
    """Turns the worker's first env into a BaseEnv of `num_envs` sub-envs.

    Args:
        env: Sub-env 0 (already prepared by `maker`), or a vector/base env.
        maker: Makes sub-envs 1.. (and is sent to sub-processes with remote envs).
        num_envs: Number of sub-envs.
        remote_worker_envs: Run each sub-env in its own process.
        remote_env_batch_wait_ms: See `RemoteVectorEnv`.
        policy_config: Read for `custom_vector_env` (`env -> BaseEnv`).

    Returns:
        The BaseEnv the sampler polls.
    """
    custom = policy_config.get("custom_vector_env")
    if custom is not None:
        return custom(env)
    if not remote_worker_envs:
        native = _native_vector_env(env, num_envs, maker)
        if native is not None:
            env = native
    return BaseEnv.to_base_env(
        env, make_env=maker, num_envs=num_envs, remote_envs=remote_worker_envs,
        remote_env_batch_wait_ms=remote_env_batch_wait_ms, policy_config=policy_config)


def applies_deepmind(env: Any) -> bool:
    """Whether `preprocessor_pref="deepmind"` wraps `env`: an ALE env (gymnasium.Env)
    returning raw screens (an env its creator already preprocessed is left alone)."""
    return isinstance(env, gym.Env) and is_atari(env) and atari.has_raw_frames(env)


def check_multi_agent_env(env: Any, policy_ids: list) -> None:
    """Raises if several policies are configured but `env` has only one agent.

    Raises:
        ValueError: If `env` is not a BaseEnv, MultiAgentEnv or ExternalMultiAgentEnv.
    """
    if not isinstance(env, (BaseEnv, MultiAgentEnv, ExternalMultiAgentEnv)):
        raise ValueError(
            f"Have multiple policies {policy_ids!r}, but the env {type(env).__name__} is not a "
            "BaseEnv, MultiAgentEnv or ExternalMultiAgentEnv. Use one policy (policy_spec="
            "PolicyClass) or a multi-agent env (e.g. tfrl.env.make_multi_agent)."
        )
