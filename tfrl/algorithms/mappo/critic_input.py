"""The centralized critic's input, row-aligned with one agent's trajectory (numpy only).

Row `t` of an agent's batch is one env step (its `t` column: the env step of the
episode). The critic's input for that row is the agent's own observation, flattened,
followed by

- "all_obs": the observation each other agent of `order` had at the same env step
  (the row of its batch with the same `t`), or zeros of its size if it had none (it
  was not acting at that step, or had left the episode);
- "global_state": the env's global state at that step, read from the row's info
  (`"state"`: the state of the observation acted on; `"next_state"`: after the step).

`column` picks the observations: `obs` for the inputs of the rows' values, `new_obs`
for the bootstrap value after the trajectory's last step.

Example:
    >>> import numpy as np
    >>> own = {"obs": np.array([[1.0], [2.0]]), "t": np.array([0, 1])}
    >>> other = {"obs": np.array([[10.0, 11.0]]), "t": np.array([1])}
    >>> critic_input_rows(own, {"b": other}, ["b"], [2]).tolist()
    [[1.0, 0.0, 0.0], [2.0, 10.0, 11.0]]
"""

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import tree

from tfrl.core.columns import Columns

# The batch column holding the critic's input `[T, D]` (float32), added in postprocessing.
CRITIC_INPUT = "critic_input"
# Where an env's step infos carry the global state (before and after the step).
STATE_KEY, NEXT_STATE_KEY = "state", "next_state"


def flat_rows(values: Any) -> np.ndarray:
    """`[T, d]` float32: each row's (possibly nested) observation flattened."""
    parts = [np.asarray(v, np.float32) for v in tree.flatten(values)]
    return np.concatenate([p.reshape(len(p), -1) for p in parts], axis=1)


def rows_at(own_t: np.ndarray, batch: Mapping[str, Any], column: str, size: int
            ) -> np.ndarray:
    """`[len(own_t), size]`: `batch`'s flattened `column` at the env steps `own_t`
    (matched on its `t` column), zeros where it has no row."""
    out = np.zeros((len(own_t), size), np.float32)
    values = flat_rows(batch[column])
    if values.shape[1] != size:
        raise ValueError(
            f"MAPPO's critic input: another agent's {column!r} rows have {values.shape[1]} "
            f"values; expected {size} (from critic_obs_sizes). Check that critic_agents "
            "and critic_obs_sizes match the env's agents.")
    where = {int(t): i for i, t in enumerate(np.asarray(batch[Columns.T]))}
    for row, t in enumerate(np.asarray(own_t)):
        i = where.get(int(t))
        if i is not None:
            out[row] = values[i]
    return out


def critic_input_rows(batch: Mapping[str, Any], others: Mapping[Any, Mapping[str, Any]],
                      order: Sequence[Any], sizes: Sequence[int],
                      column: str = Columns.OBS) -> np.ndarray:
    """The "all_obs" critic input `[T, own + sum(sizes)]` of `batch`'s rows: the own
    `column` then, for each agent id of `order` (the others, without the agent itself),
    its `column` at the same env step from `others[agent_id]` (zeros if absent).

    Args:
        batch: The agent's trajectory (`column` and `t`).
        others: Agent id -> the other agents' batches of the same episode.
        order: The other agents' ids, in the order of their slots.
        sizes: The flat observation size of each agent of `order`.
        column: `obs` or `new_obs`.
    """
    own = flat_rows(batch[column])
    own_t = np.asarray(batch[Columns.T])
    parts = [own]
    for agent_id, size in zip(order, sizes):
        other = others.get(agent_id)
        parts.append(np.zeros((len(own), size), np.float32) if other is None
                     else rows_at(own_t, other, column, size))
    return np.concatenate(parts, axis=1)


def global_state_rows(batch: Mapping[str, Any], state_size: int,
                      key: str = STATE_KEY) -> np.ndarray:
    """The "global_state" critic input `[T, own + state_size]`: the own observation then
    the state in each row's info under `key` (`"state"` with `obs`, `"next_state"` with
    `new_obs`).

    Raises:
        ValueError: If a row's info has no `key` or a state of another size.
    """
    column = Columns.OBS if key == STATE_KEY else Columns.NEXT_OBS
    own = flat_rows(batch[column])
    infos = batch.get(Columns.INFOS)
    states = np.zeros((len(own), state_size), np.float32)
    for row in range(len(own)):
        info = infos[row] if infos is not None else None
        state: Optional[Any] = info.get(key) if isinstance(info, dict) else None
        if state is None:
            raise ValueError(
                f"MAPPO's critic input 'global_state' reads the global state from each "
                f"step's info under {key!r}; row {row} has info {info!r}. Give the env a "
                "state() method (MAPPO then adds it to the infos) or put 'state' and "
                "'next_state' in the infos, or set critic_input='all_obs'.")
        state = np.asarray(state, np.float32).reshape(-1)
        if state.size != state_size:
            raise ValueError(
                f"MAPPO's critic input: the global state in row {row}'s info has "
                f"{state.size} values; expected {state_size} (critic_state_size).")
        states[row] = state
    return np.concatenate([own, states], axis=1)
