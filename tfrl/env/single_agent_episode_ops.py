"""Operations behind `SingleAgentEpisode`: checks, cut/slice/concat, conversion, state.

Construction checks, validation, chunking, the data-dict conversion and state round
trips live here, kept apart so that `single_agent_episode.py` stays a readable list of the public API;
every function here takes the episode as its first argument. Not a public module.
"""

import copy
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

import gymnasium as gym
import numpy as np

from tfrl.core.columns import Columns
from tfrl.env.utils.infinite_lookback_buffer import Indices, InfiniteLookbackBuffer
from tfrl.utils.spaces.space_utils import structs_equal, to_numpy_batch, unbatch

if TYPE_CHECKING:
    from tfrl.env.single_agent_episode import SingleAgentEpisode

_LIST_TYPES = (list, tuple, np.ndarray)


def resolve_lookback(
    len_lookback_buffer: Union[int, str],
    observations: Any,
    infos: Any,
    actions: Any,
    rewards: Any,
    extras: Dict[str, Any],
) -> int:
    """Turns `len_lookback_buffer` ("auto" or int) into the lookback size for lists."""
    if isinstance(len_lookback_buffer, str):
        if len_lookback_buffer != "auto":
            raise ValueError(
                "`len_lookback_buffer` must be an int >= 0 or 'auto'. Received: "
                f"len_lookback_buffer={len_lookback_buffer!r}."
            )
        # "auto": every provided step is lookback data (as RLlib's SingleAgentEpisode does).
        for steps in (rewards, actions):
            if isinstance(steps, _LIST_TYPES):
                return len(steps)
        if isinstance(observations, _LIST_TYPES):
            return max(len(observations) - 1, 0)
        return 0
    if not isinstance(len_lookback_buffer, (int, np.integer)) or isinstance(
        len_lookback_buffer, bool
    ):
        raise TypeError(
            "`len_lookback_buffer` must be an int >= 0 or 'auto'. Received: "
            f"len_lookback_buffer={len_lookback_buffer!r} "
            f"(type {type(len_lookback_buffer).__name__})."
        )
    n = int(len_lookback_buffer)
    if n < 0:
        raise ValueError(
            f"`len_lookback_buffer` must be >= 0. Received: len_lookback_buffer={n}."
        )
    # Observations and infos hold one item more than the steps (the ts=0 item).
    columns = [("observations", observations, 1), ("infos", infos, 1), ("actions", actions, 0),
               ("rewards", rewards, 0)] + [(f"extra_model_outputs[{k!r}]", v, 0)
                                          for k, v in extras.items()]
    for name, data, extra in columns:
        if isinstance(data, _LIST_TYPES) and n > 0 and len(data) < n + extra:
            raise ValueError(
                f"`len_lookback_buffer` is larger than the provided data. Received: "
                f"len_lookback_buffer={n} but {name} has {len(data)} items (needs at "
                f"least {n + extra}). Pass a smaller len_lookback_buffer or more data."
            )
    return n


def to_buffer(
    data: Any, lookback: int, space: Optional[gym.Space], name: str
) -> InfiniteLookbackBuffer:
    """Wraps a constructor argument (None, list, array or buffer) into a buffer."""
    if isinstance(data, InfiniteLookbackBuffer):
        if data.space is None and space is not None:
            data.space = space
        return data
    if data is None:
        return InfiniteLookbackBuffer([], lookback=0, space=space)
    if isinstance(data, _LIST_TYPES):
        return InfiniteLookbackBuffer(list(data), lookback=lookback, space=space)
    raise TypeError(
        f"`{name}` must be a list, a numpy array, an InfiniteLookbackBuffer or None. "
        f"Received: {name} of type {type(data).__name__}."
    )


def validate(episode: "SingleAgentEpisode") -> None:
    """Raises ValueError unless all columns have consistent sizes and lookbacks."""
    obs, infos, actions, rewards = (
        episode.observations, episode.infos, episode.actions, episode.rewards)
    totals = [b.len_incl_lookback() for b in (obs, infos, actions, rewards)]
    extras = episode.extra_model_outputs
    if not any(totals) and not any(b.len_incl_lookback() for b in extras.values()):
        return  # An empty episode (before add_env_reset) is valid.

    def fail(problem: str) -> None:
        raise ValueError(
            f"Inconsistent data in episode id_={episode.id_!r}: {problem} Expected "
            "#observations == #infos == #actions + 1 == #rewards + 1 (lookback included), "
            "equal lookback sizes, and one extra model output per in-episode action. "
            "Check the data passed to the constructor, setters or buffers."
        )

    if totals[0] != totals[1]:
        fail(f"Received: {totals[0]} observations but {totals[1]} infos.")
    lookbacks = [b.lookback for b in (obs, infos, actions, rewards)]
    if len(set(lookbacks)) != 1:
        fail(f"Received: lookback sizes (observations, infos, actions, rewards) = {lookbacks}.")
    if totals[0] != totals[2] + 1 or totals[3] != totals[2]:
        fail(
            f"Received: {totals[0]} observations, {totals[2]} actions and "
            f"{totals[3]} rewards."
        )
    for key, buffer in extras.items():
        # Keys first seen mid-chunk may have a smaller lookback than the actions.
        if len(buffer) != len(actions) or buffer.lookback > actions.lookback:
            fail(
                f"Received: extra_model_outputs[{key!r}] with {len(buffer)} in-episode "
                f"items (lookback {buffer.lookback}) for {len(actions)} actions "
                f"(lookback {actions.lookback})."
            )


def new_extra_buffer(
    episode: "SingleAgentEpisode", key: str, new_data: Any, at_indices: Indices
) -> InfiniteLookbackBuffer:
    """Builds the buffer for a new extra-model-output key set via the setter."""
    if at_indices is not None:
        raise ValueError(
            f"A new extra model output key can only be set as a whole. Received: "
            f"key={key!r} (not yet in the episode) with at_indices={at_indices!r}. "
            "Pass at_indices=None and one item per in-episode step."
        )
    buffer = InfiniteLookbackBuffer(new_data if isinstance(new_data, list) else unbatch(new_data))
    if len(buffer) != len(episode):
        raise IndexError(
            f"A new extra model output needs one item per in-episode step. Received: "
            f"{len(buffer)} items for key={key!r}, but the episode has {len(episode)} "
            "steps. Pass exactly len(episode) items."
        )
    if episode.is_finalized:
        buffer.finalize()
    return buffer


def _copy(buffer: InfiniteLookbackBuffer, start: int, stop: int, lookback: int, **kw):
    return buffer._copy_range(start, stop, lookback, **kw)  # pylint: disable=protected-access


def cut(episode: "SingleAgentEpisode", len_lookback_buffer: int) -> "SingleAgentEpisode":
    """See `SingleAgentEpisode.cut`."""
    if not isinstance(len_lookback_buffer, (int, np.integer)) or isinstance(
        len_lookback_buffer, bool
    ):
        raise TypeError(
            "`len_lookback_buffer` must be an int >= 0. Received: "
            f"len_lookback_buffer={len_lookback_buffer!r}."
        )
    if len_lookback_buffer < 0:
        raise ValueError(
            f"`len_lookback_buffer` must be >= 0. Received: "
            f"len_lookback_buffer={len_lookback_buffer}."
        )
    if episode.is_done:
        raise RuntimeError(
            f"Cannot cut an episode that is done. Received: cut() on episode "
            f"id_={episode.id_!r} with is_terminated={episode.is_terminated}, "
            f"is_truncated={episode.is_truncated}. A done episode has no successor; "
            "start a new SingleAgentEpisode for the next env episode."
        )
    k = min(int(len_lookback_buffer), episode.actions.len_incl_lookback())

    def tail(buffer: InfiniteLookbackBuffer, num: int, lookback: int):
        total = buffer.len_incl_lookback()
        new = _copy(buffer, total - num, total, lookback, as_list=True)
        new.data = copy.deepcopy(new.data)
        return new

    from tfrl.env.single_agent_episode import SingleAgentEpisode

    return SingleAgentEpisode(
        episode.id_,
        observations=tail(episode.observations, k + 1, k),
        infos=tail(episode.infos, k + 1, k),
        actions=tail(episode.actions, k, k),
        rewards=tail(episode.rewards, k, k),
        extra_model_outputs={
            key: tail(b, k, k) for key, b in episode.extra_model_outputs.items()
        },
        t_started=episode.env_t,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
    )


def slice_episode(episode: "SingleAgentEpisode", slice_: slice) -> "SingleAgentEpisode":
    """See `SingleAgentEpisode.slice`."""
    if not isinstance(slice_, slice):
        raise TypeError(
            f"`slice_` must be a slice. Received: slice_={slice_!r}. Use e.g. slice(1, 3)."
        )
    start, stop, step = slice_.indices(len(episode))
    if step != 1:
        raise ValueError(
            f"Episode slices must be contiguous. Received: slice_={slice_!r} (step "
            f"{step}). Use a step of None or 1."
        )
    stop = max(start, stop)
    keep = episode.observations.lookback

    def part(buffer: InfiniteLookbackBuffer, num_extra: int):
        lookback = min(keep, buffer.lookback + start)
        first = buffer.lookback + start - lookback
        return _copy(buffer, first, buffer.lookback + stop + num_extra, lookback)

    reaches_end = stop == len(episode)
    from tfrl.env.single_agent_episode import SingleAgentEpisode

    return SingleAgentEpisode(
        episode.id_,
        observations=part(episode.observations, 1),
        infos=part(episode.infos, 1),
        actions=part(episode.actions, 0),
        rewards=part(episode.rewards, 0),
        extra_model_outputs={k: part(b, 0) for k, b in episode.extra_model_outputs.items()},
        terminated=episode.is_terminated and reaches_end,
        truncated=episode.is_truncated and reaches_end,
        t_started=episode.t_started + start,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
    )


def _items(buffer: InfiniteLookbackBuffer, start: int) -> list:
    """The in-episode items from index `start` on, as a fresh list."""
    data = buffer.get(slice(start, None))
    return unbatch(data) if buffer.finalized else list(data)


def concat_episode(episode: "SingleAgentEpisode", other: "SingleAgentEpisode") -> None:
    """See `SingleAgentEpisode.concat_episode`. Checks everything before mutating."""
    from tfrl.env.single_agent_episode import SingleAgentEpisode

    if not isinstance(other, SingleAgentEpisode):
        raise TypeError(
            f"concat_episode() needs a SingleAgentEpisode. Received: other of type "
            f"{type(other).__name__}."
        )
    if episode.is_done or episode.is_finalized:
        raise RuntimeError(
            "Cannot concatenate onto an episode that is done or finalized. Received: "
            f"episode id_={episode.id_!r} with is_terminated={episode.is_terminated}, "
            f"is_truncated={episode.is_truncated}, is_finalized={episode.is_finalized}. "
            "Only an ongoing, not finalized chunk can be continued."
        )

    def mismatch(what: str, received: str, expected: str) -> ValueError:
        return ValueError(
            f"concat_episode(): `other` does not continue this episode ({what}). "
            f"Received: {received}. Expected: {expected}. Concatenate the chunk that "
            "cut() produced from this episode (plus its new steps)."
        )

    if other.id_ != episode.id_:
        raise mismatch("id", f"other.id_={other.id_!r}", f"id_={episode.id_!r}")
    if other.t_started != episode.env_t:
        raise mismatch(
            "timestep", f"other.t_started={other.t_started}", f"self.env_t={episode.env_t}")
    if episode.observations.len_incl_lookback() == 0 or len(other.observations) == 0:
        raise mismatch(
            "boundary observation",
            f"{episode.observations.len_incl_lookback()} observations in self, "
            f"{len(other.observations)} in-episode observations in other",
            "both episodes to hold observations (call add_env_reset first)",
        )
    other.validate()
    if not structs_equal(episode.get_observations(-1), other.get_observations(0)):
        raise mismatch(
            "boundary observation", f"other's first observation {other.get_observations(0)!r}",
            f"self's last observation {episode.get_observations(-1)!r}")
    if not structs_equal(episode.get_infos(-1), other.get_infos(0)):
        raise mismatch(
            "boundary info", f"other's first info {other.get_infos(0)!r}",
            f"self's last info {episode.get_infos(-1)!r}")
    keys, other_keys = set(episode.extra_model_outputs), set(other.extra_model_outputs)
    if (len(other) and keys - other_keys) or (len(episode) and other_keys - keys):
        raise mismatch(
            "extra model output keys", f"other's keys {sorted(other_keys)}",
            f"self's keys {sorted(keys)}")

    # All checks passed: gather, then mutate.
    additions = [
        (episode.observations, _items(other.observations, 1)),
        (episode.infos, _items(other.infos, 1)),
        (episode.actions, _items(other.actions, 0)),
        (episode.rewards, _items(other.rewards, 0)),
    ]
    for key in other.extra_model_outputs:
        if key not in episode.extra_model_outputs:
            episode.extra_model_outputs[key] = InfiniteLookbackBuffer()
        items = _items(other.extra_model_outputs[key], 0)
        additions.append((episode.extra_model_outputs[key], items))
    for buffer, items in additions:
        buffer.data.extend(items)
    episode.is_terminated = other.is_terminated
    episode.is_truncated = other.is_truncated
    if episode.observation_space is None:
        episode.observation_space = other.observation_space
    if episode.action_space is None:
        episode.action_space = other.action_space
    episode._end_time = other._end_time  # pylint: disable=protected-access
    # pylint: disable=protected-access
    for key, values in other._temporary_timestep_data.items():
        episode._temporary_timestep_data.setdefault(key, []).extend(values)


def _numpy(buffer: InfiniteLookbackBuffer, indices: Indices = None) -> Any:
    data = buffer.get(indices)
    return data if buffer.finalized else to_numpy_batch(data, buffer.space)


def get_data_dict(episode: "SingleAgentEpisode") -> Dict[str, Any]:
    """See `SingleAgentEpisode.get_data_dict`."""
    n = len(episode)
    infos = np.empty(n, dtype=object)
    for i, info in enumerate(episode.infos.get(slice(0, n))):
        infos[i] = info
    terminateds = np.zeros(n, dtype=bool)
    truncateds = np.zeros(n, dtype=bool)
    if n:
        terminateds[-1] = episode.is_terminated
        truncateds[-1] = episode.is_truncated
    data = {
        Columns.EPS_ID: np.full(n, episode.id_),
        Columns.T: np.arange(episode.t_started, episode.t_started + n, dtype=np.int64),
        Columns.OBS: _numpy(episode.observations, slice(0, n)),
        Columns.NEXT_OBS: _numpy(episode.observations, slice(1, n + 1)),
        Columns.INFOS: infos,
        Columns.ACTIONS: _numpy(episode.actions),
        Columns.REWARDS: _numpy(episode.rewards),
        Columns.TERMINATEDS: terminateds,
        Columns.TRUNCATEDS: truncateds,
        Columns.DONES: terminateds | truncateds,
    }
    for key, buffer in episode.extra_model_outputs.items():
        data[key] = _numpy(buffer)
    return data


def get_state(episode: "SingleAgentEpisode") -> Dict[str, Any]:
    """See `SingleAgentEpisode.get_state`."""
    # pylint: disable=protected-access
    return {
        "id_": episode.id_,
        "agent_id": episode.agent_id,
        "module_id": episode.module_id,
        "multi_agent_episode_id": episode.multi_agent_episode_id,
        "observations": episode.observations.get_state(),
        "infos": episode.infos.get_state(),
        "actions": episode.actions.get_state(),
        "rewards": episode.rewards.get_state(),
        "extra_model_outputs": {
            k: b.get_state() for k, b in episode.extra_model_outputs.items()
        },
        "is_terminated": episode.is_terminated,
        "is_truncated": episode.is_truncated,
        "t_started": episode.t_started,
        "is_finalized": episode.is_finalized,
        "temporary_timestep_data": {
            k: list(v) for k, v in episode._temporary_timestep_data.items()
        },
        "start_time": episode._start_time,
        "end_time": episode._end_time,
    }


def from_state(state: Dict[str, Any]) -> "SingleAgentEpisode":
    """See `SingleAgentEpisode.from_state`."""
    from tfrl.env.single_agent_episode import SingleAgentEpisode

    buffer = InfiniteLookbackBuffer.from_state
    episode = SingleAgentEpisode(
        state["id_"],
        observations=buffer(state["observations"]),
        infos=buffer(state["infos"]),
        actions=buffer(state["actions"]),
        rewards=buffer(state["rewards"]),
        extra_model_outputs={k: buffer(s) for k, s in state["extra_model_outputs"].items()},
        terminated=state["is_terminated"],
        truncated=state["is_truncated"],
        t_started=state["t_started"],
        agent_id=state["agent_id"],
        module_id=state["module_id"],
        multi_agent_episode_id=state["multi_agent_episode_id"],
    )
    # pylint: disable=protected-access
    episode._is_finalized = state["is_finalized"]
    episode._can_step = False  # Re-check on the next add_env_step.
    episode._temporary_timestep_data = {
        k: list(v) for k, v in state["temporary_timestep_data"].items()
    }
    episode._start_time = state["start_time"]
    episode._end_time = state["end_time"]
    return episode
