"""The data that flows between a vector env and its BaseEnv, and the poll dicts.

`_Transitions` is what a vector env reports for one poll (per-sub-env lists or
gymnasium's batched arrays); `VectorPoll` is the batched `poll_arrays()` result;
`single_agent_poll_dicts` builds `poll()`'s two-level dicts.
"""

from typing import Any, List, NamedTuple, Optional, Sequence

import gymnasium as gym
import numpy as np

from tfrl.env.base_env_interface import _DUMMY_AGENT_ID

# Spaces whose items are plain numpy arrays (or scalars): batch with np.asarray.
SIMPLE_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


class _Transitions(NamedTuple):
    """What one poll of a vector env produced, for the sub-envs in `env_ids`.

    `obs`, `rewards`, `terminateds`, `truncateds` are either per-sub-env lists aligned
    with `env_ids` (`batched=False`) or batched numpy data over all sub-envs
    (`batched=True`, then `env_ids == range(num_envs)`). `first` holds the positions
    of reset observations (their reward slot holds 0.0), `done` (if known) the
    positions whose episode ended.
    """

    env_ids: Sequence[int]
    obs: Any
    rewards: Any
    terminateds: Any
    truncateds: Any
    infos: Optional[List[dict]]  # None: all empty
    first: Sequence[int]
    batched: bool
    done: Optional[List[int]] = None


_NO_TRANSITIONS = _Transitions((), [], [], [], [], [], (), False)


class VectorPoll(NamedTuple):
    """`poll_arrays()` result: one row per reported sub-env.

    Attributes:
        env_ids: int64 `[B]` sub-env indices, ascending.
        obs: `[B, ...]` observations (a dict/tuple of arrays for composite spaces).
        rewards: float `[B]`; 0.0 where `is_first`.
        terminateds: bool `[B]`.
        truncateds: bool `[B]`.
        is_first: bool `[B]`: the row is a reset observation (reward None in `poll()`).
        infos: B info dicts.
    """

    env_ids: np.ndarray
    obs: Any
    rewards: np.ndarray
    terminateds: np.ndarray
    truncateds: np.ndarray
    is_first: np.ndarray
    infos: List[dict]


def single_agent_poll_dicts(ids: Sequence[int], obs: Any, rewards: Any, terms: Any, truncs: Any,
                            infos: Optional[List[dict]]) -> tuple:
    """The poll() tuple of single-agent sub-envs from per-sub-env sequences."""
    agent = _DUMMY_AGENT_ID
    obs_d, rewards_d, terms_d, truncs_d, infos_d = {}, {}, {}, {}, {}
    for i, o, r, t, u in zip(ids, obs, rewards, terms, truncs):
        obs_d[i] = {agent: o}
        rewards_d[i] = {agent: r}
        terms_d[i] = {agent: t, "__all__": t}
        truncs_d[i] = {agent: u, "__all__": u}
        infos_d[i] = {agent: {}}
    if infos is not None:
        for i, info in zip(ids, infos):
            infos_d[i][agent] = info
    return obs_d, rewards_d, terms_d, truncs_d, infos_d, {}


def _leading_size(batch: Any) -> int:
    """Size of axis 0 of an array, or of the first leaf of a dict/tuple of arrays."""
    while isinstance(batch, (dict, tuple)):
        batch = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return len(batch)
