"""The DeepMind Atari pipeline, from gymnasium's own wrappers, and its vectorized twin.

`wrap_deepmind(env)` turns an ALE env (ale-py) into the standard pipeline of the DQN
and PPO papers and of SB3's `AtariWrapper`:

1. gymnasium's `AtariPreprocessing`: up to `noop_max` no-ops after a reset, the action
   repeated `frame_skip` times with the last two frames max-pooled, `dim` x `dim`
   grayscale (ALE's own env must not skip frames itself: it runs with frameskip=1), and
   with `episodic_life` a lost life ends the episode (`terminated=True`; the next reset
   starts a new game, as ale-py's vector env does. DeepMind's `EpisodicLife` continued
   the game instead: neither gymnasium nor ale-py offers that);
2. `FireReset` (games whose action 1 is FIRE): FIRE, then action 2, after each reset;
3. gymnasium's `ClipReward` to [-1, 1];
4. gymnasium's `FrameStackObservation` of `framestack` frames (zeros before the first),
   moved to channels-last: observations are uint8 `[dim, dim, framestack]`
   (`[dim, dim, 1]` without stacking).

`make_atari_vector_env(env_id, num_envs)` builds the same pipeline in ale-py's C++
vector env (`gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`, which
steps the games in threads), with observations of the same dtype, shape and channel
order: `[num_envs, dim, dim, framestack]` uint8, and the same reset order (no-ops, then
an agent step of FIRE: `FireResetVector`; ale-py's own fire reset presses FIRE before
its no-ops, which makes every Breakout start alike and halves a random policy's score).

A rollout worker applies the pipeline to ALE envs with `preprocessor_pref="deepmind"`
(RLlib's default): each sub-env through `wrap_deepmind`, or, when the worker steps
several sub-envs of a plain `gym.make("ALE/...")` env, through `make_atari_vector_env`.
There the worker clips rewards itself (`clip_rewards`), so the env does not, and the
episode returns it reports are game scores; with episodic life an episode (and its
reported return) is one life.

Example:
    >>> env = make_atari("ALE/Pong-v5")  # doctest: +SKIP
    >>> env.observation_space  # doctest: +SKIP
    Box(0, 255, (84, 84, 4), uint8)

ale-py (the `atari` extra: `pip install 'tfrl[atari]'`) provides the games; gymnasium's
`AtariPreprocessing` needs OpenCV (in the same extra).
"""

from typing import Any, Optional

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

# ALE's raw screen: `[210, 160, 3]` (obs_type="rgb") or `[210, 160]` ("grayscale").
_SCREEN_SHAPE = (210, 160)
# Wrappers `gym.make` adds by itself: an env wrapped only in these is "plain".
_MAKE_WRAPPERS = (gym.wrappers.OrderEnforcing, gym.wrappers.PassiveEnvChecker,
                  gym.wrappers.TimeLimit)


def is_atari(env: Any) -> bool:
    """Whether `env` is an ALE Atari env (its gymnasium id starts with "ALE/").

    Example:
        >>> is_atari(gym.make("CartPole-v1"))
        False
    """
    spec = getattr(env, "spec", None)
    return bool(spec is not None and str(spec.id).startswith("ALE/"))


def has_raw_frames(env: gym.Env) -> bool:
    """Whether `env` returns ALE's raw screens (`[210, 160(, 3)]`), not preprocessed ones."""
    return tuple(getattr(env.observation_space, "shape", ())[:2]) == _SCREEN_SHAPE


class FireReset(gym.Wrapper):
    """Presses FIRE, then action 2, after each reset (games that wait for FIRE to start).

    Args:
        env: An ALE env (or a wrapper of one) whose action 1 is FIRE.

    Raises:
        ValueError: If action 1 is not FIRE.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(
                f"FireReset needs a game whose action 1 is FIRE. Received: action meanings "
                f"{meanings}. Use fire_reset=False for this game.")

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, info = self.env.reset(seed=seed, options=options)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(seed=seed, options=options)
        return obs, info


def _needs_fire(env: gym.Env) -> bool:
    meanings = env.unwrapped.get_action_meanings()
    return len(meanings) >= 3 and meanings[1] == "FIRE"


def _channels_last(obs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(obs, 0, -1))  # [C, H, W] -> [H, W, C]


def _add_channel(obs: np.ndarray) -> np.ndarray:
    return obs[..., None]  # [H, W] -> [H, W, 1]


def _frames_space(dim: int, channels: int) -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, (dim, dim, channels), np.uint8)


def _is_plain(env: gym.Env) -> bool:
    while isinstance(env, gym.Wrapper):
        if not isinstance(env, _MAKE_WRAPPERS):
            return False
        env = env.env
    return True


def _unskipped(env: gym.Env) -> gym.Env:
    """`env` if ALE does not skip frames, else the same game made with frameskip=1.

    Raises:
        ValueError: If ALE skips frames and `env` has wrappers of its own (it cannot be
            re-made without losing them).
    """
    spec = env.spec
    frameskip = spec.kwargs.get("frameskip", 1) if spec is not None else None
    if frameskip == 1:
        return env
    if spec is None or not _is_plain(env):
        raise ValueError(
            "wrap_deepmind skips frames itself (max-pooling the last two) and needs an ALE "
            f"env that does not. Received: {env} with frameskip={frameskip!r}. Make it "
            "with gym.make(env_id, frameskip=1) (or use tfrl.env.wrappers.atari.make_atari), "
            "or pass frame_skip=1 to wrap_deepmind to keep ALE's frame skipping; in an "
            "algorithm's config, preprocessor_pref='rllib' leaves the env as it is.")
    plain = gym.make(spec, frameskip=1)
    env.close()
    return plain


def wrap_deepmind(env: gym.Env, dim: int = 84, framestack: Any = True, *,
                  noop_max: int = 30, frame_skip: int = 4, episodic_life: bool = True,
                  fire_reset: Optional[bool] = None, clip_rewards: bool = True) -> gym.Env:
    """Wraps an ALE env in the DeepMind pipeline (see the module docstring).

    A plain `gym.make("ALE/...")` env that skips frames itself (the v5 ids' default
    frameskip=4) is re-made with frameskip=1 (its other arguments kept, e.g. sticky
    actions); the original is closed.

    Args:
        env: An ALE env with raw screen observations.
        dim: Height and width of the observations.
        framestack: True for 4 frames (RLlib's meaning), an int for that many, or
            False/0/1 for none: observations `[dim, dim, n]`.
        noop_max: At most this many no-ops after a reset (0: none).
        frame_skip: Each action is repeated this many times (max-pooling the last two
            frames).
        episodic_life: A lost life ends the episode; the next reset starts a new game.
        fire_reset: Press FIRE after resets (see `FireReset`); None: if the game has
            FIRE as action 1.
        clip_rewards: Clip rewards to [-1, 1].

    Returns:
        The wrapped env: uint8 observations `[dim, dim, n]`, channels-last.

    Raises:
        ValueError: If `env` is not an ALE env, or skips frames and cannot be re-made.
    """
    if not is_atari(env):
        raise ValueError(f"wrap_deepmind needs an ALE env (id 'ALE/...'). Received: {env}.")
    stack = _stack_size(framestack)
    if frame_skip > 1:
        env = _unskipped(env)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip,
                                          screen_size=dim, terminal_on_life_loss=episodic_life)
    if fire_reset or (fire_reset is None and _needs_fire(env)):
        env = FireReset(env)
    if clip_rewards:
        env = gym.wrappers.ClipReward(env, -1.0, 1.0)
    if stack > 1:
        env = gym.wrappers.FrameStackObservation(env, stack, padding_type="zero")
        return gym.wrappers.TransformObservation(env, _channels_last, _frames_space(dim, stack))
    return gym.wrappers.TransformObservation(env, _add_channel, _frames_space(dim, 1))


def make_atari(env_id: str, dim: int = 84, framestack: Any = True, **kwargs: Any) -> gym.Env:
    """`gym.make(env_id, frameskip=1)` in the DeepMind pipeline (`wrap_deepmind`).

    Args:
        env_id: An ALE id, e.g. "ALE/Breakout-v5".
        dim: See `wrap_deepmind`.
        framestack: See `wrap_deepmind`.
        **kwargs: `wrap_deepmind`'s keyword options; any other keyword goes to
            `gym.make` (e.g. `repeat_action_probability=0.0`, `render_mode`).
    """
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in _WRAP_OPTIONS}
    _ensure_ale_registered()
    env = gym.make(env_id, frameskip=1, **kwargs)
    return wrap_deepmind(env, dim, framestack, **options)


_WRAP_OPTIONS = ("noop_max", "frame_skip", "episodic_life", "fire_reset", "clip_rewards")


def make_atari_vector_env(env_id: Any, num_envs: int, dim: int = 84, framestack: Any = True,
                          *, noop_max: int = 30, frame_skip: int = 4,
                          episodic_life: bool = True, fire_reset: Optional[bool] = None,
                          clip_rewards: bool = True, **kwargs: Any) -> gym.vector.VectorEnv:
    """`wrap_deepmind`'s pipeline in ale-py's C++ vector env, observations channels-last.

    Resets follow `wrap_deepmind`'s order: the no-ops first (ale-py draws 0 to
    `noop_max - 1` of them; gymnasium's `AtariPreprocessing` 1 to `noop_max`), then, in
    games with FIRE, one agent step of FIRE (`frame_skip` frames; `FireReset` then also
    takes one step of action 2, which this env does not). ale-py's own fire reset is not
    used: it presses FIRE for one frame *before* its no-ops, so the game starts at the
    same frame after every reset (in Breakout the first ball always lands at the same
    place, on the 97th frame) and the no-ops no longer vary the start. The env keeps
    gymnasium's NEXT_STEP autoreset: the step after an episode ended returns the first
    observation of the next one (reward 0); its action is ignored (FIRE is taken).

    Args:
        env_id: An ALE id or its `EnvSpec` (its kwargs, e.g. sticky actions, are kept;
            its frameskip is replaced by `frame_skip`).
        num_envs: Number of games stepped together.
        dim, framestack, noop_max, frame_skip, episodic_life, fire_reset, clip_rewards:
            As in `wrap_deepmind` (`fire_reset=None`: FIRE after resets where the game
            has it as action 1).
        **kwargs: Further keywords of ale-py's `AtariVectorEnv` (e.g. `num_threads`).

    Returns:
        A gymnasium vector env with observations uint8 `[num_envs, dim, dim, n]`.

    Raises:
        ValueError: If `fire_reset=True` for a game whose action 1 is not FIRE, or
            `autoreset_mode` is passed (the env's autoreset is NEXT_STEP).
    """
    stack = _stack_size(framestack)
    _ensure_ale_registered()
    if "autoreset_mode" in kwargs:
        raise ValueError(
            f"make_atari_vector_env's autoreset is NEXT_STEP (its fire reset needs it). "
            f"Received: autoreset_mode={kwargs['autoreset_mode']!r}. Remove the argument.")

    def make(mode: AutoresetMode) -> gym.vector.VectorEnv:
        return gym.make_vec(
            env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
            img_height=dim, img_width=dim, grayscale=True, stack_num=stack,
            frameskip=frame_skip, maxpool=frame_skip > 1, noop_max=noop_max,
            episodic_life=episodic_life, use_fire_reset=False,
            reward_clipping=clip_rewards, autoreset_mode=mode, **kwargs)

    env = make(AutoresetMode.SAME_STEP)
    actions = list(env.unwrapped.ale.get_action_set())
    has_fire = len(actions) >= 3 and actions[1] == _ale_action("FIRE")
    if fire_reset and not has_fire:
        env.close()
        raise ValueError(
            f"fire_reset=True needs a game whose action 1 is FIRE. Received: actions "
            f"{[str(a) for a in actions]}. Use fire_reset=None or False for this game.")
    if has_fire and fire_reset is not False:
        env = FireResetVector(env)
    else:  # no FIRE: ale-py's own NEXT_STEP autoreset
        env.close()
        env = make(AutoresetMode.NEXT_STEP)
    single = _frames_space(dim, stack)
    return gym.wrappers.vector.TransformObservation(
        env, _batch_channels_last,
        observation_space=gym.vector.utils.batch_space(single, num_envs),
        single_observation_space=single)


def _ale_action(name: str) -> Any:
    # ale-py's `Action` member `name` (e.g. "FIRE").
    import ale_py

    return getattr(ale_py.Action, name)


class FireResetVector(gym.vector.VectorWrapper):
    """NEXT_STEP autoreset with an agent step of FIRE after each reset, over an ale-py
    vector env that resets in SAME_STEP mode (no-ops only).

    The step that ends a sub-env's episode returns its final observation (from
    `info["final_obs"]`; ale-py has already reset the game and run its no-ops); the next
    step presses FIRE there instead of the action given (as a NEXT_STEP env ignores the
    action of a sub-env it resets) and returns the observation after it, reward 0, not
    ended. `reset()` also presses FIRE once in every sub-env. The infos of the step that
    ends a sub-env's episode describe its new game (e.g. `lives`): ale-py's SAME_STEP
    mode returns no final infos.

    Args:
        env: ale-py's `AtariVectorEnv` (possibly wrapped) in SAME_STEP autoreset mode, of
            a game whose action 1 is FIRE.

    Raises:
        ValueError: If `env` does not reset in SAME_STEP mode.
    """

    def __init__(self, env: gym.vector.VectorEnv):
        super().__init__(env)
        mode = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        if mode is not AutoresetMode.SAME_STEP:
            raise ValueError(
                f"FireResetVector needs an env in SAME_STEP autoreset mode. Received: "
                f"{mode}. Make it with autoreset_mode=AutoresetMode.SAME_STEP.")
        self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
        self._ended = np.zeros(self.num_envs, bool)  # reset by ale-py, not reported yet

    def reset(self, *, seed: Any = None, options: Optional[dict] = None):
        if options and "reset_mask" in options:
            raise ValueError(
                "FireResetVector resets all sub-envs together (a sub-env whose episode "
                "ended is reset by the next step). Received: options with 'reset_mask'.")
        obs, info = self.env.reset(seed=seed, options=options)
        fire = np.ones(self.num_envs, dtype=np.int64)
        obs, _, terminated, truncated, info = self.env.step(fire)
        info = self._drop_final(info)
        self._ended[:] = False  # an episode ended by FIRE was reset again by ale-py
        return obs, info

    def step(self, actions: Any):
        ended = self._ended
        if ended.any():
            actions = np.array(actions, copy=True)
            actions[ended] = 1  # FIRE
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        final_obs = info.get("final_obs")
        info = self._drop_final(info)
        if ended.any():
            rewards = np.where(ended, 0.0, rewards).astype(rewards.dtype)
            # A FIRE that ended the episode: ale-py reset it again; report that start.
            terminated, truncated = terminated & ~ended, truncated & ~ended
        done = terminated | truncated
        if done.any():
            obs = np.array(obs, copy=True)
            obs[done] = final_obs[done]
        self._ended = done
        return obs, rewards, terminated, truncated, info

    @staticmethod
    def _drop_final(info: dict) -> dict:
        return {k: v for k, v in info.items() if k not in ("final_obs", "_final_obs",
                                                            "final_info", "_final_info")}


def _batch_channels_last(obs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(obs, 1, -1))  # [B, C, H, W] -> [B, H, W, C]


def _stack_size(framestack: Any) -> int:
    if framestack is True:
        return 4
    if framestack is False or framestack is None:
        return 1
    if isinstance(framestack, (int, np.integer)) and framestack >= 1:
        return int(framestack)
    raise ValueError(
        f"framestack must be True (4 frames), False or a positive int. Received: "
        f"{framestack!r}.")


def _ensure_ale_registered() -> None:
    # ale-py registers its "ALE/..." ids with gymnasium when imported; an optional
    # dependency (the `atari` extra), so it is imported here, on first use.
    try:
        import ale_py
    except ImportError as e:
        raise ImportError(
            "Atari envs need ale-py: pip install 'tfrl[atari]' (ale-py and OpenCV).") from e
    gym.register_envs(ale_py)
