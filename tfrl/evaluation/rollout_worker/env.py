"""Env creation for a rollout worker: create, validate, wrap, seed and vectorize.

`RolloutWorker` delegates everything about its environment here:

* `validate_env` checks that an env is of a supported kind;
* `check_env` checks a worker's first env right after its creation, as RLlib's workers
  do (unless `disable_env_checking`): it resets the env, so an env whose `reset()`
  raises or returns no gymnasium `(obs, info)` fails when the worker (and so the
  algorithm) is built, not at its first `sample()`;
* `SubEnvMaker` creates (and validates, checks, wraps, seeds) sub-env `vector_index` of a worker;
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
are reproducible. The check's reset of a seeded env is that seeding reset (one reset, the
same seed): checking changes no random stream. The check's reset of an unseeded env
starts its first episode (`vectorize` hands it to the vector env), so the env is not
reset twice either; only where sub-env 0 is replaced (gymnasium's native vector env, whose
sub-envs are new) or runs in another process does the check's reset stay an extra one.
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
from tfrl.env.space_checks import observation_error
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


def check_env(env: Any, seed: Optional[int] = None) -> Optional[tuple]:
    """Checks a gymnasium env (or MultiAgentEnv) just created: its spaces, and that
    `reset(seed=seed)` works and returns gymnasium's `(obs, info)` with an observation
    that fits the observation space (structure, shape, numeric dtype; see
    `tfrl.env.space_checks.observation_error`). That reset seeds the env as `seed_env`
    does, so a seeded env is reset once, checked or not. The env is not stepped (the
    sampler checks every step's values).

    Other kinds of env (vector envs, BaseEnvs, external envs) are only seeded: RLlib's
    checker does not check vector or external envs either.

    Args:
        env: The env.
        seed: The env's seed (None: an unseeded `reset()`).

    Returns:
        The `(obs, info)` of the check's reset, or None if the env was not checked.

    Raises:
        ValueError: If the spaces are not gymnasium spaces, or the reset result or its
            observation does not fit; the message says how to turn the check off.
        Exception: Whatever the env's `reset()` raises, with a note that the env check
            called it.
    """
    if isinstance(env, (BaseEnv, ExternalEnv, VectorEnv)) or not isinstance(env, gym.Env):
        seed_env(env, seed)
        return None
    name = type(env.unwrapped).__name__
    off = "(or set disable_env_checking=True to skip this check)"
    multi_agent = isinstance(env.unwrapped, MultiAgentEnv)
    if not multi_agent:
        for what in ("observation_space", "action_space"):
            space = getattr(env, what, None)
            if not isinstance(space, gym.Space):
                raise ValueError(
                    f"The env {name} has {what}={space!r}; expected a gymnasium.spaces.Space. "
                    f"Set self.{what} in the env's __init__ {off}.")
    try:
        result = env.reset(seed=seed)
    except Exception as e:
        e.add_note(f"(raised by {name}.reset() in the env check right after the env was "
                   f"created; a working reset() is needed to sample from it)")
        raise
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValueError(
            f"{name}.reset() returned {result!r}; expected gymnasium's tuple (obs, info). "
            f"Return `obs, info` from reset() {off}.")
    obs, info = result
    if multi_agent:
        if not (isinstance(obs, dict) and isinstance(info, dict)):
            raise ValueError(
                f"{name}.reset() returned ({type(obs).__name__}, {type(info).__name__}); a "
                f"MultiAgentEnv returns two dicts, agent id -> obs and agent id -> info {off}.")
    else:
        problem = observation_error(env.observation_space, obs)
        if problem:
            raise ValueError(f"The observation of {name}.reset() does not fit the env's "
                             f"observation space: {problem}. Fix reset() or the space {off}.")
        if not isinstance(info, dict):
            raise ValueError(f"{name}.reset() returned an info of type "
                             f"{type(info).__name__}; expected a dict {off}.")
    space = getattr(env, "action_space", None)
    if seed is not None and isinstance(space, gym.Space):
        space.seed(seed)
    return result


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
            f"moviepy: pip install moviepy, or 'tfrl[video]' ({e})."
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

    Attributes:
        first_reset: The `(obs, info)` of the check's reset of an unseeded env prepared
            with `check=True`, until `vectorize` hands it to the vector env (which
            then starts the env's first episode with it instead of resetting again).
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
        self.first_reset: Optional[tuple] = None

    def context(self, vector_index: int) -> EnvContext:
        """The EnvContext of sub-env `vector_index`."""
        return self.env_context.copy_with_overrides(
            vector_index=vector_index, remote=self.remote if vector_index else None)

    def __call__(self, vector_index: int) -> Any:
        ctx = self.context(vector_index)
        env = self.env_creator(ctx)
        return self.prepare(env, ctx)

    def prepare(self, env: Any, ctx: EnvContext, check: bool = False) -> Any:
        """Validates, wraps and seeds an env just created for `ctx`; with `check`, checks
        it (`check_env`, whose reset is the seeding reset)."""
        validate_env(env, ctx)
        if self.validate is not None:
            self.validate(env, ctx)
        if not isinstance(env, BaseEnv):
            env = self.wrap(env)
        seed = env_seed(self.seed, ctx.worker_index, ctx.vector_index)
        if check:
            result = check_env(env, seed)
            # A seeded env's check is its seeding reset, after which the sampler resets
            # it as before; an unseeded env's first episode is the check's reset.
            self.first_reset = result if seed is None else None
        else:
            seed_env(env, seed)
        if not isinstance(env, BaseEnv):
            # After the seeding reset: RecordVideo counts resets as episodes, and would
            # write that reset's single frame as the first video. A recorded env's first
            # episode starts with the sampler's own reset, which the recorder sees.
            recorded = record_env_wrapper(env, self.record_env, self.log_dir)
            if recorded is not env:
                self.first_reset = None
            env = recorded
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
        state["first_reset"] = None
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
    first_reset, maker.first_reset = maker.first_reset, None
    custom = policy_config.get("custom_vector_env")
    if custom is not None:
        return custom(env)
    first = env
    if not remote_worker_envs:
        native = _native_vector_env(env, num_envs, maker)
        if native is not None:
            env = native
    base_env = BaseEnv.to_base_env(
        env, make_env=maker, num_envs=num_envs, remote_envs=remote_worker_envs,
        remote_env_batch_wait_ms=remote_env_batch_wait_ms, policy_config=policy_config)
    if first_reset is not None:
        # Sub-env 0 was reset by the env check: its first episode starts there, without
        # a second reset (an env counting its resets runs as it would unchecked).
        target = getattr(base_env, "vector_env", base_env)
        envs = getattr(target, "envs", None)
        if envs and envs[0] is first and callable(getattr(target, "adopt_reset", None)):
            target.adopt_reset(0, first_reset)
    return base_env


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
